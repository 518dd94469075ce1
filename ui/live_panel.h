// SPDX-License-Identifier: MIT
#pragma once
// LivePanel: the live view of the run in progress — one row per node (state, parallel
// state, iterations, mean wait, mean staleness, last training loss), the current model
// version and accuracy, and the live actions on the selected node (slow ×k, restore,
// pause, resume, kill) and on the server (kill). The charts (ui/charts/) go into
// chartArea(), below the table.
//
// It draws a RunData owned by the main window, which a LiveRunFeed fills on the drain
// timer; refresh() is called after each drain and only reads what is new since the last
// call (the per-node means are kept as running sums), so its cost does not grow with the
// length of the run. The actions go to the RunController, which hands them to the runner.
//
// Threading: GUI thread only.

#include <QString>
#include <QWidget>

#include <cstdint>
#include <map>
#include <vector>

class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace dasp::ui {

class RunController;
struct RunData;

class LivePanel : public QWidget {
  Q_OBJECT

 public:
  enum Column { Node, State, Parallel, Iterations, MeanWait, MeanStaleness, LastLoss, ColumnCount };

  explicit LivePanel(RunController* controller, QWidget* parent = nullptr);

  // The run to show (not owned; may be null). Call refresh() after it changes.
  void setRun(const RunData* run);
  const RunData* run() const { return m_data; }
  // Enables the live actions while a run goes.
  void setRunning(bool running);
  bool isRunning() const { return m_running; }

  // Where the chart widgets go, below the node table.
  QVBoxLayout* chartArea() const { return m_chartArea; }
  QTableWidget* nodeTable() const { return m_table; }
  QLabel* summaryLabel() const { return m_summary; }
  // The node of the selected row ("" when none).
  QString selectedNode() const;
  // The factor of "Slow ×k".
  double slowFactor() const;

 public Q_SLOTS:
  // Re-reads the RunData (what is new since the last call), then emits refreshed().
  void refresh();

 Q_SIGNALS:
  // After each refresh: charts in the chart area redraw on it.
  void refreshed();

 private:
  // Running sums per node, so refresh() only reads new points.
  struct NodeStats {
    std::size_t waitSeen = 0, stalenessSeen = 0;
    double waitSum = 0, stalenessSum = 0;
    bool down = false;
  };
  void resetStats();
  void updateActions();
  void setCell(int row, int column, const QString& text);

  RunController* m_controller;
  const RunData* m_data = nullptr;
  bool m_running = false;
  std::int64_t m_shownRunId = -1;
  std::map<QString, NodeStats> m_stats;
  std::size_t m_eventsSeen = 0;

  QLabel* m_summary = nullptr;
  QTableWidget* m_table = nullptr;
  QDoubleSpinBox* m_factor = nullptr;
  std::vector<QPushButton*> m_nodeButtons;
  QPushButton* m_killServer = nullptr;
  QVBoxLayout* m_chartArea = nullptr;
};

}  // namespace dasp::ui
