// SPDX-License-Identifier: MIT
#include "ui/main_window.h"

#include "core/common/build_info.h"
#include "core/store/run_store.h"
#include "ui/charts/convergence_chart.h"
#include "ui/runs/compare_panel.h"
#include "ui/runs/predict_dialog.h"
#include "ui/live/live_charts.h"
#include "ui/live/live_panel.h"
#include "ui/live/run_controller.h"
#include "ui/runs/run_table_model.h"
#include "ui/runs/runs_panel.h"
#include "ui/designer/spec_designer.h"
#include "ui/help/getting_started.h"

#include "resources/resources.h"

#include <QAction>
#include <QIcon>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QShowEvent>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>

#include <algorithm>
#include <chrono>
#include <string>

namespace dasp::ui {

namespace {

constexpr int kDrainIntervalMs = 150;  // live data reaches the views at ~6.7 Hz
constexpr int kStorePollMs = 1000;     // the runner's events are merged from the store at 1 Hz,
constexpr int kStorePollShare = 20;    // or less often: reading them takes at most 1/20 of the time
// Dock layout of saveState(); 1: no Compare dock, runs at the bottom; 2: runs under the
// live view.
constexpr int kLayoutVersion = 3;
// The runs table's header layout; ".v2": the Engine column (an older layout has one
// column less and is not restored).
constexpr char kRunsHeaderKey[] = "runsTable/header.v2";

}  // namespace

MainWindow::MainWindow(const QString& storePath, QWidget* parent)
    : QMainWindow(parent), m_controller(std::make_unique<RunController>(&m_feed)) {
  resources::initResources();
  QIcon appIcon;
  appIcon.addFile(QStringLiteral(":/icons/dasp-workbench-48.png"));
  appIcon.addFile(QStringLiteral(":/icons/dasp-workbench-256.png"));
  setWindowIcon(appIcon);
  createDocks();
  createActions();
  createMenus();
  m_countLabel = new QLabel(this);
  m_countLabel->setObjectName(QStringLiteral("runCountLabel"));
  statusBar()->addWidget(m_countLabel, 1);

  connect(m_runs, &RunsPanel::countTextChanged, m_countLabel, &QLabel::setText);
  connect(m_runs, &RunsPanel::statusMessage, statusBar(), &QStatusBar::showMessage);
  connect(m_runs, &RunsPanel::specRequested, this, &MainWindow::openRunSpec);
  connect(m_runs, &RunsPanel::replayRequested, this, &MainWindow::openInLiveView);
  connect(m_runs, &RunsPanel::compareRequested, this, &MainWindow::compareRuns);
  connect(m_runs, &RunsPanel::predictRequested, this, &MainWindow::predictFrom);
  connect(m_live->charts(), &LiveCharts::liveRequested, this, &MainWindow::showLiveRun);
  connect(m_designer, &SpecDesigner::specLoaded, this, [this](const QString& source) {
    statusBar()->showMessage(tr("Experiment: %1").arg(source), 5000);
  });

  RunController* c = m_controller.get();
  connect(c, &RunController::runPlanned, this, [this](int index, int total, const QString& label) {
    appendLog(tr("[%1/%2] %3").arg(index + 1).arg(total).arg(label));
    statusBar()->showMessage(tr("Running %1 (%2 of %3)").arg(label).arg(index + 1).arg(total));
  });
  connect(c, &RunController::runStarted, this, [this](qint64 runId) {
    appendLog(tr("run %1 started").arg(runId));
    if (m_controller->currentRunIsSim()) followSimRun(runId);
    m_live->charts()->setLiveAvailable(true);
    m_runs->reload();  // the new run shows at once, not at the next periodic reload
  });
  connect(c, &RunController::runFinished, this, &MainWindow::onRunFinished);
  connect(c, &RunController::finished, this, [this] {
    drainLive();
    updateRunActions();
    statusBar()->showMessage(tr("Ready."), 5000);
  });
  connect(c, &RunController::logLine, this, &MainWindow::appendLog);

  m_live->showLive(&m_liveData);
  m_drainTimer = new QTimer(this);
  m_drainTimer->setInterval(kDrainIntervalMs);
  connect(m_drainTimer, &QTimer::timeout, this, &MainWindow::drainLive);
  m_drainTimer->start();

  restoreSettings();
  openStore(storePath);
  updateRunActions();
}

// The controller goes first (member order): its destructor stops a run and joins the
// runner thread while the feed still exists. A sim read in flight (m_simLoad, destroyed
// before it) is waited for; it holds nothing of the window.
MainWindow::~MainWindow() = default;

RunTableModel* MainWindow::runModel() const { return m_runs->model(); }
QSortFilterProxyModel* MainWindow::proxyModel() const { return m_runs->proxy(); }
QTableView* MainWindow::runTable() const { return m_runs->table(); }
QString MainWindow::storePath() const { return m_runs->storePath(); }
QString MainWindow::lastError() const { return m_runs->lastError(); }
QString MainWindow::logText() const { return m_log->toPlainText(); }

void MainWindow::createDocks() {
  setDockNestingEnabled(true);
  auto dock = [this](const QString& title, const char* name, QWidget* widget, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(QLatin1String(name));  // saveState()/restoreState() key
    d->setWidget(widget);
    addDockWidget(area, d);
    return d;
  };
  m_designer = new SpecDesigner(this);
  m_live = new LivePanel(m_controller.get(), this);
  m_runs = new RunsPanel(this);
  m_compare = new ComparePanel(this);
  m_log = new QPlainTextEdit(this);
  m_log->setObjectName(QStringLiteral("logView"));
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(10000);
  m_designerDock = dock(tr("Designer"), "designerDock", m_designer, Qt::LeftDockWidgetArea);
  // The run list goes under the designer in the left-hand column, so that the live view
  // and the compare view have the right-hand column's whole height: its node table shows
  // 16 workers and its charts still get most of it (a bottom dock area would take height
  // from both columns).
  m_liveDock = dock(tr("Live"), "liveDock", m_live, Qt::RightDockWidgetArea);
  m_compareDock = dock(tr("Compare"), "compareDock", m_compare, Qt::RightDockWidgetArea);
  m_runsDock = dock(tr("Runs"), "runsDock", m_runs, Qt::LeftDockWidgetArea);
  m_logDock = dock(tr("Log"), "logDock", m_log, Qt::LeftDockWidgetArea);
  splitDockWidget(m_designerDock, m_runsDock, Qt::Vertical);
  tabifyDockWidget(m_liveDock, m_compareDock);
  tabifyDockWidget(m_runsDock, m_logDock);
  m_liveDock->raise();
  m_runsDock->raise();
}

void MainWindow::createActions() {
  m_launchAction = new QAction(tr("&Launch"), this);
  m_launchAction->setObjectName(QStringLiteral("launchAction"));
  m_launchAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  m_launchAction->setToolTip(tr("Run the designer's experiment (a suite: every entry and seed in turn)"));
  connect(m_launchAction, &QAction::triggered, this, [this] { launch(); });
  m_stopAction = new QAction(tr("&Stop"), this);
  m_stopAction->setObjectName(QStringLiteral("stopAction"));
  m_stopAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  m_stopAction->setToolTip(tr("Stop the run in progress (the rest of a suite is skipped)"));
  connect(m_stopAction, &QAction::triggered, this, &MainWindow::stop);

  m_launchAction->setIcon(QIcon(QStringLiteral(":/icons/toolbar/run.png")));
  m_stopAction->setIcon(QIcon(QStringLiteral(":/icons/toolbar/stop.png")));
  m_runs->compareAction()->setIcon(QIcon(QStringLiteral(":/icons/toolbar/compare.png")));

  m_openStoreAction = new QAction(QIcon(QStringLiteral(":/icons/toolbar/open-store.png")), tr("&Open Run Store…"), this);
  m_openStoreAction->setShortcut(QKeySequence::Open);
  m_openStoreAction->setToolTip(tr("Open another run store (SQLite)"));
  connect(m_openStoreAction, &QAction::triggered, this, &MainWindow::chooseStore);
  m_openExperimentAction =
      new QAction(QIcon(QStringLiteral(":/icons/toolbar/new-experiment.png")), tr("Open &Experiment…"), this);
  m_openExperimentAction->setToolTip(tr("Load an experiment spec into the designer"));
  connect(m_openExperimentAction, &QAction::triggered, m_designer, &SpecDesigner::openFile);
  m_exportAction = new QAction(QIcon(QStringLiteral(":/icons/toolbar/export-report.png")), tr("Export &Report…"), this);
  m_exportAction->setObjectName(QStringLiteral("exportAction"));
  m_exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  m_exportAction->setToolTip(tr("Export an HTML report of the compared runs, else of the runs selected"));
  connect(m_exportAction, &QAction::triggered, this, [this] { chooseExportFile(ReportFormat::Html); });
  m_filterAction = new QAction(tr("&Filter Runs"), this);
  m_filterAction->setObjectName(QStringLiteral("filterAction"));
  m_filterAction->setShortcut(QKeySequence::Find);
  m_filterAction->setToolTip(tr("Type into the Runs dock's filter (any column)"));
  connect(m_filterAction, &QAction::triggered, this, [this] {
    m_runsDock->show();
    m_runsDock->raise();
    m_runs->focusFilter();
  });
  // Toolbar tooltips do not show shortcuts by themselves.
  for (QAction* a : {m_launchAction, m_stopAction, m_exportAction, m_filterAction, m_openStoreAction}) {
    const QString keys = a->shortcut().toString(QKeySequence::NativeText);
    if (!keys.isEmpty()) a->setToolTip(tr("%1 (%2)").arg(a->toolTip(), keys));
  }

  QToolBar* bar = addToolBar(tr("Experiment"));
  bar->setObjectName(QStringLiteral("experimentToolBar"));
  bar->addAction(m_openStoreAction);
  bar->addAction(m_openExperimentAction);
  bar->addSeparator();
  bar->addAction(m_launchAction);
  bar->addAction(m_stopAction);
  bar->addSeparator();
  bar->addAction(m_runs->compareAction());
  bar->addAction(m_exportAction);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(m_openStoreAction);
  QAction* reloadAction = file->addAction(tr("&Reload"), this, &MainWindow::reload);
  reloadAction->setShortcut(QKeySequence(Qt::Key_F5));
  file->addSeparator();
  file->addAction(m_openExperimentAction);
  file->addAction(tr("Save Experiment &As…"), m_designer, &SpecDesigner::saveFileAs);
  file->addSeparator();
  file->addAction(m_exportAction);
  createExportMenu(file);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit->setMenuRole(QAction::QuitRole);

  QMenu* experiment = menuBar()->addMenu(tr("&Experiment"));
  experiment->addAction(m_launchAction);
  experiment->addAction(m_stopAction);

  QMenu* runs = menuBar()->addMenu(tr("&Runs"));
  runs->addAction(m_runs->openSpecAction());
  runs->addAction(m_runs->replayAction());
  runs->addAction(m_runs->compareAction());
  runs->addAction(m_runs->predictAction());
  runs->addAction(m_runs->logsAction());
  runs->addAction(m_filterAction);
  runs->addSeparator();
  runs->addAction(m_runs->editTagsAction());
  runs->addAction(m_runs->deleteAction());

  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* d : {m_designerDock, m_liveDock, m_compareDock, m_runsDock, m_logDock}) {
    view->addAction(d->toggleViewAction());
  }
  view->addSeparator();
  m_statusBarAction = view->addAction(tr("Show &Status Bar"));
  m_statusBarAction->setCheckable(true);
  m_statusBarAction->setChecked(true);
  connect(m_statusBarAction, &QAction::toggled, statusBar(), &QWidget::setVisible);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* start = help->addAction(tr("&Getting Started"), this, &MainWindow::showGettingStarted);
  start->setObjectName(QStringLiteral("gettingStartedAction"));
  start->setShortcut(QKeySequence::HelpContents);
  QAction* about = help->addAction(tr("&About DASP Workbench"), this, &MainWindow::showAbout);
  about->setMenuRole(QAction::AboutRole);
}

void MainWindow::openStore(const QString& path) {
  setWindowTitle(tr("%1 — DASP Workbench").arg(QFileInfo(path).fileName()));
  m_runs->openStore(path);
  m_countLabel->setText(m_runs->countText());
  updateRunActions();
}

void MainWindow::reload() { m_runs->reload(); }

bool MainWindow::launch() {
  if (m_controller->isRunning()) {
    statusBar()->showMessage(tr("A run is already going."), 5000);
    return false;
  }
  auto refuse = [this](const QString& why) {
    m_designer->showMessage(tr("Not launched: %1").arg(why), true);
    statusBar()->showMessage(tr("Not launched: %1").arg(why), 10000);
    m_designerDock->show();
    m_designerDock->raise();
    return false;
  };
  // The CLI's checks and messages: each field's parser, then validateSpec.
  if (const Status st = m_designer->validate(); !st) return refuse(QString::fromStdString(st.message()));
  auto spec = m_designer->buildSpec();
  if (!spec) return refuse(QString::fromStdString(spec.message()));
  auto plan = planRuns(spec.value());
  if (!plan) return refuse(QString::fromStdString(plan.message()));
  if (m_runs->store() == nullptr) {
    m_runs->reload();  // one more try: the lock may be gone
    if (m_runs->store() == nullptr) return refuse(m_runs->lastError());
  }
  const int runs = static_cast<int>(plan->size());
  m_feed.clear();
  dropSimLoad();
  m_liveIsSim = false;  // until a sim run is created
  m_liveData = RunData{};
  m_live->showLive(&m_liveData);  // a replay gives way to the new run
  QString error;
  if (!m_controller->start(std::move(plan).value(), m_runs->storePath(), &error)) return refuse(error);
  appendLog(tr("Launch: %1, %n run(s), store %2", nullptr, runs)
                .arg(QString::fromStdString(spec->name().empty() ? std::string("run") : spec->name()), m_runs->storePath()));
  m_designer->showMessage(runs > 1 ? tr("Running the suite: %1 runs in turn.").arg(runs) : tr("Running."), false);
  m_liveDock->show();
  m_liveDock->raise();
  updateRunActions();
  return true;
}

void MainWindow::stop() {
  if (!m_controller->isRunning()) return;
  m_controller->stop();
  appendLog(m_controller->currentRunIsSim()
                ? tr("Stop requested: the simulator stops and records the run as stopped.")
                : tr("Stop requested: the runner stops the nodes and records the run as stopped."));
  statusBar()->showMessage(tr("Stopping…"));
}

void MainWindow::updateRunActions() {
  const bool running = m_controller->isRunning();
  m_launchAction->setEnabled(!running);
  m_stopAction->setEnabled(running);
  m_live->setRunning(running);
}

void MainWindow::appendLog(const QString& line) {
  m_log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + line);
}

void MainWindow::drainLive() {
  bool changed = m_feed.hasPending() && m_feed.drainInto(m_liveData);
  if (m_liveIsSim) {
    // A sim run streams nothing: the whole run is read from the store off this thread.
    changed = takeSimLoad(false) || changed;
    if (m_controller->isRunning() && m_liveData.runId > 0 && !m_simLoad.valid() &&
        (!m_storePoll.isValid() || m_storePoll.elapsed() >= m_storePollMs)) {
      startSimLoad();
    }
  } else if (m_controller->isRunning() && m_liveData.runId > 0 &&
             (!m_storePoll.isValid() || m_storePoll.elapsed() >= m_storePollMs)) {
    // The runner's events are in the store only; they matter most while the server is
    // down, when the stream brings nothing.
    m_storePoll.start();
    changed = mergeRunnerEvents() || changed;
    // A long run's events (checkpoints, nodes) grow: the GUI thread's share stays bounded.
    m_storePollMs = static_cast<int>(std::clamp<qint64>(m_storePoll.elapsed() * kStorePollShare, kStorePollMs, 10000));
    m_storePoll.start();
  }
  if (!changed) return;
  logRecoveryEvents();
  // While another run is replayed, the live data still grows, undrawn.
  if (m_live->run() == &m_liveData) m_live->refresh();
}

bool MainWindow::mergeRunnerEvents() {
  RunStore* store = m_runs->store();
  if (store == nullptr || m_liveData.runId <= 0) return false;
  auto rows = store->events(m_liveData.runId);
  if (!rows) return false;  // busy or gone: the next poll tries again
  std::vector<Event> events;
  events.reserve(rows->size());
  for (const EventRow& r : rows.value()) events.push_back(eventFromRow(r));
  return LiveRunFeed::mergeStoreEvents(m_liveData, events) > 0;
}

void MainWindow::logRecoveryEvents() {
  if (m_liveData.runId != m_loggedRunId) {
    m_loggedRunId = m_liveData.runId;
    m_loggedEvents = 0;
  }
  for (; m_loggedEvents < m_liveData.events.size(); ++m_loggedEvents) {
    const Event& e = m_liveData.events[m_loggedEvents];
    // The runner logs its drills and chain changes itself; the server's recovery is new.
    if (e.kind != v1::RunEvent::RECOVERY || e.code == v1::RunEvent::CHECKPOINT || e.code == v1::RunEvent::LEFT_CHAIN) {
      continue;
    }
    appendLog(tr("run %1 at %2 s: %3 %4").arg(m_liveData.runId).arg(e.t, 0, 'f', 2).arg(e.node, e.detail));
  }
}

void MainWindow::followSimRun(qint64 runId) {
  dropSimLoad();
  m_liveIsSim = true;
  RunData fresh;  // filled by the first read; until then a run with no rows
  fresh.runId = runId;
  fresh.kind = QStringLiteral("sim");
  fresh.engine = QStringLiteral("sim");
  fresh.status = QStringLiteral("running");
  m_liveData = std::move(fresh);
  m_storePollMs = kStorePollMs;
  m_storePoll.invalidate();  // the first read at the next drain
  if (m_live->run() == &m_liveData) {
    m_live->setRun(&m_liveData);
    m_live->refresh();
  }
}

void MainWindow::startSimLoad() {
  m_storePoll.start();
  const std::string path = m_runs->storePath().toStdString();
  const std::int64_t runId = m_liveData.runId;
  // Its own connection (a RunStore belongs to one thread); nothing of the window is touched.
  m_simLoad = std::async(std::launch::async, [path, runId]() -> Result<RunData> {
    auto store = RunStore::open(path);
    if (!store) return store.status();
    return loadRunData(*store.value(), runId);
  });
}

bool MainWindow::takeSimLoad(bool wait) {
  if (!m_simLoad.valid()) return false;
  if (!wait && m_simLoad.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  Result<RunData> loaded = m_simLoad.get();
  // The next read waits kStorePollShare times as long as this one took (at least 1 s).
  m_storePollMs = static_cast<int>(std::clamp<qint64>(m_storePoll.elapsed() * kStorePollShare, kStorePollMs, 10000));
  m_storePoll.start();
  // A busy store, or a run that is no longer the live one: the next read.
  if (!loaded || loaded->runId != m_liveData.runId || !m_liveIsSim) return false;
  m_liveData = std::move(loaded).value();
  // The rows came whole (in time order, not appended): the panel counts them afresh.
  if (m_live->run() == &m_liveData) m_live->setRun(&m_liveData);
  return true;
}

void MainWindow::dropSimLoad() {
  if (m_simLoad.valid()) (void)m_simLoad.get();
}

void MainWindow::onRunFinished(qint64 runId, const QString& status, const QString& error) {
  const bool live = runId != 0 && m_liveData.runId == runId;
  if (m_liveIsSim && live) {
    // The whole run as the simulator left it: every row, the summary, the fault metrics.
    dropSimLoad();
    if (RunStore* store = m_runs->store()) {
      if (auto loaded = loadRunData(*store, runId)) m_liveData = std::move(loaded).value();
    }
    m_liveData.status = status;
    logRecoveryEvents();
    if (m_live->run() == &m_liveData) {
      m_live->setRun(&m_liveData);
      m_live->refresh();
      m_live->charts()->convergence()->refresh();  // the fault bands from the metrics
    }
  } else {
    drainLive();  // the run's last events before its status
  }
  if (!m_liveIsSim && m_liveData.runId == runId && runId != 0) {
    mergeRunnerEvents();
    logRecoveryEvents();
    // The fault drills' recovery metrics (the runner writes them at the end); a divergence.
    if (RunStore* store = m_runs->store()) {
      if (auto faults = store->faults(runId)) m_liveData.faults = std::move(faults).value();
      if (auto row = store->run(runId); row && row->divergence) {
        m_liveData.divergence = QString::fromStdString(row->divergence->describe());
      }
    }
    m_liveData.status = status;
    if (m_live->run() == &m_liveData) {
      m_live->refresh();
      m_live->charts()->convergence()->refresh();  // the fault bands from the metrics
    }
  }
  QString line = runId > 0 ? tr("run %1 %2").arg(runId).arg(status) : tr("run not started: %1").arg(status);
  if (!error.isEmpty()) line += QStringLiteral(": ") + error;
  appendLog(line);
  m_runs->reload();
  if (status == QLatin1String("failed")) {
    statusBar()->showMessage(line, 10000);
    announce(tr("Run Failed"), line);
  } else if (status == QLatin1String(toString(RunStatus::Diverged))) {
    statusBar()->showMessage(line, 10000);  // an outcome, not a failure: the live banner says more
  }
}

void MainWindow::openRunSpec(qint64 runId, const QString& specJson) {
  auto spec = parseSpecJson(specJson.toStdString(), "run " + std::to_string(runId));
  if (!spec) {
    m_designer->showMessage(tr("Cannot open the spec of run %1: %2").arg(runId).arg(QString::fromStdString(spec.message())),
                            true);
    return;
  }
  m_designer->setSpec(spec.value());
  if (m_designer->validate()) {
    m_designer->showMessage(tr("The spec of run %1; Launch runs it again.").arg(runId), false);
  }
  m_designerDock->show();
  m_designerDock->raise();
  statusBar()->showMessage(tr("Run %1's spec is in the designer.").arg(runId), 5000);
}

void MainWindow::announce(const QString& title, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // non-blocking: the window stays usable (and tests are not held up)
}

void MainWindow::chooseStore() {
  const QString start = QFileInfo(storePath()).absolutePath();
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open Run Store"), start, tr("Run stores (*.sqlite);;All files (*)"));
  if (!path.isEmpty()) openStore(path);
}

GettingStarted* MainWindow::showGettingStarted() {
  if (m_gettingStarted == nullptr) {
    m_gettingStarted = new GettingStarted(
        {m_launchAction, m_stopAction, m_runs->compareAction(), m_exportAction, m_filterAction}, this);
  }
  m_gettingStarted->show();  // non-modal: the window stays usable beside it
  m_gettingStarted->raise();
  return m_gettingStarted;
}

void MainWindow::showAbout() {
  QMessageBox::about(this, tr("About DASP Workbench"),
                     tr("<h3>DASP Workbench</h3><p>Version %1</p><p>Distributed-training research: design "
                        "experiments, run them, compare synchronisation strategies.</p>"
                        "<p>Run store: %2 (schema version %3)</p>")
                         .arg(QString::fromStdString(dasp::codeVersion()).toHtmlEscaped(),
                              storePath().toHtmlEscaped(), QString::number(RunStore::schemaVersion())));
}

void MainWindow::restoreSettings() {
  QSettings settings(QStringLiteral("dasp"), QStringLiteral("workbench"));
  if (!restoreGeometry(settings.value(QStringLiteral("mainWindow/geometry")).toByteArray())) resize(1400, 900);
  m_needsDefaultLayout = !restoreState(settings.value(QStringLiteral("mainWindow/docks")).toByteArray(), kLayoutVersion);
  m_runs->restoreHeaderState(settings.value(QLatin1String(kRunsHeaderKey)).toByteArray());
  m_statusBarAction->setChecked(settings.value(QStringLiteral("mainWindow/statusBar"), true).toBool());
}

void MainWindow::saveSettings() const {
  QSettings settings(QStringLiteral("dasp"), QStringLiteral("workbench"));
  settings.setValue(QStringLiteral("mainWindow/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("mainWindow/docks"), saveState(kLayoutVersion));
  settings.setValue(QLatin1String(kRunsHeaderKey), m_runs->headerState());
  settings.setValue(QStringLiteral("mainWindow/statusBar"), m_statusBarAction->isChecked());
}

void MainWindow::showError(const QString& title, const QString& message) {
  statusBar()->showMessage(message, 10000);
  announce(title, message);
}

bool MainWindow::openInLiveView(qint64 runId) {
  RunStore* store = m_runs->store();
  if (store == nullptr) {
    showError(tr("Open in Live View"), tr("No run store is open: %1").arg(m_runs->lastError()));
    return false;
  }
  auto loaded = loadRunData(*store, runId);
  if (!loaded) {
    showError(tr("Open in Live View"),
              tr("Cannot read run %1: %2").arg(runId).arg(QString::fromStdString(loaded.message())));
    return false;
  }
  m_replayData = std::move(loaded).value();
  m_live->showReplay(&m_replayData);
  m_live->charts()->setLiveAvailable(m_liveData.runId != 0);
  m_liveDock->show();
  m_liveDock->raise();
  statusBar()->showMessage(tr("Replaying run %1: the slider moves the time cursor.").arg(runId), 5000);
  return true;
}

void MainWindow::showLiveRun() {
  m_live->showLive(&m_liveData);
  m_live->setRunning(m_controller->isRunning());
  m_liveDock->show();
  m_liveDock->raise();
}

int MainWindow::compareRuns(const QList<qint64>& runIds) {
  RunStore* store = m_runs->store();
  std::vector<RunData> runs;
  QStringList failures;
  for (qint64 id : runIds) {
    if (store == nullptr) {
      failures << tr("run %1: no run store is open").arg(id);
      continue;
    }
    auto loaded = loadRunData(*store, id);
    if (loaded) {
      runs.push_back(std::move(loaded).value());
    } else {
      failures << tr("run %1: %2").arg(id).arg(QString::fromStdString(loaded.message()));
    }
  }
  const int count = static_cast<int>(runs.size());
  m_compare->setRuns(std::move(runs));
  m_compare->setMessage(failures.isEmpty() ? QString() : tr("Not loaded: %1").arg(failures.join(QStringLiteral("; "))),
                        !failures.isEmpty());
  m_compareDock->show();
  m_compareDock->raise();
  statusBar()->showMessage(tr("Comparing %n run(s).", nullptr, count), 5000);
  return count;
}

PredictDialog* MainWindow::predictFrom(qint64 runId) {
  auto* dialog = new PredictDialog(m_runs->storePath(), runId, RunController::daspBinary(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &PredictDialog::compareRequested, this, &MainWindow::compareRuns);
  connect(dialog, &PredictDialog::finished, m_runs, &RunsPanel::reload);  // the predictions, listed
  connect(dialog, &PredictDialog::launchRequested, this, [this](qint64 source, const QString& specJson) {
    openRunSpec(source, specJson);  // the designer holds what runs, and checks it
    if (launch()) appendLog(tr("Launched the strategy predicted best on run %1's cluster.").arg(source));
  });
  dialog->show();
  return dialog;
}

QList<qint64> MainWindow::storedRunIds() const {
  // The rows the Runs dock has read (every run in the store), not a second query.
  const RunTableModel* model = runModel();
  QList<qint64> ids;
  for (int row = 0; row < model->rowCount(); ++row) ids.append(model->runIdAt(row));
  std::sort(ids.begin(), ids.end());
  return ids;
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (!m_needsDefaultLayout) return;
  m_needsDefaultLayout = false;
  // Without a saved layout, once the docks have their first geometry (queued: it settles
  // after the show event): the left-hand column a form's width, the run list under the
  // designer with what kVisibleRows rows need (its dock's title bar included), the live
  // view the whole right-hand column.
  QTimer::singleShot(0, this, [this] {
    const int w = width(), h = height();
    const int left = std::min(480, w / 3);
    resizeDocks({m_designerDock, m_liveDock}, {left, w - left}, Qt::Horizontal);
    // resizeDocks() scales the sizes to a column height that is not final yet: the run
    // list's minimum holds its rows through the first layout, and is released after it.
    m_runs->setMinimumHeight(m_runs->heightForRows(RunsPanel::kVisibleRows));
    resizeDocks({m_designerDock, m_runsDock}, {h - h / 4, h / 4}, Qt::Vertical);
    QTimer::singleShot(0, this, [this] { m_runs->setMinimumHeight(0); });
  });
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_controller->isRunning()) {
    // Every node is shut down and the run recorded as stopped before the window goes.
    appendLog(tr("Closing: stopping the run in progress…"));
    statusBar()->showMessage(tr("Stopping the run…"));
    QGuiApplication::setOverrideCursor(Qt::WaitCursor);
    m_controller->stopAndWait();
    QGuiApplication::restoreOverrideCursor();
    drainLive();
  }
  saveSettings();
  QMainWindow::closeEvent(event);
}

}  // namespace dasp::ui
