// SPDX-License-Identifier: MIT
// Tests of the workbench's fault-tolerance views, without starting any process: the
// designer's recovery knobs and fault-drill table (round trip to JSON, knobs per mode,
// validation messages for bad cells), the convergence chart's fault bands (from stored
// recovery metrics and from a live run's events), the compare view's Faults tab over a
// store with a faulted run, and the live panel's server / evaluator rows, event list and
// Restart action driven by recovery events. Run headless: QT_QPA_PLATFORM=offscreen.

#include "core/run_store.h"
#include "core/spec.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/fault_spans.h"
#include "ui/compare_panel.h"
#include "ui/fault_table.h"
#include "ui/faults_view.h"
#include "ui/live_charts.h"
#include "ui/live_panel.h"
#include "ui/live_run_feed.h"
#include "ui/run_controller.h"
#include "ui/run_data.h"
#include "ui/spec_designer.h"

#include <google/protobuf/util/message_differencer.h>

#include <QChart>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStyleOptionViewItem>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QValueAxis>
#include "drill_faults.h"

#include <QtTest>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace dasp;
using namespace dasp::ui;

using RE = dasp::v1::RunEvent;

namespace {

bool sameSpec(const ExperimentSpec& a, const ExperimentSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

ExperimentSpec parse(const char* json) {
  auto spec = parseSpecJson(json, "test");
  if (!spec) qFatal("bad test spec: %s", spec.message().c_str());
  return spec.value();
}

const char* kDrillSpec = R"({
  "name": "drill",
  "cluster": {"count": 3, "slowdowns": [1, 1, 2], "base_iteration_ms": 10},
  "strategy": {"name": "asp"},
  "recovery": {"mode": "CHECKPOINT", "checkpoint_every_updates": 50, "checkpoint_keep": 3,
               "reconnect_timeout_s": 30},
  "faults": [{"node": "server", "action": "KILL", "at_s": 4, "restart_after_s": 2},
             {"node": "worker-1", "action": "PAUSE", "at_s": 7.5}],
  "stop": {"max_seconds": 20}
})";

QString cell(const QTableWidget* t, int row, int column) {
  const QTableWidgetItem* item = t->item(row, column);
  return item ? item->text() : QStringLiteral("<none>");
}

bool visibleIn(const QWidget* w, const QWidget* top) { return w != nullptr && w->isVisibleTo(top); }

void selectValue(QComboBox* combo, const QString& value) {
  const int index = combo->findData(value);
  QVERIFY2(index >= 0, qPrintable(value));
  combo->setCurrentIndex(index);
  Q_EMIT combo->activated(index);  // as a user's choice
}


// One run in the store: evaluations, events and (when given) fault drills.
std::int64_t writeRun(RunStore& store, const std::string& path, const std::vector<RecoveryMetrics>& faults) {
  NewRun run;
  run.kind = "distributed";
  run.name = "faults-test";
  run.specJson = R"({"name":"faults-test","cluster":{"count":2},"strategy":{"name":"asp"},)"
                 R"("recovery":{"mode":"CHECKPOINT"},"stop":{"target_accuracy":0.5}})";
  run.model = "mlp";
  run.dataset = "synthetic";
  run.strategy = "asp";
  run.recovery = faults.empty() ? "none" : "checkpoint";
  run.seed = 1;
  run.codeVersion = "test";
  Result<std::int64_t> id = store.createRun(run);
  if (!id) qFatal("createRun: %s", id.message().c_str());
  auto rec = RunRecorder::open(path, *id);
  if (!rec) qFatal("recorder: %s", rec.message().c_str());
  RunRecorder& r = **rec;
  for (int e = 0; e < 8; ++e) r.record(EvaluationRow{*id, e * 0.5, e * 10, e * 10, e * 640, 2.0 / (1 + e), 0.1 + 0.1 * e});
  if (!faults.empty()) {
    r.record(EventRow{*id, 1.2, RE::FAULT, "server", "kill server", RE::KILL, "server"});
    r.record(EventRow{*id, 1.5, RE::FAULT, "server", "restarted server (recovery checkpoint)", RE::RESTARTED, "server"});
    r.recordFaults(faults);
  }
  if (Status s = r.finish(RunStatus::Completed); !s) qFatal("finish: %s", s.message().c_str());
  return *id;
}

RunData evalRun(double end) {
  RunData r;
  r.runId = 5;
  r.strategy = QStringLiteral("asp");
  for (int i = 0; i <= 20; ++i) {
    const double t = end * i / 20;
    r.evaluations.push_back({t, i * 10, i * 640, 2.0 / (1 + i), 0.1 + 0.04 * i});
  }
  r.endT = end;
  return r;
}

}  // namespace

class TestFaults : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void designerRoundTripsRecoveryAndFaults();
  void faultPresetsRoundTrip();
  void designerShowsTheKnobsOfTheMode();
  void badDrillCellsAreMessages();
  void faultSpansFromMetrics();
  void faultSpansFromLiveEvents();
  void chartDrawsFaultBands();
  void faultsTabShowsStoredDrills();
  void liveFeedCarriesRecoveryAndMergesStoreEvents();
  void livePanelShowsServerStates();
  void replayShowsServerStateAtCursor();
};

void TestFaults::designerRoundTripsRecoveryAndFaults() {
  SpecDesigner designer;
  const ExperimentSpec spec = parse(kDrillSpec);
  designer.setSpec(spec);
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  QTableWidget* drills = designer.faultTable()->table();
  QCOMPARE(drills->rowCount(), 2);
  QCOMPARE(cell(drills, 0, FaultTable::Node), QStringLiteral("server"));
  QCOMPARE(cell(drills, 0, FaultTable::Action), QStringLiteral("kill"));
  QCOMPARE(cell(drills, 0, FaultTable::AtS), QStringLiteral("4"));
  QCOMPARE(cell(drills, 0, FaultTable::RestartAfterS), QStringLiteral("2"));
  QCOMPARE(cell(drills, 1, FaultTable::Node), QStringLiteral("worker-1"));
  QCOMPARE(cell(drills, 1, FaultTable::Action), QStringLiteral("pause"));
  QCOMPARE(cell(drills, 1, FaultTable::AtS), QStringLiteral("7.5"));
  QCOMPARE(cell(drills, 1, FaultTable::RestartAfterS), QString());  // never
  auto* every = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.checkpoint_every_updates"));
  QVERIFY(every);
  QCOMPARE(every->text(), QStringLiteral("50"));

  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QVERIFY2(sameSpec(built.value(), spec), specToJson(built.value()).c_str());
  QVERIFY(!built->faults(1).has_restart_after_s());

  // Through a JSON file and back.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("drill.json"));
  QVERIFY2(designer.saveFile(path), qPrintable(designer.message()));
  auto reread = loadSpecFile(path.toStdString());
  QVERIFY2(reread.isOk(), reread.message().c_str());
  QVERIFY(sameSpec(reread.value(), spec));
  SpecDesigner other;
  QVERIFY(other.loadFile(path));
  auto again = other.buildSpec();
  QVERIFY2(again.isOk(), again.message().c_str());
  QVERIFY(sameSpec(again.value(), spec));

  // Edits reach the spec: a knob, a cell, a new drill, a removed one.
  every->setText(QStringLiteral("25"));
  Q_EMIT every->textEdited(every->text());
  drills->item(1, FaultTable::RestartAfterS)->setText(QStringLiteral("1.5"));
  designer.faultTable()->addFault();
  QCOMPARE(drills->rowCount(), 3);
  QCOMPARE(cell(drills, 2, FaultTable::Node), QStringLiteral("server"));
  QCOMPARE(cell(drills, 2, FaultTable::AtS), QStringLiteral("17.5"));  // 10 s after the last drill
  drills->selectRow(0);
  designer.faultTable()->removeSelectedFaults();
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().checkpoint_every_updates(), std::int64_t{25});
  QCOMPARE(built->faults_size(), 2);
  QCOMPARE(built->faults(0).node(), std::string("worker-1"));
  QCOMPARE(built->faults(0).restart_after_s(), 1.5);
  QCOMPARE(built->faults(1).action(), v1::FaultSpec::KILL);
  QCOMPARE(built->faults(1).restart_after_s(), 5.0);
  QVERIFY(designer.validate());
  QVERIFY(specToJson(built.value()).find("\"restart_after_s\"") != std::string::npos);
}

void TestFaults::faultPresetsRoundTrip() {
  // Every preset with drills (a suite over the recovery modes): read back unchanged.
  const QDir dir(QStringLiteral(DASP_SOURCE_DIR "/experiments"));
  int presets = 0;
  for (const QString& file : dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    auto loaded = loadSpecFile(dir.filePath(file).toStdString());
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    if (loaded->faults_size() == 0 && !loaded->has_recovery()) continue;
    ++presets;
    SpecDesigner designer;
    QVERIFY2(designer.loadFile(dir.filePath(file)), qPrintable(designer.message()));
    QCOMPARE(designer.faultTable()->faultCount(), loaded->faults_size());
    auto built = designer.buildSpec();
    QVERIFY2(built.isOk(), built.message().c_str());
    QVERIFY2(sameSpec(built.value(), loaded.value()), qPrintable(file));
  }
  if (presets == 0) QSKIP("no preset with fault drills in experiments/");
}

void TestFaults::designerShowsTheKnobsOfTheMode() {
  SpecDesigner designer;
  designer.setSpec(parse(kDrillSpec));
  auto group = [&](const char* mode) {
    return designer.findChild<QWidget*>(QStringLiteral("recoveryKnobs.") + QLatin1String(mode));
  };
  QVERIFY(group("CHECKPOINT") && group("CHAIN") && group("STATELESS"));
  QVERIFY(visibleIn(group("CHECKPOINT"), &designer));
  QVERIFY(!visibleIn(group("CHAIN"), &designer));
  QVERIFY(!visibleIn(group("STATELESS"), &designer));
  QVERIFY(visibleIn(designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.reconnect_timeout_s")), &designer));
  QStringList names = designer.faultTable()->nodeNames();
  for (const char* n : {"server", "evaluator", "worker-0", "worker-1", "worker-2"}) {
    QVERIFY2(names.contains(QLatin1String(n)), n);
  }
  QVERIFY(!names.contains(QStringLiteral("server-0")));

  auto* mode = designer.findChild<QComboBox*>(QStringLiteral("spec.recovery.mode"));
  QVERIFY(mode);
  selectValue(mode, QStringLiteral("CHAIN"));
  QVERIFY(!visibleIn(group("CHECKPOINT"), &designer));
  QVERIFY(visibleIn(group("CHAIN"), &designer));
  names = designer.faultTable()->nodeNames();
  for (const char* n : {"server", "server-0", "server-1", "server-2", "evaluator"}) QVERIFY2(names.contains(QLatin1String(n)), n);
  auto* replicas = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.replicas"));
  QVERIFY(replicas);
  replicas->setText(QStringLiteral("4"));
  Q_EMIT replicas->textEdited(replicas->text());
  QVERIFY(designer.faultTable()->nodeNames().contains(QStringLiteral("server-3")));
  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().mode(), v1::RecoverySpec::CHAIN);
  QCOMPARE(built->recovery().replicas(), 4);

  // The node column edits with a combo of those names, still open to any name.
  QTableWidget* drills = designer.faultTable()->table();
  QStyleOptionViewItem option;
  std::unique_ptr<QWidget> editor(
      drills->itemDelegate()->createEditor(drills->viewport(), option, drills->model()->index(0, FaultTable::Node)));
  auto* combo = qobject_cast<QComboBox*>(editor.get());
  QVERIFY(combo);
  QVERIFY(combo->isEditable());
  QVERIFY(combo->findText(QStringLiteral("server-3")) >= 0);
  combo->setEditText(QStringLiteral("server-2"));
  drills->itemDelegate()->setModelData(combo, drills->model(), drills->model()->index(0, FaultTable::Node));
  QCOMPARE(cell(drills, 0, FaultTable::Node), QStringLiteral("server-2"));
  std::unique_ptr<QWidget> actionEditor(
      drills->itemDelegate()->createEditor(drills->viewport(), option, drills->model()->index(0, FaultTable::Action)));
  auto* actions = qobject_cast<QComboBox*>(actionEditor.get());
  QVERIFY(actions);
  QCOMPARE(actions->count(), 2);

  selectValue(mode, QStringLiteral("STATELESS"));
  QVERIFY(visibleIn(group("STATELESS"), &designer));
  QVERIFY(!visibleIn(group("CHAIN"), &designer));
  QVERIFY(!designer.faultTable()->nodeNames().contains(QStringLiteral("server-2")));
  // A chain replica's drill without a chain: the CLI's message names it.
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("faults[0].node")), qPrintable(designer.message()));
  drills->item(0, FaultTable::Node)->setText(QStringLiteral("server"));
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  auto* scale = designer.findChild<QLineEdit*>(QStringLiteral("spec.recovery.backlog_lr_scale"));
  auto* rule = designer.findChild<QComboBox*>(QStringLiteral("spec.recovery.backlog_rule"));
  QVERIFY(scale && rule);
  QVERIFY(!scale->isEnabled());  // SUM: no scale
  selectValue(rule, QStringLiteral("SCALED_LR"));
  QVERIFY(scale->isEnabled());
  scale->setText(QStringLiteral("0.05"));
  Q_EMIT scale->textEdited(scale->text());
  built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->recovery().backlog_rule(), v1::RecoverySpec::SCALED_LR);
  QCOMPARE(built->recovery().backlog_lr_scale(), 0.05);
  QVERIFY(designer.validate());
  // A knob out of range: the CLI's message.
  scale->setText(QStringLiteral("2"));
  Q_EMIT scale->textEdited(scale->text());
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("recovery.backlog_lr_scale")), qPrintable(designer.message()));
}

void TestFaults::badDrillCellsAreMessages() {
  SpecDesigner designer;
  designer.setSpec(parse(kDrillSpec));
  QTableWidget* drills = designer.faultTable()->table();
  auto setAndCheck = [&](int column, const QString& text, const QString& expected) {
    drills->item(1, column)->setText(text);  // itemChanged: validated at once
    QVERIFY(designer.hasError());
    QVERIFY2(designer.message().contains(expected), qPrintable(designer.message() + QStringLiteral(" / ") + expected));
    QVERIFY(!designer.validate());
    QVERIFY(!designer.buildSpec().isOk() || !validateSpec(designer.buildSpec().value()));
    (void)designer.spec();  // the lenient view never fails
  };
  setAndCheck(FaultTable::AtS, QStringLiteral("soon"), QStringLiteral("faults[1].at_s: 'soon' is not a number"));
  setAndCheck(FaultTable::AtS, QString(), QStringLiteral("faults[1].at_s: empty"));
  setAndCheck(FaultTable::AtS, QStringLiteral("-3"), QStringLiteral("faults[1].at_s"));
  setAndCheck(FaultTable::AtS, QStringLiteral("nan"), QStringLiteral("faults[1].at_s"));
  drills->item(1, FaultTable::AtS)->setText(QStringLiteral("7"));
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  setAndCheck(FaultTable::RestartAfterS, QStringLiteral("inf"), QStringLiteral("faults[1].restart_after_s"));
  setAndCheck(FaultTable::RestartAfterS, QStringLiteral("-1"), QStringLiteral("faults[1].restart_after_s"));
  drills->item(1, FaultTable::RestartAfterS)->setText(QString());
  setAndCheck(FaultTable::Action, QStringLiteral("explode"), QStringLiteral("faults[1].action: 'explode' is not kill or pause"));
  drills->item(1, FaultTable::Action)->setText(QStringLiteral("PAUSE"));  // any case
  QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
  setAndCheck(FaultTable::Node, QString(), QStringLiteral("faults[1].node"));
  setAndCheck(FaultTable::Node, QStringLiteral("worker 1; rm"), QStringLiteral("faults[1].node"));
  drills->item(1, FaultTable::Node)->setText(QStringLiteral("worker-1"));
  QVERIFY2(designer.validate(), qPrintable(designer.message()));
  // Removing with nothing selected does nothing; every row removed leaves no faults.
  drills->clearSelection();
  designer.faultTable()->removeSelectedFaults();
  QCOMPARE(drills->rowCount(), 2);
  drills->selectAll();
  designer.faultTable()->removeSelectedFaults();
  QCOMPARE(drills->rowCount(), 0);
  auto built = designer.buildSpec();
  QVERIFY(built.isOk());
  QCOMPARE(built->faults_size(), 0);
}

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
