// SPDX-License-Identifier: MIT
#pragma once
// FaultsView: the fault drills of a set of runs and how each recovered — the compare
// view's "Faults" tab. On top, the recovery table of the reports (core's recoveryTable()
// over runFaults(): one row per recovery mode × workers × fault index, mean ± std over
// the runs) with its note; below, one row per fault of every run: when and what, when
// the node was restarted, detection, downtime, the version before and after (updates
// lost), the gradients of the outage (computed / dropped / discarded), the accuracy
// before and lowest after, the time back to the pre-fault accuracy, the change of accuracy
// at resume (the stateless jump > 0, a checkpoint's setback < 0), the CPU it cost and
// what recovery did. Runs without drills are not listed.
//
// Threading: GUI thread only. setRuns() copies what it shows; the runs need not outlive it.

#include "ui/charts/run_data.h"

#include <QWidget>

#include <vector>

class QLabel;
class QTableWidget;

namespace dasp::ui {

class FaultsView : public QWidget {
  Q_OBJECT

 public:
  enum Column {
    Run, Recovery, Fault, AtS, RestartS, DetectionS, DowntimeS, Versions, UpdatesLost, Gradients,
    Accuracy, BackS, ChangeAtResume, CpuS, Detail, ColumnCount
  };

  explicit FaultsView(QWidget* parent = nullptr);

  void setRuns(const std::vector<RunData>& runs);
  // Faults listed (rows of faultTable()).
  int faultCount() const;

  QTableWidget* recoveryTable() const { return m_recovery; }
  QTableWidget* faultTable() const { return m_faults; }
  QLabel* noteLabel() const { return m_note; }

 private:
  QTableWidget* m_recovery = nullptr;
  QTableWidget* m_faults = nullptr;
  QLabel* m_note = nullptr;
  QLabel* m_empty = nullptr;
};

}  // namespace dasp::ui
