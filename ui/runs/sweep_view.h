// SPDX-License-Identifier: MIT
#pragma once
// SweepView: the compare view's "Sweep" tab. For runs that form a parameter sweep (some
// spec field other than the strategy differs: `dasp run --grid`, or any runs chosen
// together), a table of the grid points — one row per combination of swept values and
// strategy, with its runs, how many reached the target and the mean ± std time to target —
// above their parallel-coordinates view (SweepParallelChart). Choosing a row highlights
// its line. Runs that are not a sweep get a line saying so.
//
// Threading: GUI thread only.

#include "ui/charts/run_data.h"

#include <QWidget>

#include <vector>

class QLabel;
class QTableWidget;

namespace dasp::ui {

class SweepParallelChart;

class SweepView : public QWidget {
  Q_OBJECT

 public:
  explicit SweepView(QWidget* parent = nullptr);

  // The runs to show (the compare view's); replaces the previous ones.
  void setRuns(const std::vector<RunData>& runs);
  // The number of grid points shown (0: not a sweep).
  int gridPoints() const;

  QTableWidget* table() const { return m_table; }
  SweepParallelChart* chart() const { return m_chart; }

 private:
  QLabel* m_note = nullptr;
  QTableWidget* m_table = nullptr;
  SweepParallelChart* m_chart = nullptr;
};

}  // namespace dasp::ui
