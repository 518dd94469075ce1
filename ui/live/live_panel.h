// SPDX-License-Identifier: MIT
#pragma once
// LivePanel: the live view of the run in progress — one row per node (state, parallel
// state, iterations, mean wait, mean staleness, refused pushes, straggler score — the
// per-node bars' figure over their window, the straggler in red — and last training
// loss), the current model
// version and accuracy, the run's events (node, control, fault, recovery, exit: a list
// beside the table) and the live actions on the selected node (slow ×k, restore — workers
// only —, pause, resume, kill, restart a killed node) and on the server (kill). The charts
// (LiveCharts: node lanes, convergence, per-node bars, staleness histogram) sit in
// chartArea(), below the table, and redraw on refreshed().
//
// A distributed run's table ends with the parameter server — one row per replica
// ("server-0" … head first) in chain mode — and the evaluator. Their state comes from the
// events' kinds and codes, through core's NodeStatusTracker (core/events/node_status.h): UP,
// DOWN (killed, exited, left the chain), PAUSED, RESTARTING (restarted, until the server
// says it restored / adopted / started fresh, or a worker rejoined), PROMOTED (a chain
// replica that became the head); the parallel column holds a replica's role (head /
// replica / tail) and the state cell's tooltip the last news of the node. A server row's
// iterations are the model version, the evaluator's its evaluations.
//
// A finished run can be replayed (showReplay): the actions are off, a time slider moves a
// cursor over every chart, and the table shows each node at the cursor time (its state,
// and its figures over [0, t]). showLive() returns to the live run.
//
// A simulated run (engine "sim") shows the same table and charts, in virtual seconds (the
// summary and the time axis say so); the live actions are off for it: there is no node
// process to slow, pause or kill (the RunController refuses them too).
//
// It draws a RunData owned by the main window, which a LiveRunFeed fills on the drain
// timer; refresh() is called after each drain and only reads what is new since the last
// call (the per-node means are kept as running sums), so its cost does not grow with the
// length of the run. The actions go to the RunController, which hands them to the runner.
//
// Threading: GUI thread only.

#include "core/events/node_status.h"

#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

class QDoubleSpinBox;
class QLabel;
class QResizeEvent;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace dasp::ui {

class LiveCharts;
class RunController;
struct Event;
struct NodeData;
struct RunData;

class LivePanel : public QWidget {
  Q_OBJECT

 public:
  enum Column {
    Node, State, Parallel, Iterations, Batch, SamplesPerS, MeanWait, MeanStaleness, Refused, Score, LastLoss, ColumnCount
  };
  // Rows the node table shows without scrolling: 16 workers, the server, the evaluator.
  static constexpr int kVisibleRows = 18;
  static constexpr int kMinRows = 3;

  explicit LivePanel(RunController* controller, QWidget* parent = nullptr);

  // The run to show (not owned; may be null), keeping the mode. Call refresh() after it
  // changes.
  void setRun(const RunData* run);
  const RunData* run() const { return m_data; }
  // Live mode: `run` grows; the lanes follow its end. Refreshes.
  void showLive(const RunData* run);
  // Replay mode: a finished run, the cursor at its end. Refreshes.
  void showReplay(const RunData* run);
  bool isReplay() const { return m_replay; }
  // Enables the live actions while a run goes (never while replaying).
  void setRunning(bool running);
  bool isRunning() const { return m_running; }
  LiveCharts* charts() const { return m_charts; }

  // Where the chart widgets go, below the node table.
  QVBoxLayout* chartArea() const { return m_chartArea; }
  QTableWidget* nodeTable() const { return m_table; }
  QLabel* summaryLabel() const { return m_summary; }
  // The banner over the panel: shown while the run on display has diverged.
  QLabel* divergenceBanner() const { return m_divergenceBanner; }
  QTableWidget* eventTable() const { return m_events; }
  // The node of the selected row ("" when none).
  QString selectedNode() const;
  // The server and evaluator rows of the run shown ("server" or "server-0".., "evaluator").
  const QStringList& serviceNodes() const { return m_services; }
  // The factor of "Slow ×k".
  double slowFactor() const;

 public Q_SLOTS:
  // Re-reads the RunData (what is new since the last call), then emits refreshed().
  void refresh();

 Q_SIGNALS:
  // After each refresh: charts in the chart area redraw on it.
  void refreshed();

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // Running sums per node, so refresh() only reads new points.
  struct NodeStats {
    std::size_t waitSeen = 0, stalenessSeen = 0;
    double waitSum = 0, stalenessSum = 0;
  };
  static constexpr double kNoScore = std::numeric_limits<double>::quiet_NaN();
  // One row of the table.
  struct RowFigures {
    QString state, parallel;
    QString stateTip;  // the last news of the node (the state cell's tooltip)
    std::int64_t iterations = 0;
    double meanWait = 0, meanStaleness = 0, lastLoss = 0;  // NaN: none
    std::int64_t refused = -1;  // pushes the server refused (-1: not a worker)
    // The straggler score and its two parts (NaN: none, e.g. a server row).
    double score = kNoScore, relativeScore = kNoScore, individualScore = kNoScore;
    bool straggler = false;
    // From the bars too: its batch and share ("48 (19%)"), its samples a second.
    QString batch;
    double samplesPerS = kNoScore;
  };
  void resetStats();
  void updateActions();
  // Sizes the node table to its rows (at most kVisibleRows).
  void fitTable();
  // Whether the run shown (or the plan going) is simulated.
  bool showsSimRun() const;
  // "wall time" or "virtual time" on the convergence chart's x axis choice.
  void updateTimeWording(const RunData& run);
  // The server/evaluator rows and their first state, from the run's spec.
  void setupServices(const RunData& run);
  NodeStatusTracker initialStatus() const;
  // Every event with t <= until applied in time order (the runner's events merged from the
  // store arrive after the server's of the same moment).
  NodeStatusTracker statusAt(const RunData& run, double until) const;
  void refreshEventList(const RunData& run);
  RowFigures serviceFigures(const QString& node, const NodeStatus& status, const RunData& run) const;
  void setCell(int row, int column, const QString& text, const QString& tip = QString());
  void setRow(int row, const QString& node, const RowFigures& f);
  RowFigures liveFigures(const NodeData& n);
  // The node at run time t (replay): the state of the interval covering t, figures over [0, t].
  static RowFigures figuresAt(const NodeData& n, const RunData& run, double t);

  RunController* m_controller;
  const RunData* m_data = nullptr;
  bool m_running = false;
  bool m_replay = false;
  double m_cursor = 0;  // replay: the cursor's run time
  std::int64_t m_shownRunId = -1;
  std::map<QString, NodeStats> m_stats;
  std::size_t m_eventsSeen = 0;
  NodeStatusTracker m_status;        // live: every event applied so far
  double m_appliedT = 0;             // live: the latest event time applied
  NodeStatusTracker m_replayStatus;  // replay: the events up to the cursor
  QStringList m_services;     // server row(s), then "evaluator"; empty for a single-node run
  bool m_chain = false;
  bool m_servicesKnown = false;  // the spec was read (it may arrive after the run id)
  std::size_t m_eventRows = 0;   // events of the run looked at for the event list
  std::vector<double> m_eventRowTimes;  // per row of the event list, for replay

  QLabel* m_summary = nullptr;
  QLabel* m_divergenceBanner = nullptr;
  QTableWidget* m_table = nullptr;
  QDoubleSpinBox* m_factor = nullptr;
  QTableWidget* m_events = nullptr;
  std::vector<QPushButton*> m_nodeButtons;    // pause, resume, kill: any node
  std::vector<QPushButton*> m_workerButtons;  // slow, restore: workers only
  QPushButton* m_restart = nullptr;
  QPushButton* m_killServer = nullptr;
  QVBoxLayout* m_chartArea = nullptr;
  LiveCharts* m_charts = nullptr;
};

}  // namespace dasp::ui
