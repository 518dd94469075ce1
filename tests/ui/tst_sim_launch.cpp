// SPDX-License-Identifier: MIT
// Tests of simulated runs (engine "sim") from the workbench: the designer's engine choice
// and simulator knobs round-trip through the spec JSON; the RunController runs a sim plan
// in a `dasp run` child (the run is in the store with engine "sim", completes, has
// evaluations; the temporary spec file is gone; live actions are refused; a child that
// fails is reported with its `dasp:` message); the main window follows a sim run from the
// store while it goes (the live actions off, the runs table's Engine column), and Stop
// ends it as `stopped` with no process left.
// Run headless: QT_QPA_PLATFORM=offscreen. The simulator is the build tree's `dasp`
// (DASP_BIN).

#include "workbench_env.h"
#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_feed.h"
#include "ui/main_window.h"
#include "ui/live/run_controller.h"
#include "ui/runs/run_table_model.h"
#include "ui/designer/spec_designer.h"

#include <google/protobuf/util/message_differencer.h>
#include <signal.h>

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <string>

using namespace dasp;
using dasp::ui::MainWindow;
using dasp::ui::RunController;
using dasp::ui::RunTableModel;
using dasp::ui::SpecDesigner;

namespace {


// A tiny simulated run: logistic regression on synthetic data, policy-only gradients,
// 4 workers (two slower), 10 ms iterations, `seconds` of virtual time.
ExperimentSpec simSpec(double seconds) {
  auto spec = parseSpecJson(QStringLiteral(R"({
    "name": "gui-sim",
    "engine": "sim",
    "sim": {"gradients": "POLICY_ONLY", "compute_ms": 10},
    "model": {"name": "logreg"},
    "dataset": {"name": "synthetic", "synthetic": {"train_count": 4096, "test_count": 512}},
    "batch_size": 32,
    "cluster": {"count": 4, "slowdowns": [1, 1, 2, 4]},
    "strategy": {"name": "bsp", "barrier_timeout_s": 1},
    "stop": {"max_seconds": %1},
    "evaluation": {"every_s": 0.5, "every_steps": 1000000},
    "device": "cpu"
  })").arg(seconds).toStdString(), "test");
  if (!spec) qFatal("bad test spec: %s", spec.message().c_str());
  return spec.value();
}

std::vector<PlannedRun> planOf(const ExperimentSpec& spec) {
  auto plan = planRuns(spec);
  if (!plan) qFatal("cannot plan the test spec: %s", plan.message().c_str());
  return std::move(plan).value();
}


QString joined(const QSignalSpy& spy, int argument) {
  QStringList lines;
  for (const auto& call : spy) lines << call.at(argument).toString();
  return lines.join(QLatin1Char('\n'));
}

}  // namespace

class TestSimLaunch : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void designerEngineRoundTrip();
  void simRunFromTheController();
  void failedSimRunIsReported();
  void windowFollowsAndStopsASimRun();
};

void TestSimLaunch::initTestCase() {
  QVERIFY2(setUpWorkbenchEnvironment(), kDasp);
}

void TestSimLaunch::designerEngineRoundTrip() {
  SpecDesigner designer;
  QVERIFY(designer.loadFile(QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("homogeneous-4.json"))));
  auto* engine = designer.findChild<QComboBox*>(QStringLiteral("spec.engine"));
  auto* knobs = designer.findChild<QWidget*>(QStringLiteral("simKnobs"));
  QVERIFY(engine && knobs);
  QVERIFY(knobs->isHidden());  // the default engine is real: no simulator knobs

  // A user's choice: engine sim, then the knobs.
  const int sim = engine->findData(QStringLiteral("sim"));
  QVERIFY(sim > 0);
  engine->setCurrentIndex(sim);
  Q_EMIT engine->activated(sim);
  QVERIFY(!knobs->isHidden());
  auto* gradients = designer.findChild<QComboBox*>(QStringLiteral("spec.sim.gradients"));
  QVERIFY(gradients);
  QVERIFY(!gradients->itemText(0).isEmpty());  // "default (REAL)"
  gradients->setCurrentIndex(gradients->findData(QStringLiteral("POLICY_ONLY")));
  auto text = [&](const char* path, const QString& value) {
    auto* edit = designer.findChild<QLineEdit*>(QStringLiteral("spec.") + QLatin1String(path));
    QVERIFY2(edit, path);
    QVERIFY2(knobs->isAncestorOf(edit), path);
    edit->setText(value);
  };
  text("sim.compute_ms", QStringLiteral("12"));
  text("sim.push_overhead_ms", QStringLiteral("0.2"));
  text("sim.apply_ns_per_param", QStringLiteral("3"));
  text("sim.failover_ms", QStringLiteral("300"));
  text("cluster.link.latency_ms", QStringLiteral("0.5"));
  text("cluster.link.mbit", QStringLiteral("125"));
  QVERIFY2(designer.validate(), qPrintable(designer.message()));

  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->engine(), std::string("sim"));
  QCOMPARE(built->sim().gradients(), v1::SimSpec::POLICY_ONLY);
  QCOMPARE(built->sim().compute_ms(), 12.0);
  QCOMPARE(built->sim().push_overhead_ms(), 0.2);
  QCOMPARE(built->sim().apply_ns_per_param(), 3.0);
  QCOMPARE(built->sim().failover_ms(), 300.0);
  QVERIFY(!built->sim().has_restart_ms());  // left at its default
  QCOMPARE(built->cluster().link().latency_ms(), 0.5);
  QCOMPARE(built->cluster().link().mbit(), 125.0);
  QCOMPARE(built->cluster().count(), 4);  // the cluster table's part is kept

  // Saved as JSON and read back: the same spec, and the same form.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("sim.json"));
  QVERIFY2(designer.saveFile(path), qPrintable(designer.message()));
  QFile saved(path);
  QVERIFY(saved.open(QIODevice::ReadOnly));
  const QByteArray json = saved.readAll();
  QVERIFY2(json.contains("\"engine\": \"sim\""), json.constData());
  QVERIFY(json.contains("\"POLICY_ONLY\""));
  QVERIFY(json.contains("\"mbit\""));
  auto reread = loadSpecFile(path.toStdString());
  QVERIFY2(reread.isOk(), reread.message().c_str());
  QVERIFY(google::protobuf::util::MessageDifferencer::Equals(reread.value(), built.value()));
  SpecDesigner other;
  other.setSpec(reread.value());
  QVERIFY(!other.findChild<QWidget*>(QStringLiteral("simKnobs"))->isHidden());
  QCOMPARE(other.findChild<QComboBox*>(QStringLiteral("spec.engine"))->currentData().toString(), QStringLiteral("sim"));
  QCOMPARE(other.findChild<QLineEdit*>(QStringLiteral("spec.cluster.link.latency_ms"))->text(), QStringLiteral("0.5"));
  auto again = other.buildSpec();
  QVERIFY2(again.isOk(), again.message().c_str());
  QVERIFY(google::protobuf::util::MessageDifferencer::Equals(again.value(), built.value()));

  // Back to real: the knobs are hidden; cleared knobs leave no empty `sim` / `link` behind.
  for (const char* field : {"sim.compute_ms", "sim.push_overhead_ms", "sim.apply_ns_per_param", "sim.failover_ms",
                            "cluster.link.latency_ms", "cluster.link.mbit"}) {
    text(field, QString());
  }
  gradients->setCurrentIndex(0);
  const int real = engine->findData(QStringLiteral("real"));
  engine->setCurrentIndex(real);
  Q_EMIT engine->activated(real);
  QVERIFY(knobs->isHidden());
  auto back = designer.buildSpec();
  QVERIFY2(back.isOk(), back.message().c_str());
  QCOMPARE(back->engine(), std::string("real"));
  QVERIFY(!back->has_sim());
  QVERIFY(!back->cluster().has_link());

  // A bad knob names its field, like `dasp validate --set`.
  engine->setCurrentIndex(sim);
  text("sim.compute_ms", QStringLiteral("slow"));
  QVERIFY(!designer.validate());
  QVERIFY2(designer.message().startsWith(QStringLiteral("sim.compute_ms: 'slow'")), qPrintable(designer.message()));
}

void TestSimLaunch::simRunFromTheController() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QTemporaryDir tmp;  // the controller's temporary spec file goes here, and must go away
  QVERIFY(tmp.isValid());
  const bool hadTmp = qEnvironmentVariableIsSet("TMPDIR");
  const QByteArray oldTmp = qgetenv("TMPDIR");
  qputenv("TMPDIR", tmp.path().toUtf8());
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));

  ui::LiveRunFeed feed;
  RunController controller(&feed);
  QSignalSpy started(&controller, &RunController::runStarted);
  QSignalSpy finishedRun(&controller, &RunController::runFinished);
  QSignalSpy finished(&controller, &RunController::finished);
  QSignalSpy log(&controller, &RunController::logLine);
  QString error;
  QVERIFY2(controller.start(planOf(simSpec(3)), db, &error), qPrintable(error));
  if (hadTmp) {
    qputenv("TMPDIR", oldTmp);
  } else {
    qunsetenv("TMPDIR");
  }
  QVERIFY(controller.isRunning());
  QVERIFY(controller.currentRunIsSim());

  // A live action has nothing to act on: refused, with the reason in the log.
  controller.kill(QStringLiteral("worker-1"));
  controller.slowDown(QStringLiteral("worker-2"), 3);
  QCOMPARE(log.count(), 2);
  QVERIFY2(log.at(0).at(0).toString().contains(QStringLiteral("not applied")), qPrintable(joined(log, 0)));

  QTRY_VERIFY2_WITH_TIMEOUT(finished.count() == 1, qPrintable(joined(log, 0)), 90000);
  QVERIFY(!controller.isRunning());
  QCOMPARE(started.count(), 1);
  const std::int64_t runId = started.at(0).at(0).toLongLong();
  QVERIFY(runId > 0);
  QCOMPARE(finishedRun.count(), 1);
  QCOMPARE(finishedRun.at(0).at(0).toLongLong(), runId);
  QVERIFY2(finishedRun.at(0).at(1).toString() == QLatin1String("completed"),
           qPrintable(finishedRun.at(0).at(1).toString() + QStringLiteral(": ") + finishedRun.at(0).at(2).toString() +
                      QLatin1Char('\n') + joined(log, 0)));
  QVERIFY(!feed.hasPending());  // nothing streams from a sim run

  auto store = RunStore::open(db.toStdString());
  QVERIFY2(store.isOk(), store.message().c_str());
  auto run = store.value()->run(runId);
  QVERIFY2(run.isOk(), run.message().c_str());
  QCOMPARE(run->engine, std::string("sim"));
  QCOMPARE(run->kind, std::string("sim"));
  QCOMPARE(QString::fromLatin1(toString(run->status)), QStringLiteral("completed"));
  QVERIFY(!processAlive(run->pid));
  auto evaluations = store.value()->evaluations(runId);
  QVERIFY2(evaluations.isOk(), evaluations.message().c_str());
  QVERIFY(!evaluations->empty());
  auto stored = parseSpecJson(run->specJson, "stored spec");
  QVERIFY2(stored.isOk(), stored.message().c_str());
  QCOMPARE(stored->engine(), std::string("sim"));
  QCOMPARE(stored->sim().gradients(), v1::SimSpec::POLICY_ONLY);

  QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);  // the spec file is gone
}

void TestSimLaunch::failedSimRunIsReported() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  // The store's directory is a file: the child cannot open the store and says so.
  QFile blocker(dir.filePath(QStringLiteral("not-a-dir")));
  QVERIFY(blocker.open(QIODevice::WriteOnly));
  blocker.close();
  const QString db = dir.filePath(QStringLiteral("not-a-dir/runs.sqlite"));

  ui::LiveRunFeed feed;
  RunController controller(&feed);
  QSignalSpy finishedRun(&controller, &RunController::runFinished);
  QSignalSpy finished(&controller, &RunController::finished);
  QString error;
  QVERIFY2(controller.start(planOf(simSpec(3)), db, &error), qPrintable(error));
  QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
  QCOMPARE(finishedRun.count(), 1);
  QCOMPARE(finishedRun.at(0).at(0).toLongLong(), 0);  // never created
  QCOMPARE(finishedRun.at(0).at(1).toString(), QStringLiteral("failed"));
  const QString message = finishedRun.at(0).at(2).toString();
  QVERIFY(!message.isEmpty());
  QVERIFY2(!message.startsWith(QLatin1String("dasp: ")), qPrintable(message));  // the message, not the prefix
  QVERIFY2(message.contains(QStringLiteral("not-a-dir")), qPrintable(message));
}

void TestSimLaunch::windowFollowsAndStopsASimRun() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
  MainWindow window(db);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  // Far more virtual time than the test waits for: it is stopped while it goes.
  window.designer()->setSpec(simSpec(1e6));
  QVERIFY2(window.launch(), qPrintable(window.designer()->message()));
  QVERIFY(window.controller()->isRunning());
  ui::LivePanel* live = window.livePanel();
  auto* killServer = live->findChild<QPushButton*>(QStringLiteral("killServerButton"));
  QVERIFY(killServer);
  QVERIFY(!killServer->isEnabled());  // no process to kill in a simulation

  // The live view follows the run from the store: its metadata, then its evaluations.
  QTRY_VERIFY2_WITH_TIMEOUT(window.liveData().runId > 0 && !window.liveData().evaluations.empty() &&
                                !window.liveData().nodes.empty(),
                            qPrintable(window.logText()), 60000);
  QVERIFY(window.controller()->isRunning());
  const ui::RunData& data = window.liveData();
  const std::int64_t runId = data.runId;
  QCOMPARE(data.engine, QStringLiteral("sim"));
  QCOMPARE(data.status, QStringLiteral("running"));
  QVERIFY2(live->summaryLabel()->text().contains(QStringLiteral("virtual t")), qPrintable(live->summaryLabel()->text()));
  QVERIFY(live->nodeTable()->rowCount() >= 4);
  live->nodeTable()->selectRow(0);
  auto* kill = live->findChild<QPushButton*>(QStringLiteral("killButton"));
  auto* slow = live->findChild<QPushButton*>(QStringLiteral("slowButton"));
  QVERIFY(kill && slow);
  QVERIFY(!kill->isEnabled());
  QVERIFY(!slow->isEnabled());
  killServer->click();  // disabled: nothing happens, nothing breaks

  // The runs table tells it apart by its engine.
  QTRY_VERIFY_WITH_TIMEOUT(window.runModel()->rowOfRun(runId) >= 0, 10000);
  const RunTableModel* model = window.runModel();
  QCOMPARE(model->headerData(RunTableModel::Engine, Qt::Horizontal).toString(), QStringLiteral("Engine"));
  QCOMPARE(model->data(model->index(model->rowOfRun(runId), RunTableModel::Engine)).toString(), QStringLiteral("sim"));

  // Stop: the child records the run as stopped and goes.
  window.stopAction()->trigger();
  QTRY_VERIFY2_WITH_TIMEOUT(!window.controller()->isRunning(), qPrintable(window.logText()), 40000);
  QVERIFY2(window.logText().contains(QStringLiteral("run %1 stopped").arg(runId)), qPrintable(window.logText()));
  QCOMPARE(window.liveData().status, QStringLiteral("stopped"));
  QVERIFY(!window.liveData().evaluations.empty());
  QVERIFY(window.launchAction()->isEnabled());

  auto store = RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  auto run = store.value()->run(runId);
  QVERIFY(run.isOk());
  QCOMPARE(QString::fromLatin1(toString(run->status)), QStringLiteral("stopped"));
  QCOMPARE(run->engine, std::string("sim"));
  QVERIFY2(!processAlive(run->pid), "the simulator process is still running");
}

QTEST_MAIN(TestSimLaunch)
#include "tst_sim_launch.moc"
