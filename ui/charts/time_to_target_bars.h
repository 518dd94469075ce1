// SPDX-License-Identifier: MIT
#pragma once
// TimeToTargetBars: the result at a glance — one bar per group of runs (a strategy, or any
// spec field's value: ui/charts/run_groups.h) at the mean time to target of the runs that
// reached it, ± one sample standard deviation as an error bar, each run as a dot; the
// homogeneous-equivalent reference (runs with spec.reference_of, as the results tables
// compute the heterogeneity cost) as a dashed line instead of a bar; a marked time (the
// measured run's, beside its prediction) as a solid tick and diamond across one bar; under each bar how
// many of its runs reached the target, diverged (✕) or never reached it. A group none of
// whose runs reached the target is a hatched grey bar. Lower is better. Each bar has its
// curves' colour (ui/charts/series_colors.h); labels too wide for their slot are drawn
// slanted, whole, with the margin under the plot grown to hold them.
//
// Threading: GUI thread only. timeToTargetBars() is a plain computation (any thread).

#include "ui/charts/report.h"
#include "ui/charts/run_data.h"

#include <QColor>
#include <QMargins>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QWidget>

class QPainter;

#include <optional>
#include <vector>

namespace dasp::ui {

struct TargetBar {
  QString label;
  QColor color;  // the colour of its curve in the convergence chart
  int runs = 0;
  std::vector<double> times;   // seconds, of the runs that reached the target, in run order
  std::optional<double> mean;  // of `times`
  std::optional<double> sd;    // their sample standard deviation (two or more)
  int diverged = 0;            // runs that diverged before reaching the target
  int notReached = 0;          // the other runs without a time to target

  // Counts one run: its time to target, else a divergence, else a miss.
  void count(std::optional<double> timeToTarget, bool divergedRun);
  // Sets mean (and, from two times, sd) from `times`, once every run is counted.
  void settle();
};

struct TargetBars {
  std::vector<TargetBar> bars;  // in the groups' first-seen order
  // The mean time to target of the reference runs (none among the runs, or none reached).
  std::optional<double> reference;
  int referenceRuns = 0;
  QString target;  // "0.85", "0.8–0.85" when the runs' targets differ, "" when none has one
  // A time marked across one bar's slot, with its text (a prediction's dialog marks the
  // measured run's own time at its strategy's bar): none when unset or no bar has the label.
  std::optional<double> marked;
  QString markedBar, markedText;
};

// Bars of `figs` (runFigures(runs), one per run) grouped by `labels` (one per run).
// Reference runs (RunData::referenceOf set) make the reference line, not a bar.
// `curvesGrouped`: whether the convergence chart beside draws a curve per group of
// `labels` (a bar then takes its group's colour) or a curve per run (its first run's).
TargetBars timeToTargetBars(const std::vector<RunData>& runs, const std::vector<RunFigures>& figs,
                            const QStringList& labels, bool curvesGrouped = true);

class TimeToTargetBars : public QWidget {
  Q_OBJECT

 public:
  explicit TimeToTargetBars(QWidget* parent = nullptr);
  ~TimeToTargetBars() override;

  void setBars(TargetBars bars);
  const TargetBars& bars() const { return m_bars; }

  // Where bar `i` is drawn at the widget's current size: the bar, and the error bar's
  // ends (y pixels; equal to the bar's top without a spread). Empty rect: no such bar.
  struct BarShape {
    QRectF bar;
    double errorTop = 0, errorBottom = 0;
  };
  BarShape barShape(int i) const;
  // The seconds a y pixel stands for (the value axis).
  double secondsAt(double y) const;
  double yOf(double seconds) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QRectF plotRect() const;
  double axisMax() const;
  QString underBar(const TargetBar& bar) const;     // the runs reached, diverged, never
  QString slantedText(const TargetBar& bar) const;  // its label and runs, slanted
  bool slanted() const;                             // labels too wide for their slots
  QMargins margins() const;                         // around the plot
  void paintMark(QPainter& painter) const;          // m_bars.marked, at its bar

  TargetBars m_bars;
};

}  // namespace dasp::ui
