// SPDX-License-Identifier: MIT
// Tests of the workbench's fault-tolerance views, without starting any process: the
// convergence chart's fault bands (from stored
// recovery metrics and from a live run's events), the compare view's Faults tab over a
// store with a faulted run, and the live panel's server / evaluator rows, event list and
// Restart action driven by recovery events. Run headless: QT_QPA_PLATFORM=offscreen.

// The designer's recovery and drill fields: tst_fault_designer.cpp.
#include "tests/ui/fault_fixtures.h"

using namespace fault_fixtures;

class TestFaults : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void faultSpansFromMetrics();
  void faultSpansFromLiveEvents();
  void chartDrawsFaultBands();
  void faultsTabShowsStoredDrills();
  void liveFeedCarriesRecoveryAndMergesStoreEvents();
  void livePanelShowsServerStates();
  void replayShowsServerStateAtCursor();
};

void TestFaults::faultSpansFromMetrics() {
  RunData run = evalRun(10);
  run.faults = drillFaults();
  run.events.push_back({1.2, RE::FAULT, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  const std::vector<FaultSpan> spans = faultSpans(run);
  QCOMPARE(spans.size(), std::size_t{2});  // the metrics, not the events as well
  QCOMPARE(spans[0].label, QStringLiteral("kill server"));
  QCOMPARE(spans[0].t0, 1.2);
  QVERIFY(spans[0].closed);
  QCOMPARE(spans[0].t1, 1.5);
  QVERIFY2(spans[0].detail.contains(QStringLiteral("restored checkpoint v10")), qPrintable(spans[0].detail));
  QVERIFY(spans[0].detail.contains(QStringLiteral("10 updates lost")));
  QCOMPARE(spans[1].label, QStringLiteral("pause worker-1"));
  QVERIFY(!spans[1].closed);
  QVERIFY(spans[1].detail.contains(QStringLiteral("never")));
}

void TestFaults::faultSpansFromLiveEvents() {
  RunData run = evalRun(10);
  auto ev = [&](double t, EventKind kind, EventCode code, const char* node, const char* detail,
                const char* target = "") {
    run.events.push_back({t, kind, QLatin1String(node), QString::fromUtf8(detail), code, QLatin1String(target)});
  };
  // Out of time order, as events merged from the store arrive.
  ev(8.0, RE::CONTROL, RE::RESTARTED, "server-0", "restarted server-0; it rejoins the chain at the tail after server-2 and catches up", "server-0");
  ev(3.0, RE::CONTROL, RE::KILL, "server", "kill server-0", "server-0");
  ev(3.5, RE::RECOVERY, RE::PROMOTED, "server", "promoted: server-1 promoted to head at version 12", "server-1");
  ev(5.0, RE::FAULT, RE::PAUSE, "worker-2", "pause worker-2", "worker-2");
  ev(6.0, RE::FAULT, RE::RESUME, "worker-2", "resume worker-2", "worker-2");
  ev(6.5, RE::FAULT, RE::NOT_APPLIED, "server", "server is not running; fault not applied");
  ev(9.0, RE::CONTROL, RE::KILL, "evaluator", "kill evaluator", "evaluator");
  ev(9.5, RE::CONTROL, RE::RESTARTED, "evaluator", "restarted the evaluator", "evaluator");
  ev(9.7, RE::FAULT, RE::KILL, "worker-0", "kill worker-0", "worker-0");
  const std::vector<FaultSpan> spans = faultSpans(run);
  QCOMPARE(spans.size(), std::size_t{4});
  QCOMPARE(spans[0].node, QStringLiteral("server-0"));
  QCOMPARE(spans[0].t0, 3.0);
  QVERIFY(spans[0].closed);
  QCOMPARE(spans[0].t1, 8.0);
  QCOMPARE(spans[1].label, QStringLiteral("pause worker-2"));
  QCOMPARE(spans[1].t1, 6.0);
  QCOMPARE(spans[2].node, QStringLiteral("evaluator"));
  QCOMPARE(spans[2].t1, 9.5);
  QCOMPARE(spans[3].node, QStringLiteral("worker-0"));
  QVERIFY(!spans[3].closed);  // still down
  QVERIFY(faultSpans(RunData{}).empty());
}

void TestFaults::chartDrawsFaultBands() {
  RunData run = evalRun(10);
  run.faults = drillFaults();
  run.faults[0].fault.atS = 4;
  run.faults[0].fault.restartAtS = 6;
  run.faults[1].fault.atS = 7;
  ConvergenceChart chart;
  chart.resize(800, 450);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.setRuns({&run});
  QTRY_VERIFY(chart.chart()->plotArea().width() > 100);
  chart.refresh();
  const auto& marks = chart.faultMarks();
  QCOMPARE(marks.size(), std::size_t{2});
  QCOMPARE(marks[0].label, QStringLiteral("kill server"));
  QCOMPARE(marks[0].x0, 4.0);
  QCOMPARE(marks[0].x1, 6.0);
  QVERIFY(marks[0].closed);
  QCOMPARE(marks[1].label, QStringLiteral("pause worker-1"));
  QVERIFY(!marks[1].closed);
  QCOMPARE(marks[1].x1, run.endT);  // open: to the run's end
  // The label strip at the top of the band has the drill's tooltip.
  auto* axis = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).first());
  QVERIFY(axis);
  const QRectF plot = chart.chart()->mapRectToScene(chart.chart()->plotArea());
  const double x = plot.left() + (5.0 - axis->min()) / (axis->max() - axis->min()) * plot.width();
  const QString tip = chart.faultToolTipAt(chart.mapFromScene(QPointF(x, plot.top() + 6)));
  QVERIFY2(tip.contains(QStringLiteral("kill server")) && tip.contains(QStringLiteral("restarted at 6.00 s")), qPrintable(tip));
  QVERIFY(chart.faultToolTipAt(chart.mapFromScene(QPointF(x, plot.center().y()))).isEmpty());
  const QImage image = chart.grab().toImage();  // draws the bands
  QVERIFY(!image.isNull());

  // Against updates the bands map through the evaluations; a live run's events give them
  // too; several runs prefix the run id.
  chart.setXAxis(ConvergenceChart::XAxis::Updates);
  QCOMPARE(chart.faultMarks().size(), std::size_t{2});
  QCOMPARE(chart.faultMarks()[0].x0, 80.0);
  RunData live = evalRun(10);
  live.runId = 6;
  live.events.push_back({2.0, RE::CONTROL, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  chart.setXAxis(ConvergenceChart::XAxis::Time);
  chart.setRuns({&run, &live});
  QCOMPARE(chart.faultMarks().size(), std::size_t{3});
  bool sawLive = false;
  for (const auto& m : chart.faultMarks()) sawLive = sawLive || (m.label == QStringLiteral("#6 kill server") && !m.closed);
  QVERIFY(sawLive);
  // Nonsense times do not break the chart.
  RunData odd;
  odd.events.push_back({std::nan(""), RE::FAULT, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  odd.events.push_back({1e300, RE::FAULT, QStringLiteral("server"), QStringLiteral("restarted server"), RE::RESTARTED, QStringLiteral("server")});
  odd.faults = drillFaults();
  odd.faults[0].fault.restartAtS = std::nan("");
  chart.setRuns({&odd});
  (void)chart.grab();
  chart.setRuns({});
  QVERIFY(chart.faultMarks().empty());
}

void TestFaults::faultsTabShowsStoredDrills() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string db = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
  auto store = RunStore::open(db);
  QVERIFY2(store.isOk(), store.message().c_str());
  const std::int64_t plain = writeRun(**store, db, {});
  const std::int64_t faulted = writeRun(**store, db, drillFaults());
  std::vector<RunData> runs;
  for (std::int64_t id : {plain, faulted}) {
    auto data = loadRunData(**store, id);
    QVERIFY2(data.isOk(), data.message().c_str());
    runs.push_back(std::move(data).value());
  }
  QCOMPARE(runs[1].faults.size(), std::size_t{2});

  ComparePanel panel;
  panel.setRuns(runs);
  FaultsView* view = panel.faultsView();
  QVERIFY(view);
  QCOMPARE(view->faultCount(), 2);
  QTableWidget* faults = view->faultTable();
  QCOMPARE(faults->rowCount(), 2);
  QCOMPARE(cell(faults, 0, FaultsView::Run), QString::number(faulted));
  QCOMPARE(cell(faults, 0, FaultsView::Recovery), QStringLiteral("checkpoint"));
  QCOMPARE(cell(faults, 0, FaultsView::Fault), QStringLiteral("0: kill server"));
  QCOMPARE(cell(faults, 0, FaultsView::AtS), QStringLiteral("1.20"));
  QCOMPARE(cell(faults, 0, FaultsView::RestartS), QStringLiteral("1.50"));
  QCOMPARE(cell(faults, 0, FaultsView::DowntimeS), QStringLiteral("0.80"));
  QCOMPARE(cell(faults, 0, FaultsView::Versions), QStringLiteral("20 → 10"));
  QCOMPARE(cell(faults, 0, FaultsView::UpdatesLost), QStringLiteral("10"));
  QCOMPARE(cell(faults, 0, FaultsView::Gradients), QStringLiteral("6 / 1 / 0"));
  QCOMPARE(cell(faults, 0, FaultsView::Detail), QStringLiteral("restored checkpoint v10"));
  QCOMPARE(cell(faults, 0, FaultsView::ChangeAtResume), QStringLiteral("+0.1500"));
  QCOMPARE(cell(faults, 1, FaultsView::Fault), QStringLiteral("1: pause worker-1"));
  QCOMPARE(cell(faults, 1, FaultsView::BackS), QStringLiteral("never"));
  QCOMPARE(cell(faults, 1, FaultsView::RestartS), QStringLiteral("–"));
  // The aggregate: one row per fault index, with core's header.
  QTableWidget* recovery = view->recoveryTable();
  QCOMPARE(recovery->rowCount(), 2);
  QCOMPARE(recovery->horizontalHeaderItem(0)->text(), QStringLiteral("recovery"));
  QCOMPARE(cell(recovery, 0, 0), QStringLiteral("checkpoint"));
  QCOMPARE(cell(recovery, 0, 1), QStringLiteral("2"));  // workers, from the spec
  QVERIFY(!view->noteLabel()->text().isEmpty());
  QCOMPARE(panel.tabs()->tabText(1), QStringLiteral("Faults (2)"));
  // The compare chart shades the drills of the faulted run.
  QCOMPARE(panel.chart()->faultMarks().size(), std::size_t{2});

  panel.setRuns({runs[0]});  // no drills
  QCOMPARE(view->faultCount(), 0);
  QCOMPARE(view->recoveryTable()->rowCount(), 0);
  QCOMPARE(panel.tabs()->tabText(1), QStringLiteral("Faults"));
  panel.setRuns({});
  QCOMPARE(view->faultCount(), 0);
}

void TestFaults::liveFeedCarriesRecoveryAndMergesStoreEvents() {
  ExperimentSpec spec = withDefaults(parse(R"({"name":"chain","cluster":{"count":2},"strategy":{"name":"asp"},
                                               "recovery":{"mode":"CHAIN","replicas":3}})"));
  LiveRunFeed feed;
  feed.beginRun(spec);
  feed.runCreated(7);
  dasp::ps::v1::EventBatch batch;
  auto* e = batch.add_events();
  e->set_kind(dasp::ps::v1::ClusterEvent::RECOVERY);
  e->set_t_s(5.0);
  e->set_rank(-1);
  e->set_decision("promoted");
  e->set_code(RE::PROMOTED);
  e->set_target("server-1");
  e->set_detail("server-1 promoted to head at version 12 (the version the chain acknowledged)");
  e = batch.add_events();
  e->set_kind(dasp::ps::v1::ClusterEvent::RECOVERY);
  e->set_t_s(6.0);
  e->set_rank(1);
  e->set_decision("backlog");
  e->set_code(RE::BACKLOG);
  e->set_detail("worker 1: applied a backlog of 4 gradients in one step");
  feed.push(7, batch);
  RunData data;
  QVERIFY(feed.drainInto(data));
  QCOMPARE(data.runId, std::int64_t{7});
  QCOMPARE(data.events.size(), std::size_t{2});
  QCOMPARE(data.events[0].kind, RE::RECOVERY);
  QCOMPARE(data.events[0].code, RE::PROMOTED);
  QCOMPARE(data.events[0].target, QStringLiteral("server-1"));
  QCOMPARE(data.events[0].node, QStringLiteral("server"));
  QVERIFY(data.events[0].detail.startsWith(QStringLiteral("promoted: server-1 promoted")));
  QCOMPARE(data.events[1].node, QStringLiteral("worker-1"));

  // The runner's rows from the store: taken once; the stream's own rows are not doubled.
  std::vector<Event> store = {
      {4.9, RE::CONTROL, QStringLiteral("server"), QStringLiteral("kill server-0"), RE::KILL, QStringLiteral("server-0")},
      {4.95, RE::EXIT, QStringLiteral("server-0"), QStringLiteral("server-0 killed by signal 9"), RE::EXITED, {}},
      {5.0, RE::RECOVERY, QStringLiteral("server"), data.events[0].detail, RE::PROMOTED,
       QStringLiteral("server-1")},  // from the stream
      {5.0, RE::NODE, QStringLiteral("worker-0"), QStringLiteral("UP: rejoined"), RE::NODE_UP, {}},  // the stream's kind
      {5.1, RE::RECOVERY, QStringLiteral("server"), QStringLiteral("checkpoint: version 20 written"), RE::CHECKPOINT, {}},
      {5.0, RE::RECOVERY, QStringLiteral("server-0"),
       QStringLiteral("server-0 left the chain; server-1 promoted to head at version 12"), RE::LEFT_CHAIN, {}},  // the runner's
  };
  QCOMPARE(LiveRunFeed::mergeStoreEvents(data, store), 3);
  QCOMPARE(data.events.size(), std::size_t{5});
  QCOMPARE(data.events[4].node, QStringLiteral("server-0"));
  QCOMPARE(LiveRunFeed::mergeStoreEvents(data, store), 0);
  QCOMPARE(data.events[2].detail, QStringLiteral("kill server-0"));
}

void TestFaults::livePanelShowsServerStates() {
  LiveRunFeed feed;
  RunController controller(&feed);
  LivePanel panel(&controller);
  RunData data;
  data.runId = 3;
  data.kind = QStringLiteral("distributed");
  data.specJson = QString::fromStdString(specToJson(
      withDefaults(parse(R"({"cluster":{"count":2},"recovery":{"mode":"CHAIN","replicas":3}})")), false));
  data.node(QStringLiteral("worker-0"));
  data.node(QStringLiteral("worker-1"));
  auto ev = [&](double t, EventKind kind, EventCode code, const char* node, const char* detail,
                const char* target = "") {
    data.events.push_back({t, kind, QLatin1String(node), QString::fromUtf8(detail), code, QLatin1String(target)});
  };
  ev(0.1, RE::NODE, RE::NODE_UP, "worker-0", "UP: joined");
  ev(4.9, RE::CONTROL, RE::KILL, "server", "kill server-0", "server-0");
  ev(5.0, RE::RECOVERY, RE::LEFT_CHAIN, "server-0", "server-0 left the chain; server-1 promoted to head at version 12");
  ev(5.0, RE::RECOVERY, RE::PROMOTED, "server", "promoted: server-1 promoted to head at version 12 (the version the chain acknowledged)", "server-1");
  ev(5.2, RE::RECOVERY, RE::CHECKPOINT, "server", "checkpoint: checkpoint of version 20 written");  // not listed
  data.endT = 5.2;
  panel.showLive(&data);
  panel.setRunning(true);

  QTableWidget* table = panel.nodeTable();
  QCOMPARE(table->rowCount(), 2 + 3 + 1);
  const QStringList names{"worker-0", "worker-1", "server-0", "server-1", "server-2", "evaluator"};
  for (int r = 0; r < names.size(); ++r) QCOMPARE(cell(table, r, LivePanel::Node), names[r]);
  QCOMPARE(panel.serviceNodes(), QStringList({"server-0", "server-1", "server-2", "evaluator"}));
  QCOMPARE(cell(table, 2, LivePanel::State), QStringLiteral("DOWN"));
  QCOMPARE(cell(table, 3, LivePanel::State), QStringLiteral("PROMOTED"));
  QCOMPARE(cell(table, 3, LivePanel::Parallel), QStringLiteral("head"));
  QCOMPARE(cell(table, 4, LivePanel::State), QStringLiteral("UP"));
  QCOMPARE(cell(table, 4, LivePanel::Parallel), QStringLiteral("tail"));
  QCOMPARE(cell(table, 5, LivePanel::State), QStringLiteral("UP"));
  const QString tip = table->item(3, LivePanel::State)->toolTip();
  QVERIFY2(tip.contains(QStringLiteral("promoted to head")) && tip.contains(QStringLiteral("version 20 written")),
           qPrintable(tip));
  QCOMPARE(panel.eventTable()->rowCount(), 4);  // the checkpoint is left out

  auto* restart = panel.findChild<QPushButton*>(QStringLiteral("restartButton"));
  auto* slow = panel.findChild<QPushButton*>(QStringLiteral("slowButton"));
  auto* kill = panel.findChild<QPushButton*>(QStringLiteral("killButton"));
  QVERIFY(restart && slow && kill);
  table->selectRow(2);  // the killed replica
  QCOMPARE(panel.selectedNode(), QStringLiteral("server-0"));
  QVERIFY(restart->isEnabled());
  QVERIFY(!slow->isEnabled());  // workers only
  QVERIFY(kill->isEnabled());
  restart->click();  // the controller runs nothing: ignored, no crash
  table->selectRow(0);
  QVERIFY(!restart->isEnabled());
  QVERIFY(slow->isEnabled());

  // The replica restarted: back at the tail.
  ev(8.0, RE::CONTROL, RE::RESTARTED, "server-0", "restarted server-0; it rejoins the chain at the tail after server-2 and catches up", "server-0");
  data.endT = 8;
  panel.refresh();
  QCOMPARE(cell(table, 2, LivePanel::State), QStringLiteral("UP"));
  QCOMPARE(cell(table, 2, LivePanel::Parallel), QStringLiteral("tail"));
  QCOMPARE(cell(table, 4, LivePanel::Parallel), QStringLiteral("replica"));
  QCOMPARE(panel.eventTable()->rowCount(), 5);

  // A worker killed and restarted: DOWN, RESTARTING, then its own state once it rejoined.
  ev(9.0, RE::FAULT, RE::KILL, "worker-1", "kill worker-1", "worker-1");
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("DOWN"));
  ev(10.0, RE::FAULT, RE::RESTARTED, "worker-1", "restarted worker-1; it rejoins with its rank", "worker-1");
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("RESTARTING"));
  ev(10.5, RE::NODE, RE::NODE_UP, "worker-1", "UP: rejoined");
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("starting"));  // no interval yet

  // A single checkpointing server: killed, restarting, restored.
  RunData single;
  single.runId = 4;
  single.kind = QStringLiteral("distributed");
  single.specJson = QStringLiteral(R"({"cluster":{"count":1},"recovery":{"mode":"CHECKPOINT"}})");
  single.node(QStringLiteral("worker-0"));
  panel.showLive(&single);
  QCOMPARE(table->rowCount(), 3);
  QCOMPARE(cell(table, 1, LivePanel::Node), QStringLiteral("server"));
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("UP"));
  single.events.push_back({2, RE::FAULT, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  single.events.push_back({2.1, RE::EXIT, QStringLiteral("server"), QStringLiteral("server killed by signal 9"), RE::EXITED, {}});
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("DOWN"));
  table->selectRow(1);
  QVERIFY(restart->isEnabled());
  single.events.push_back({4, RE::FAULT, QStringLiteral("server"),
                           QStringLiteral("restarted server (recovery checkpoint)"), RE::RESTARTED, QStringLiteral("server")});
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("RESTARTING"));
  QVERIFY(!restart->isEnabled());
  single.events.push_back({4.3, RE::RECOVERY, QStringLiteral("server"),
                           QStringLiteral("restored: restored /tmp/ckpt-300.bin (version 300, taken at 1.9 s)"), RE::RESTORED, {}});
  single.evaluations.push_back({4.5, 310, 0, 0.5, 0.8});
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("UP"));
  QCOMPARE(cell(table, 1, LivePanel::Iterations), QStringLiteral("310"));  // the version
  // The server's news first, the runner's (from the store) a poll later: in time order.
  single.events.push_back({6.0, RE::NODE, QStringLiteral("worker-0"), QStringLiteral("DOWN: timeout"), RE::NODE_DOWN, {}});
  single.events.push_back({6.5, RE::NODE, QStringLiteral("worker-0"), QStringLiteral("UP: rejoined"), RE::NODE_UP, {}});
  panel.refresh();
  single.events.push_back({5.9, RE::CONTROL, QStringLiteral("worker-0"), QStringLiteral("kill worker-0"), RE::KILL, QStringLiteral("worker-0")});
  single.events.push_back({6.2, RE::CONTROL, QStringLiteral("worker-0"),
                           QStringLiteral("restarted worker-0; it rejoins with its rank"), RE::RESTARTED, QStringLiteral("worker-0")});
  panel.refresh();
  QCOMPARE(cell(table, 0, LivePanel::State), QStringLiteral("starting"));  // rejoined, not DOWN/RESTARTING
  single.events.push_back({7.0, RE::FAULT, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  single.events.push_back({8.0, RE::RECOVERY, QStringLiteral("server"),
                           QStringLiteral("restored: restored /tmp/ckpt-400.bin (version 400, taken at 6.9 s)"), RE::RESTORED, {}});
  panel.refresh();
  single.events.push_back({8.0, RE::FAULT, QStringLiteral("server"),
                           QStringLiteral("restarted server (recovery checkpoint)"), RE::RESTARTED, QStringLiteral("server")});  // same time, later
  panel.refresh();
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("UP"));
  QCOMPARE(cell(table, 2, LivePanel::Iterations), QStringLiteral("1"));    // the evaluations

  // No run, a single-node run: no server rows, nothing to act on.
  RunData train;
  train.runId = 9;  // a run the runner created (id 0 is the live data before one exists)
  train.kind = QStringLiteral("train");
  train.specJson = QStringLiteral("{}");
  train.node(QStringLiteral("trainer"));
  panel.showLive(&train);
  QCOMPARE(table->rowCount(), 1);
  panel.showLive(nullptr);
  QCOMPARE(table->rowCount(), 0);
  panel.setRunning(false);
  QVERIFY(!restart->isEnabled());
}

void TestFaults::replayShowsServerStateAtCursor() {
  LiveRunFeed feed;
  RunController controller(&feed);
  LivePanel panel(&controller);
  RunData run = evalRun(10);
  run.kind = QStringLiteral("distributed");
  run.specJson = QStringLiteral(R"({"cluster":{"count":1},"recovery":{"mode":"STATELESS"}})");
  run.node(QStringLiteral("worker-0")).intervals.push_back({0, 10, NodeState::Compute, Parallel::Async});
  run.events.push_back({3, RE::FAULT, QStringLiteral("server"), QStringLiteral("kill server"), RE::KILL, QStringLiteral("server")});
  run.events.push_back({5, RE::FAULT, QStringLiteral("server"),
                        QStringLiteral("restarted server (recovery stateless)"), RE::RESTARTED, QStringLiteral("server")});
  run.events.push_back({5.1, RE::RECOVERY, QStringLiteral("server"),
                        QStringLiteral("adopting: restarted; waiting for the rejoining workers' parameters"), RE::ADOPTING, {}});
  run.events.push_back({5.5, RE::RECOVERY, QStringLiteral("server"),
                        QStringLiteral("adopted: adopted version 80 from worker-0"), RE::ADOPTED, {}});
  panel.showReplay(&run);
  QTableWidget* table = panel.nodeTable();
  QCOMPARE(table->rowCount(), 3);
  QCOMPARE(cell(table, 1, LivePanel::State), QStringLiteral("UP"));  // at the end
  LiveCharts* charts = panel.charts();
  const std::pair<double, const char*> expected[] = {{2, "UP"}, {4, "DOWN"}, {5.2, "RESTARTING"}, {7, "UP"}};
  for (const auto& [t, state] : expected) {
    charts->setCursorTime(t);
    QCOMPARE(cell(table, 1, LivePanel::State), QLatin1String(state));
  }
  // The event list hides what happened after the cursor.
  charts->setCursorTime(4);
  int shown = 0;
  for (int r = 0; r < panel.eventTable()->rowCount(); ++r) shown += panel.eventTable()->isRowHidden(r) ? 0 : 1;
  QCOMPARE(shown, 1);
  // The replay's chart shades the outage from the events.
  QCOMPARE(charts->convergence()->faultMarks().size(), std::size_t{1});
  QCOMPARE(charts->convergence()->faultMarks()[0].x1, 5.0);
}

QTEST_MAIN(TestFaults)
#include "tst_faults.moc"
