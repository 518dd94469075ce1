// SPDX-License-Identifier: MIT
// Tests of the workbench (ui/): the experiment designer over ExperimentSpec (presets read
// back unchanged, the CLI's validation messages, bad presets reported), and real runs
// launched from the window with the CLI's runner (live rows, the runs view, completion;
// closing the window mid-run stops every node and leaves the run `stopped`).
// Run headless: QT_QPA_PLATFORM=offscreen. The nodes are `dasp` processes from the build
// tree (DASP_BIN).

#include "workbench_env.h"
#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "ui/designer/cluster_table.h"
#include "ui/charts/convergence_chart.h"
#include "ui/live/live_charts.h"
#include "ui/live/live_panel.h"
#include "ui/main_window.h"
#include "ui/live/run_controller.h"
#include "ui/runs/run_table_model.h"
#include "ui/runs/runs_panel.h"
#include "ui/designer/spec_designer.h"

#include <google/protobuf/util/message_differencer.h>
#include <signal.h>

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>
#include <string>

using namespace dasp;
using dasp::ui::MainWindow;
using RE = dasp::v1::RunEvent;
using dasp::ui::RunTableModel;
using dasp::ui::SpecDesigner;

namespace {


bool sameSpec(const ExperimentSpec& a, const ExperimentSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// A short synthetic run: logistic regression, 3 workers (one ×3 slower), 10 ms iterations.
ExperimentSpec shortSpec(double seconds) {
  auto spec = parseSpecJson(QStringLiteral(R"({
    "name": "gui-short",
    "model": {"name": "logreg"},
    "dataset": {"name": "synthetic", "synthetic": {"train_count": 4096, "test_count": 512}},
    "batch_size": 32,
    "cluster": {"count": 3, "slowdowns": [1, 1, 3], "base_iteration_ms": 10},
    "strategy": {"name": "bsp", "barrier_timeout_s": 1},
    "stop": {"max_seconds": %1},
    "evaluation": {"every_s": 0.3, "every_steps": 1000000},
    "device": "cpu"
  })").arg(seconds).toStdString(), "test");
  if (!spec) qFatal("bad test spec: %s", spec.message().c_str());
  return spec.value();
}

QString statusOf(const RunTableModel& model, std::int64_t runId) {
  const int row = model.rowOfRun(runId);
  if (row < 0) return QStringLiteral("<missing>");
  return model.data(model.index(row, RunTableModel::Status)).toString();
}

// Live rows: one per worker, each with iterations counted, then the server and the
// evaluator.
bool liveRowsWithIterations(const QTableWidget* table, int workers) {
  if (table->rowCount() != workers + 2) return false;
  for (int r = 0; r < workers; ++r) {
    const QTableWidgetItem* item = table->item(r, ui::LivePanel::Iterations);
    if (item == nullptr || item->text().toLongLong() <= 0) return false;
  }
  const QTableWidgetItem* server = table->item(workers, ui::LivePanel::Node);
  const QTableWidgetItem* evaluator = table->item(workers + 1, ui::LivePanel::Node);
  return server != nullptr && server->text() == QLatin1String("server") && evaluator != nullptr &&
         evaluator->text() == QLatin1String("evaluator");
}

// What `dasp validate homogeneous-4.json --set ASSIGNMENT` prints after "dasp: " (and after
// the file name, which prefixes the messages about the file's values).
QString cliValidate(const QString& assignment) {
  const QString file = QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("homogeneous-4.json"));
  QProcess cli;
  cli.start(QString::fromLatin1(kDasp), {QStringLiteral("validate"), file, QStringLiteral("--set"), assignment});
  if (!cli.waitForFinished(30000) || cli.exitCode() != 2) return QStringLiteral("<dasp validate did not fail>");
  QString text = QString::fromUtf8(cli.readAllStandardError()).trimmed();
  for (const QString& prefix : {QStringLiteral("dasp: "), file + QStringLiteral(": ")}) {
    if (text.startsWith(prefix)) text.remove(0, prefix.size());
  }
  return text;
}

// The live table as text, for failure messages.
QString describeTable(const QTableWidget* table) {
  QString text = QStringLiteral("live table, %1 rows:").arg(table->rowCount());
  for (int r = 0; r < table->rowCount(); ++r) {
    text += QLatin1Char('\n');
    for (int c = 0; c < table->columnCount(); ++c) {
      const QTableWidgetItem* item = table->item(r, c);
      text += (item ? item->text() : QStringLiteral("-")) + QLatin1Char(' ');
    }
  }
  return text;
}


}  // namespace

class TestWorkbench : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void presetRoundTrip();
  void editedClusterAndSaveAs();
  void invalidFieldShowsCliMessage();
  void unreadablePresetShowsMessage();
  void suiteIsPlannedLikeTheCli();
  void launchShortRun();
  void faultDrillAndRestartFromTheLiveView();
  void closingMidRunStopsTheRun();
};

void TestWorkbench::initTestCase() {
  QVERIFY2(setUpWorkbenchEnvironment(), kDasp);
}

void TestWorkbench::presetRoundTrip() {
  SpecDesigner designer;
  QComboBox* presets = designer.presetCombo();
  QVERIFY(presets->count() >= 4);  // "Choose a preset…" + default, hetero-4, ...
  for (const char* name : {"default", "hetero-4", "hetero-8-dynamic", "homogeneous-4", "dasp-paper"}) {
    const int index = presets->findText(QLatin1String(name));
    QVERIFY2(index > 0, name);
    Q_EMIT presets->activated(index);  // as a user's choice
    QVERIFY2(!designer.hasError(), qPrintable(designer.message()));
    QCOMPARE(QFileInfo(designer.currentFile()).completeBaseName(), QLatin1String(name));
    auto loaded = loadSpecFile(QDir(QLatin1String(kExperiments)).filePath(QLatin1String(name) + ".json").toStdString());
    QVERIFY(loaded.isOk());
    auto built = designer.buildSpec();
    QVERIFY2(built.isOk(), built.message().c_str());
    QVERIFY2(sameSpec(built.value(), loaded.value()), specToJson(built.value()).c_str());
    QVERIFY(sameSpec(designer.spec(), loaded.value()));
  }
  // DASP's rule and the ADAPTIVE knobs are fields of the form.
  auto* rule = designer.findChild<QComboBox*>(QStringLiteral("spec.strategy.dasp.rule"));
  QVERIFY(rule);
  QCOMPARE(rule->currentData().toString(), QStringLiteral("PAPER"));  // dasp-paper, loaded last
  auto* budget = designer.findChild<QComboBox*>(QStringLiteral("spec.strategy.dasp.batch_budget"));
  QVERIFY(budget);
  budget->setCurrentIndex(budget->findData(QStringLiteral("CLUSTER_TOTAL")));
  auto withBudget = designer.buildSpec();
  QVERIFY2(withBudget.isOk(), withBudget.message().c_str());
  QCOMPARE(withBudget->strategy().dasp().batch_budget(), dasp::v1::DaspParams::CLUSTER_TOTAL);
  // The compact cluster of default.json (count 4, slowdowns 1,1,2,4) shows one row per worker.
  presets->setCurrentIndex(presets->findText(QStringLiteral("default")));
  Q_EMIT presets->activated(presets->currentIndex());
  QTableWidget* table = designer.clusterTable()->table();
  QCOMPARE(table->rowCount(), 4);
  QCOMPARE(table->item(3, ui::ClusterTable::Slowdown)->text(), QStringLiteral("4"));
  QCOMPARE(table->item(3, ui::ClusterTable::BaseMs)->text(), QStringLiteral("20"));
  auto* suite = designer.findChild<QWidget*>(QStringLiteral("suiteList"));
  QVERIFY(suite);
}

void TestWorkbench::editedClusterAndSaveAs() {
  SpecDesigner designer;
  QVERIFY(designer.loadFile(QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("default.json"))));
  QTableWidget* table = designer.clusterTable()->table();
  table->item(2, ui::ClusterTable::Slowdown)->setText(QStringLiteral("5"));
  table->item(1, ui::ClusterTable::Changes)->setText(QStringLiteral("8:3, 20:1"));
  designer.clusterTable()->addWorker();
  auto built = designer.buildSpec();
  QVERIFY2(built.isOk(), built.message().c_str());
  QCOMPARE(built->cluster().workers_size(), 5);  // edited: one entry per worker
  QCOMPARE(built->cluster().workers(2).speed().slowdown(), 5.0);
  QCOMPARE(built->cluster().workers(1).speed().changes_size(), 2);
  QCOMPARE(built->cluster().workers(1).speed().changes(0).at_s(), 8.0);
  QCOMPARE(built->cluster().workers(4).name(), std::string("worker-4"));
  QCOMPARE(built->cluster().workers(4).speed().base_iteration_ms(), 20.0);
  QVERIFY(!built->cluster().has_count());

  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("mine.json"));
  QVERIFY2(designer.saveFile(path), qPrintable(designer.message()));
  QFile saved(path);
  QVERIFY(saved.open(QIODevice::ReadOnly));
  const QByteArray json = saved.readAll();
  QVERIFY(json.contains("\"base_iteration_ms\""));  // proto field names, not camelCase
  QVERIFY(json.contains("\"lr_convention\""));
  auto reread = loadSpecFile(path.toStdString());
  QVERIFY2(reread.isOk(), reread.message().c_str());
  QVERIFY(sameSpec(reread.value(), built.value()));

  // A cell that is not a number names its field; saving refuses.
  table->item(0, ui::ClusterTable::Jitter)->setText(QStringLiteral("lots"));
  QVERIFY(!designer.validate());
  QCOMPARE(designer.message(), QStringLiteral("cluster.workers[0].speed.jitter: 'lots' is not a number"));
  QVERIFY(!designer.saveFile(dir.filePath(QStringLiteral("bad.json"))));
  QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("bad.json"))));
}

void TestWorkbench::invalidFieldShowsCliMessage() {
  QTemporaryDir dir;
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
  MainWindow window(db);
  SpecDesigner* designer = window.designer();
  QVERIFY(designer->loadFile(QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("homogeneous-4.json"))));
  auto* lr = designer->findChild<QLineEdit*>(QStringLiteral("spec.optimizer.lr"));
  QVERIFY(lr);
  lr->setText(QStringLiteral("-1"));
  QVERIFY(!designer->validate());
  QVERIFY(designer->hasError());
  const QString message = designer->message();
  QCOMPARE(message, QStringLiteral("optimizer.lr: must be a positive number (got -1)"));

  // The CLI says the same about the same value (after the file name it names).
  QCOMPARE(cliValidate(QStringLiteral("optimizer.lr=-1")), message);

  // Launch refuses, with the message; nothing runs and nothing is recorded.
  QVERIFY(!window.launch());
  QVERIFY(!window.controller()->isRunning());
  QVERIFY(window.launchAction()->isEnabled());
  QVERIFY2(designer->message().contains(message), qPrintable(designer->message()));
  QCOMPARE(window.runModel()->rowCount(), 0);

  // Not a number at all: the field and the value are named.
  lr->setText(QStringLiteral("fast"));
  QVERIFY(!designer->validate());
  QVERIFY2(designer->message().startsWith(QStringLiteral("optimizer.lr: 'fast'")), qPrintable(designer->message()));
  QCOMPARE(QStringLiteral("--set ") + designer->message(), cliValidate(QStringLiteral("optimizer.lr=fast")));
  lr->setText(QString());  // back to the default: valid again, the error goes away
  QVERIFY(designer->validate());
  QVERIFY(!designer->hasError());
}

void TestWorkbench::unreadablePresetShowsMessage() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  auto write = [&](const QString& name, const QByteArray& text) {
    QFile f(dir.filePath(name));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
  };
  write(QStringLiteral("broken.json"), "{\n  \"name\": \"x\",\n  \"model\": {\n");
  write(QStringLiteral("unknown.json"), "{ \"name\": \"x\", \"no_such_field\": 3 }\n");
  write(QStringLiteral("vanishing.json"), "{}\n");
  qputenv("DASP_EXPERIMENTS_DIR", dir.path().toUtf8());
  SpecDesigner designer;
  qputenv("DASP_EXPERIMENTS_DIR", kExperiments);
  QComboBox* presets = designer.presetCombo();
  QCOMPARE(presets->count(), 4);
  const ExperimentSpec before = designer.spec();

  Q_EMIT presets->activated(presets->findText(QStringLiteral("broken")));
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("broken.json")), qPrintable(designer.message()));
  QVERIFY(sameSpec(designer.spec(), before));  // the form is left as it was

  Q_EMIT presets->activated(presets->findText(QStringLiteral("unknown")));
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("no_such_field")), qPrintable(designer.message()));

  QVERIFY(QFile::remove(dir.filePath(QStringLiteral("vanishing.json"))));  // gone after listing
  Q_EMIT presets->activated(presets->findText(QStringLiteral("vanishing")));
  QVERIFY(designer.hasError());
  QVERIFY2(designer.message().contains(QStringLiteral("vanishing.json")), qPrintable(designer.message()));
  QVERIFY(!designer.loadFile(dir.filePath(QStringLiteral("nowhere/at/all.json"))));
  QVERIFY(designer.hasError());
}

void TestWorkbench::suiteIsPlannedLikeTheCli() {
  auto spec = loadSpecFile(QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("hetero-8-dynamic.json")).toStdString());
  QVERIFY(spec.isOk());
  auto plan = ui::planRuns(spec.value());
  QVERIFY2(plan.isOk(), plan.message().c_str());
  QCOMPARE(int(plan->size()), spec->suite_size() * spec->seeds_size());  // 6 strategies × 3 seeds
  QCOMPARE(plan->front().spec.strategy().name(), std::string("bsp"));
  QCOMPARE(plan->at(1).spec.seed(), std::uint64_t(2));
  // The default experiment runs its homogeneous-equivalent reference too (with_reference),
  // so that its heterogeneity costs are there.
  auto defaults = loadSpecFile(QDir(QLatin1String(kExperiments)).filePath(QStringLiteral("default.json")).toStdString());
  QVERIFY(defaults.isOk());
  auto defaultPlan = ui::planRuns(defaults.value());
  QVERIFY2(defaultPlan.isOk(), defaultPlan.message().c_str());
  QCOMPARE(int(defaultPlan->size()), defaults->suite_size() * defaults->seeds_size() + defaults->seeds_size());
  QCOMPARE(defaultPlan->back().label, std::string("reference"));
  QCOMPARE(defaultPlan->back().spec.reference_of(), defaults->name());
  QCOMPARE(plan->at(3).label, std::string("asp"));
  QCOMPARE(plan->at(3).spec.seed(), std::uint64_t{1});
  QCOMPARE(plan->at(6).label, std::string("ssp(3)"));
  for (const auto& run : plan.value()) {
    QCOMPARE(run.spec.suite_size(), 0);
    QVERIFY(run.spec.has_batch_size());  // resolved with every default
  }
  auto one = ui::planRuns(shortSpec(1));
  QVERIFY(one.isOk());
  QCOMPARE(int(one->size()), 1);
  QCOMPARE(one->front().spec.seed(), std::uint64_t(1));  // the documented default, as `dasp run`
}

void TestWorkbench::launchShortRun() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
  MainWindow window(db);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.designer()->setSpec(shortSpec(4));
  QVERIFY2(window.launch(), qPrintable(window.designer()->message()));
  QVERIFY(window.controller()->isRunning());
  QVERIFY(!window.launchAction()->isEnabled());
  QVERIFY(window.stopAction()->isEnabled());
  QVERIFY(!window.launch());  // one run at a time

  QTableWidget* nodes = window.livePanel()->nodeTable();
  QTRY_VERIFY2_WITH_TIMEOUT(liveRowsWithIterations(nodes, 3),
                            qPrintable(describeTable(nodes) + QLatin1Char('\n') + window.logText()), 30000);
  QCOMPARE(nodes->item(0, ui::LivePanel::Node)->text(), QStringLiteral("worker-0"));
  QTRY_COMPARE_WITH_TIMEOUT(window.runModel()->rowCount(), 1, 10000);  // the runs view
  const std::int64_t runId = window.runModel()->runIdAt(0);
  QCOMPARE(window.liveData().runId, runId);

  // A live action: slow worker-1 ×3; the runner records it as a run event.
  nodes->selectRow(1);
  auto* slow = window.livePanel()->findChild<QPushButton*>(QStringLiteral("slowButton"));
  QVERIFY(slow);
  QVERIFY(slow->isEnabled());
  slow->click();

  QTRY_VERIFY2_WITH_TIMEOUT(statusOf(*window.runModel(), runId) == QLatin1String("completed"),
                            qPrintable(statusOf(*window.runModel(), runId) + QLatin1Char('\n') + window.logText()), 40000);
  QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->isRunning(), 10000);
  QVERIFY(window.launchAction()->isEnabled());
  QVERIFY(!window.stopAction()->isEnabled());
  QVERIFY(!slow->isEnabled());
  QVERIFY(!window.liveData().evaluations.empty());
  QCOMPARE(window.liveData().status, QStringLiteral("completed"));
  QVERIFY(window.logText().contains(QStringLiteral("run %1 completed").arg(runId)));

  auto store = RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  auto events = store.value()->events(runId);
  QVERIFY(events.isOk());
  bool controlled = false;
  for (const auto& e : events.value()) controlled = controlled || (e.kind == RE::CONTROL && e.code == RE::SPEED_SET && e.target == "worker-1");
  QVERIFY2(controlled, "the slow-down was not recorded as a run event");
  // The runner writes it to the store only: the live view merged it from there, into the
  // run's data and its event list.
  bool merged = false;
  for (const auto& e : window.liveData().events) {
    merged = merged || (e.kind == RE::CONTROL && e.node == QLatin1String("worker-1"));
  }
  QVERIFY2(merged, "the runner's control event did not reach the live data");
  QTableWidget* eventList = window.livePanel()->eventTable();
  bool listed = false;
  for (int r = 0; r < eventList->rowCount(); ++r) {
    listed = listed || (eventList->item(r, 1)->text() == QLatin1String("control") &&
                        eventList->item(r, 2)->text() == QLatin1String("worker-1"));
  }
  QVERIFY(listed);
  QCOMPARE(nodes->item(3, ui::LivePanel::Node)->text(), QStringLiteral("server"));

  // Each node's exit status and log lines, in a non-modal dialog.
  QDialog* logs = window.runsPanel()->showLogs(runId);
  QVERIFY(logs);
  QVERIFY(!logs->isModal());
  auto* nodeRows = logs->findChild<QTableWidget*>(QStringLiteral("nodeTable"));
  QVERIFY(nodeRows);
  QCOMPARE(nodeRows->rowCount(), 5);  // server, 3 workers, evaluator
  for (int r = 0; r < nodeRows->rowCount(); ++r) {
    QVERIFY2(nodeRows->item(r, 4)->text().startsWith(QLatin1String("exit")), qPrintable(nodeRows->item(r, 4)->text()));
  }
  auto* logView = logs->findChild<QPlainTextEdit*>(QStringLiteral("nodeLogText"));
  QVERIFY(logView);
  nodeRows->setCurrentCell(0, 0);
  QVERIFY(!logView->toPlainText().isEmpty());
  logs->close();

  // Open the run's spec in the designer: Launch would run it again.
  window.runTable()->selectRow(0);
  window.runsPanel()->openSpecAction()->trigger();
  auto reopened = window.designer()->buildSpec();
  QVERIFY2(reopened.isOk(), reopened.message().c_str());
  QCOMPARE(reopened->name(), std::string("gui-short"));
  QCOMPARE(reopened->cluster().workers_size() + reopened->cluster().count(), 3);
  QVERIFY(window.designer()->validate());
}

// A run with a drill (the server killed at 1 s, restarted from its checkpoint 1 s later)
// and a worker killed and restarted from the live view: the rows follow, the drills end
// up as fault bands and recovery metrics.
void TestWorkbench::faultDrillAndRestartFromTheLiveView() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
  MainWindow window(db);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  ExperimentSpec spec = shortSpec(9);
  spec.mutable_strategy()->set_name("asp");
  spec.mutable_recovery()->set_mode(v1::RecoverySpec::CHECKPOINT);
  spec.mutable_recovery()->set_checkpoint_every_updates(20);
  auto* drill = spec.add_faults();
  drill->set_node("server");
  drill->set_action(v1::FaultSpec::KILL);
  drill->set_at_s(1.0);
  drill->set_restart_after_s(1.0);
  window.designer()->setSpec(spec);
  QCOMPARE(window.designer()->buildSpec()->faults_size(), 1);
  QVERIFY2(window.launch(), qPrintable(window.designer()->message()));

  ui::LivePanel* live = window.livePanel();
  QTableWidget* nodes = live->nodeTable();
  QTRY_VERIFY2_WITH_TIMEOUT(liveRowsWithIterations(nodes, 3),
                            qPrintable(describeTable(nodes) + QLatin1Char('\n') + window.logText()), 30000);
  auto* kill = live->findChild<QPushButton*>(QStringLiteral("killButton"));
  auto* restart = live->findChild<QPushButton*>(QStringLiteral("restartButton"));
  QVERIFY(kill && restart);
  nodes->selectRow(2);
  QCOMPARE(live->selectedNode(), QStringLiteral("worker-2"));
  QVERIFY(!restart->isEnabled());
  kill->click();
  auto state = [&](int row) { return nodes->item(row, ui::LivePanel::State)->text(); };
  QTRY_VERIFY2_WITH_TIMEOUT(state(2) == QLatin1String("DOWN") && restart->isEnabled(),
                            qPrintable(describeTable(nodes) + QLatin1Char('\n') + window.logText()), 10000);
  restart->click();
  QTRY_VERIFY2_WITH_TIMEOUT(state(2) != QLatin1String("DOWN") && state(2) != QLatin1String("RESTARTING"),
                            qPrintable(describeTable(nodes) + QLatin1Char('\n') + window.logText()), 15000);

  QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->isRunning(), 40000);
  const ui::RunData& data = window.liveData();
  QCOMPARE(data.status, QStringLiteral("completed"));
  // Both faults, with their metrics from the store, and their bands on the chart.
  QVERIFY2(data.faults.size() >= 2, qPrintable(window.logText()));
  bool serverDrill = false, workerKill = false;
  for (const auto& f : data.faults) {
    serverDrill = serverDrill || (f.fault.node == "server" && f.fault.restartAtS.has_value());
    workerKill = workerKill || (f.fault.node == "worker-2" && f.fault.restartAtS.has_value());
  }
  QVERIFY(serverDrill);
  QVERIFY(workerKill);
  QVERIFY(live->charts()->convergence()->faultMarks().size() >= 2);
  // The server went down, restarted and restored its checkpoint: listed, and UP again.
  bool restored = false, fired = false;
  QTableWidget* events = live->eventTable();
  for (int r = 0; r < events->rowCount(); ++r) {
    const QString kind = events->item(r, 1)->text();
    const QString detail = events->item(r, 3)->text();
    fired = fired || (kind == QLatin1String("fault") && detail == QLatin1String("kill server"));
    restored = restored || (kind == QLatin1String("recovery") && detail.startsWith(QLatin1String("restored")));
  }
  QVERIFY(fired);
  QVERIFY2(restored, qPrintable(window.logText()));
  QCOMPARE(nodes->item(3, ui::LivePanel::Node)->text(), QStringLiteral("server"));
  QCOMPARE(state(3), QStringLiteral("UP"));
  QVERIFY(window.logText().contains(QStringLiteral("restored")));
}

void TestWorkbench::closingMidRunStopsTheRun() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
  std::int64_t runId = 0;
  {
    MainWindow window(db);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.designer()->setSpec(shortSpec(60));
    QVERIFY2(window.launch(), qPrintable(window.designer()->message()));
    QTRY_VERIFY2_WITH_TIMEOUT(liveRowsWithIterations(window.livePanel()->nodeTable(), 3),
                              qPrintable(describeTable(window.livePanel()->nodeTable()) + QLatin1Char('\n') +
                                         window.logText()),
                              30000);
    runId = window.liveData().runId;
    QVERIFY(runId > 0);
    QVERIFY(window.close());  // blocks until the runner has shut the run down
    QVERIFY(!window.controller()->isRunning());
  }
  auto store = RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  auto run = store.value()->run(runId);
  QVERIFY(run.isOk());
  QCOMPARE(QString::fromLatin1(toString(run->status)), QStringLiteral("stopped"));
  auto nodes = store.value()->nodes(runId);
  QVERIFY(nodes.isOk());
  QVERIFY(nodes->size() >= 5);  // server, 3 workers, evaluator
  for (const auto& n : nodes.value()) {
    QVERIFY2(!processAlive(n.pid), qPrintable(QString::fromStdString(n.node) + " still running"));
  }
}

QTEST_MAIN(TestWorkbench)
#include "tst_workbench.moc"
