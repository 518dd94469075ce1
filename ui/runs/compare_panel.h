// SPDX-License-Identifier: MIT
#pragma once
// ComparePanel: the compare view — the runs chosen in the runs view ("Compare Selected")
// overlaid in one ConvergenceChart, with the x axis (wall time, updates, samples), the
// metric (test accuracy or loss), EMA smoothing (the raw trace stays faint behind the
// smoothed one), "group by" the strategy or any spec field that differs between the runs
// (mean ± std band per group), the y axis fitted or full, log y and a zoom reset as
// controls; beside it the time to target per group (TimeToTargetBars: mean ± std, the
// homogeneous-equivalent reference as a line, diverged and never-reached runs marked); and
// a summary table per run: time to target, speedup vs BSP, final accuracy, mean wait,
// mean and max staleness, updates, dropped and lost updates (runFigures(), the figures of
// the reports). The target accuracy is the spec's, unless the spin box sets another; the
// times to target, the speedups and the bars then come from the runs' evaluations. A second tab,
// "Faults", holds the runs' fault drills and their recovery metrics (FaultsView); the
// chart shades each drill from the fault to the restart. A third, "Sweep", holds the grid
// points of runs that form a parameter sweep and their parallel coordinates (SweepView).
//
// The panel owns copies of the runs' data (loaded by the caller with loadRunData), so it
// stays valid while the store changes; the export menu writes the same runs.
//
// Threading: GUI thread only.

#include "ui/charts/report.h"
#include "ui/charts/run_data.h"

#include <QString>
#include <QWidget>

#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QTabWidget;
class QTableWidget;

namespace dasp::ui {

class ConvergenceChart;
class FaultsView;
class SweepView;
class TimeToTargetBars;

class ComparePanel : public QWidget {
  Q_OBJECT

 public:
  enum Column {
    Run, Name, Strategy, Seed, Status, Target, TimeToTarget, Speedup, HeterogeneityCost, FinalAccuracy, MeanWait,
    MeanStaleness, MaxStaleness, Updates, Dropped, Lost, ColumnCount
  };

  explicit ComparePanel(QWidget* parent = nullptr);
  ~ComparePanel() override;

  // The runs to compare (replaces the previous ones; empty clears the view).
  void setRuns(std::vector<RunData> runs);
  const std::vector<RunData>& runs() const { return m_runs; }
  // A line under the controls (e.g. runs that could not be loaded); "" hides it.
  void setMessage(const QString& text, bool isError);
  QString message() const;

  // The summary table's figures, with the target override applied.
  std::vector<RunFigures> figures() const;
  // 0 when the spec's target is used.
  double targetOverride() const;

  ConvergenceChart* chart() const { return m_chart; }
  QTableWidget* summaryTable() const { return m_table; }
  FaultsView* faultsView() const { return m_faults; }
  SweepView* sweepView() const { return m_sweep; }
  QTabWidget* tabs() const { return m_tabs; }
  QComboBox* xAxisCombo() const { return m_xAxis; }
  QComboBox* metricCombo() const { return m_metric; }
  QSlider* smoothingSlider() const { return m_smoothing; }
  QCheckBox* groupCheck() const { return m_group; }
  // "strategy" or a spec path (run_groups.h): the curves' groups and the bars'.
  QComboBox* groupKeyCombo() const { return m_groupKey; }
  QString groupKey() const;  // the combo's choice
  QCheckBox* fitYCheck() const { return m_fitY; }
  QCheckBox* logYCheck() const { return m_logY; }
  TimeToTargetBars* targetBars() const { return m_bars; }
  QDoubleSpinBox* targetSpin() const { return m_target; }

 private:
  void updateTable();
  void updateGroups();  // the curves' labels and grouping
  void updateBars(const std::vector<RunFigures>& figs);  // the time-to-target bars of the groups
  void updateTargetLine();
  void updateSmoothingLabel();

  std::vector<RunData> m_runs;
  ConvergenceChart* m_chart = nullptr;
  QTableWidget* m_table = nullptr;
  QTabWidget* m_tabs = nullptr;
  FaultsView* m_faults = nullptr;
  SweepView* m_sweep = nullptr;
  QComboBox* m_xAxis = nullptr;
  QComboBox* m_metric = nullptr;
  QSlider* m_smoothing = nullptr;
  QLabel* m_smoothingLabel = nullptr;
  QCheckBox* m_group = nullptr;
  QComboBox* m_groupKey = nullptr;
  QCheckBox* m_fitY = nullptr;
  QCheckBox* m_logY = nullptr;
  TimeToTargetBars* m_bars = nullptr;
  QDoubleSpinBox* m_target = nullptr;
  QLabel* m_message = nullptr;
  QLabel* m_empty = nullptr;
};

}  // namespace dasp::ui
