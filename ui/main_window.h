// SPDX-License-Identifier: MIT
#pragma once
// MainWindow: the workbench's top-level window. Dock widgets, whose layout and the
// window's geometry are saved and restored between launches (QSettings "dasp"/"workbench"):
// - Designer (left): the experiment form (SpecDesigner);
// - Runs (left, under the designer, 8 rows by default): the run store's runs (RunsPanel);
// - Log (tabbed with Runs): the runner's progress lines and the live actions;
// - Live (right, the column's whole height): the run in progress (LivePanel) — node
//   table, live actions, charts;
// - Compare (right, tabbed with Live): the runs chosen with Runs → Compare Selected
//   (ComparePanel): overlaid curves and the summary table.
// Shortcuts: Launch Ctrl+R, Stop Ctrl+., Export Report Ctrl+E, Filter Runs Ctrl+F (the
// menus show them, the toolbar's tooltips too); Help → Getting Started (F1).
// Runs → Open in Live View replays a finished run in the live view (a time slider scrubs
// every chart); "Show Live Run" there goes back to the run in progress. File → Export
// Report writes the compared runs (else the runs selected in the runs view) as an HTML or
// PDF report, a CSV of every series, or a Chrome trace of the node timelines; a failed
// export shows its error and leaves no partial file.
// Launch (toolbar and Experiment menu) validates the designer's spec with the CLI's
// messages, expands a suite like `dasp run`, and hands the plan to the RunController,
// which runs it on a background thread with the CLI's runner; Stop cancels it. Live events
// arrive through a LiveRunFeed that a 150 ms timer drains into the RunData the live panel
// draws — one repaint per tick, never a signal per event. The runner's own events (fault
// drills, live actions, exits, chain changes), which it writes to the store only, are
// merged from the store once a second while a run goes, and at its end the run's fault
// drills with their recovery metrics; the server's recovery messages also go to the log.
// Closing the window mid-run stops the run (every node shut down, the run marked
// `stopped`) before the window goes.
//
// A simulated run (engine "sim") runs in a `dasp run` child and has no live event stream:
// from its "run started" on, the window reads the whole run from the store on a worker
// thread (its own connection; about once a second, less often when a read takes long) and
// swaps it in as the live data on the next drain; its times are virtual seconds.
//
// A store that cannot be opened (not SQLite, a newer schema, locked) never stops the
// window: the runs panel shows the error in a banner and retries on its 2 s reload, and
// Launch refuses with the message.
//
// Threading: GUI thread only. The runner runs on the RunController's thread.

#include "core/common/result.h"
#include "ui/charts/report.h"
#include "ui/live/live_run_feed.h"
#include "ui/charts/run_data.h"

#include <QElapsedTimer>
#include <QMainWindow>
#include <QString>

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

class QAction;
class QCloseEvent;
class QShowEvent;
class QDockWidget;
class QFileDialog;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace dasp::ui {

class ComparePanel;
class GettingStarted;
class LivePanel;
class PredictDialog;
class RunController;
class RunTableModel;
class RunsPanel;
class SpecDesigner;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const QString& storePath, QWidget* parent = nullptr);
  ~MainWindow() override;

  // For tests and the later views.
  RunTableModel* runModel() const;
  QSortFilterProxyModel* proxyModel() const;
  QTableView* runTable() const;
  QString storePath() const;
  // The last error shown about the store ("" after a successful reload).
  QString lastError() const;

  SpecDesigner* designer() const { return m_designer; }
  LivePanel* livePanel() const { return m_live; }
  RunsPanel* runsPanel() const { return m_runs; }
  RunController* controller() const { return m_controller.get(); }
  // The run the live panel draws (filled from the live feed).
  const RunData& liveData() const { return m_liveData; }
  QAction* launchAction() const { return m_launchAction; }
  QAction* stopAction() const { return m_stopAction; }
  QAction* exportReportAction() const { return m_exportAction; }
  QAction* filterAction() const { return m_filterAction; }
  // The log view's text.
  QString logText() const;
  ComparePanel* comparePanel() const { return m_compare; }
  // The run replayed in the live view (empty before the first replay).
  const RunData& replayData() const { return m_replayData; }
  // File → Export Report → format.
  QAction* exportAction(ReportFormat format) const { return m_exportActions[static_cast<int>(format)]; }
  // Whether the file choosers may be the platform's own (tests turn them off to drive
  // Qt's dialog).
  void setUseNativeDialogs(bool native) { m_nativeDialogs = native; }

 public Q_SLOTS:
  // Re-reads the run list (or retries opening the store); shows any error.
  void reload();
  // Closes the current store and opens `path` (created when missing).
  void openStore(const QString& path);
  // Validates the designer's spec and starts it (a suite: every entry × seed in turn).
  // Returns false, with the reason in the designer's message line, when refused.
  bool launch();
  // Stops the run in progress (and the rest of a suite).
  void stop();
  // Loads a run from the store and replays it in the live view. False (the reason in the
  // status bar and a message box) when it cannot be read.
  bool openInLiveView(qint64 runId);
  // Back to the run in progress (or the last one) in the live view.
  void showLiveRun();
  // Loads the runs into the compare view (those that cannot be read are named there).
  // Returns the number loaded.
  int compareRuns(const QList<qint64>& runIds);
  // Runs → Predict Other Strategies on This Cluster…: a non-modal prediction from the run
  // (its "Launch … for Real" goes through the designer and launch(), its "Compare" to
  // compareRuns()).
  PredictDialog* predictFrom(qint64 runId);
  // Every run in the open store, oldest first, as the Runs dock lists them (none without a
  // store).
  QList<qint64> storedRunIds() const;
  // Writes the runs to export (compared, else selected) to `path` in `format`.
  Status exportReport(ReportFormat format, const QString& path);
  // Opens a (non-modal) file chooser; the chosen file gets exportReport(). Null when there
  // is nothing to export (the reason in the status bar).
  QFileDialog* chooseExportFile(ReportFormat format);
  // Help → Getting Started (non-modal; one page, raised when shown again).
  GettingStarted* showGettingStarted();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void createDocks();
  void createActions();
  void createMenus();
  // File → Export Report's formats (main_window_export.cpp).
  void createExportMenu(QMenu* file);
  void updateRunActions();
  void appendLog(const QString& line);
  void drainLive();
  // Merges the runner's events of the live run from the store; true when any was new.
  bool mergeRunnerEvents();
  // Writes the live run's new recovery and fault events to the log.
  void logRecoveryEvents();
  // The runs selected in the runs view, read from the store; empty with `error` set when
  // none is selected or one cannot be read.
  std::vector<RunData> loadSelectedRuns(QString* error) const;
  void showError(const QString& title, const QString& message);
  void openRunSpec(qint64 runId, const QString& specJson);
  void onRunFinished(qint64 runId, const QString& status, const QString& error);
  // A sim run was created: the live data follows it from the store from now on.
  void followSimRun(qint64 runId);
  // Starts reading the live sim run from the store on a worker thread.
  void startSimLoad();
  // Takes a finished read (waiting for it when `wait`) into the live data; true when the
  // live data changed.
  bool takeSimLoad(bool wait);
  // Drops a read in flight (waits for it: it holds no pointer into the window).
  void dropSimLoad();
  void announce(const QString& title, const QString& message);
  void chooseStore();
  void showAbout();
  void restoreSettings();
  void saveSettings() const;

  // Declared before the controller: the controller's thread pushes into the feed until
  // the controller (destroyed first) has joined it.
  LiveRunFeed m_feed;
  RunData m_liveData;
  RunData m_replayData;  // the run the live view replays (not the live one)
  std::unique_ptr<RunController> m_controller;

  SpecDesigner* m_designer = nullptr;
  LivePanel* m_live = nullptr;
  RunsPanel* m_runs = nullptr;
  ComparePanel* m_compare = nullptr;
  QPlainTextEdit* m_log = nullptr;
  QDockWidget* m_compareDock = nullptr;
  QDockWidget* m_designerDock = nullptr;
  QDockWidget* m_liveDock = nullptr;
  QDockWidget* m_runsDock = nullptr;
  QDockWidget* m_logDock = nullptr;
  QLabel* m_countLabel = nullptr;
  QTimer* m_drainTimer = nullptr;
  QElapsedTimer m_storePoll;            // since the store's events were last merged
  int m_storePollMs = 1000;             // 1 s, longer when reading the events takes long
  std::int64_t m_loggedRunId = 0;       // the live run whose events are being logged
  std::size_t m_loggedEvents = 0;       // its events looked at for the log
  bool m_liveIsSim = false;             // the live run is simulated: read from the store
  std::future<Result<RunData>> m_simLoad;  // a read of it in flight (worker thread)

  QAction* m_launchAction = nullptr;
  QAction* m_stopAction = nullptr;
  QAction* m_openStoreAction = nullptr;
  QAction* m_openExperimentAction = nullptr;
  QAction* m_exportAction = nullptr;
  QAction* m_filterAction = nullptr;
  GettingStarted* m_gettingStarted = nullptr;
  QAction* m_statusBarAction = nullptr;
  QAction* m_exportActions[4] = {};  // by ReportFormat
  bool m_nativeDialogs = true;
  bool m_needsDefaultLayout = true;  // no saved dock layout: size the docks at the first show
};

}  // namespace dasp::ui
