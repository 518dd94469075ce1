// SPDX-License-Identifier: MIT
// "Predict Other Strategies on This Cluster…" (PredictDialog, issue 34): from a stored
// engine run with a speed change, the dialog shows the measured speeds, runs
// `dasp predict` in a child with progress, charts each strategy's predicted time with the
// measured run's own time marked, and hands the best strategy's spec to a launch; Cancel
// stops the child mid-plan and shows what it predicted; a run that cannot be profiled, or
// seeds that do not parse, are refused with the reason. The main window offers the action
// on one selected run.
// Run headless: QT_QPA_PLATFORM=offscreen. The engine is the build tree's `dasp`.

#include "workbench_env.h"
#include "core/spec/spec.h"
#include "core/store/run_store.h"
#include "ui/main_window.h"
#include "ui/runs/predict_dialog.h"
#include "ui/runs/run_table_model.h"
#include "ui/runs/runs_panel.h"

#include <QAction>
#include <QCheckBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QPointer>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QTableView>
#include <QtTest>

using namespace dasp;
using dasp::ui::PredictDialog;

class TestPredict : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void predictsEachStrategyWithTheMeasuredRunMarked();
  void cancelStopsThePredictionMidPlan();
  void closingMidPlanStopsTheChildWithoutWaiting_data();
  void closingMidPlanStopsTheChildWithoutWaiting();
  void refusesWhatItCannotPredict();
  void mainWindowOffersTheActionOnOneRun();

 private:
  // Only `strategies` checked, `seeds` in the seeds line, no reference.
  static void choose(PredictDialog& dialog, const QStringList& strategies, const QString& seeds);

  QTemporaryDir m_dir;
  QString m_db;
  std::int64_t m_runId = 0;
  double m_measuredTime = 0;
};

void TestPredict::initTestCase() {
  QVERIFY(setUpWorkbenchEnvironment());
  QVERIFY(m_dir.isValid());
  m_db = m_dir.filePath("runs.sqlite");
  const QString spec = m_dir.filePath("measured.json");
  QFile f(spec);
  QVERIFY(f.open(QIODevice::WriteOnly));
  // Three workers, the third 2x slower and 3x slower again from 1.5 s; ASP to 0.5.
  f.write(R"({"name": "measured", "engine": "sim", "model": {"name": "mlp", "hidden": 32},
    "dataset": {"name": "synthetic"}, "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 32,
    "cluster": {"workers": [{"speed": {"base_iteration_ms": 20}}, {"speed": {"base_iteration_ms": 20}},
                            {"speed": {"base_iteration_ms": 40, "changes": [{"at_s": 1.5, "slowdown": 3}]}}]},
    "strategy": {"name": "asp"}, "stop": {"max_seconds": 3, "stop_at_target": false, "target_accuracy": 0.5},
    "evaluation": {"every_s": 0.25}})");
  f.close();
  QProcess run;
  run.start(QString::fromLatin1(kDasp), {"run", spec, "--db", m_db, "--json", "--quiet"});
  QVERIFY(run.waitForFinished(120000));
  QCOMPARE(run.exitCode(), 0);
  const auto line = QJsonDocument::fromJson(run.readAllStandardOutput().trimmed().split('\n').last()).object();
  m_runId = line["run_id"].toInteger();
  QVERIFY(m_runId > 0);
  QVERIFY2(!line["time_to_target_s"].isNull(), "the measured run must reach its target");
  m_measuredTime = line["time_to_target_s"].toDouble();
}

void TestPredict::choose(PredictDialog& dialog, const QStringList& strategies, const QString& seeds) {
  for (QCheckBox* box : dialog.strategyBoxes()) box->setChecked(strategies.contains(box->text()));
  dialog.referenceBox()->setChecked(false);
  dialog.seedsEdit()->setText(seeds);
}

void TestPredict::predictsEachStrategyWithTheMeasuredRunMarked() {
  PredictDialog dialog(m_db, m_runId, QString::fromLatin1(kDasp));
  choose(dialog, {"bsp", "asp"}, "1,2");
  QSignalSpy finished(&dialog, &PredictDialog::finished);
  QVERIFY2(dialog.start(), qPrintable(dialog.statusText()));
  QVERIFY(dialog.isRunning());
  QVERIFY(finished.wait(120000));
  QVERIFY2(dialog.statusText().startsWith("Predicted"), qPrintable(dialog.statusText()));
  // Four engine runs (2 strategies x 2 seeds), each tagged with its source, all counted.
  QCOMPARE(dialog.predicted().size(), std::size_t{4});
  QCOMPARE(dialog.progressBar()->value(), 4);
  QCOMPARE(dialog.progressBar()->maximum(), 4);
  auto store = RunStore::open(m_db.toStdString()).value();
  for (const auto& r : dialog.predicted()) {
    QCOMPARE(QString::fromStdString(store->run(r.run_id()).value().tags), QStringLiteral("predicted-from-%1").arg(m_runId));
  }
  // One bar per strategy, the measured run's time marked at its own strategy's bar.
  const auto& bars = dialog.bars();
  QCOMPARE(bars.bars.size(), std::size_t{2});
  QCOMPARE(bars.bars[0].label, QStringLiteral("bsp"));
  QCOMPARE(bars.bars[1].runs, 2);
  QCOMPARE(bars.markedBar, QStringLiteral("asp"));
  QVERIFY(bars.marked && std::abs(*bars.marked - m_measuredTime) < 1e-9);
  // The best prediction launches for real: the measured run's spec with its strategy.
  const QString best = ui::bestPrediction(bars);
  QVERIFY2(!best.isEmpty() && dialog.launchButton()->isEnabled(), qPrintable(dialog.statusText()));
  QSignalSpy launch(&dialog, &PredictDialog::launchRequested);
  dialog.launchButton()->click();
  QCOMPARE(launch.size(), 1);
  auto spec = parseSpecJson(launch.front().at(1).toString().toStdString(), "launched");
  QVERIFY2(spec, spec.message().c_str());
  QCOMPARE(QString::fromStdString(strategyLabel(spec->strategy())), best);
  QCOMPARE(QString::fromStdString(spec->name()), QStringLiteral("measured"));
  QCOMPARE(spec->cluster().workers(2).speed().changes_size(), 1);  // the real cluster's spec, not the measured model
}

void TestPredict::cancelStopsThePredictionMidPlan() {
  PredictDialog dialog(m_db, m_runId, QString::fromLatin1(kDasp));
  choose(dialog, {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}, "1,2,3,4,5,6,7,8");
  QSignalSpy finished(&dialog, &PredictDialog::finished);
  QVERIFY2(dialog.start(), qPrintable(dialog.statusText()));
  QTRY_VERIFY_WITH_TIMEOUT(dialog.progressBar()->value() >= 1, 60000);
  QCOMPARE(dialog.progressBar()->maximum(), 48);
  dialog.cancel();
  QVERIFY(finished.wait(60000));
  QVERIFY(!dialog.isRunning());
  QVERIFY2(dialog.statusText().startsWith("Cancelled"), qPrintable(dialog.statusText()));
  QVERIFY(!dialog.predicted().empty());
  QVERIFY(dialog.predicted().size() < 48);
}

void TestPredict::closingMidPlanStopsTheChildWithoutWaiting_data() {
  QTest::addColumn<bool>("escape");
  QTest::newRow("the window closed") << false;
  QTest::newRow("Esc") << true;
}

void TestPredict::closingMidPlanStopsTheChildWithoutWaiting() {
  QFETCH(bool, escape);
  // Closing (the window's X, Esc) while the child runs: the dialog hides at once, the
  // child is cancelled, and the dialog goes (WA_DeleteOnClose) once the child has stopped,
  // after it reported the prediction finished, so the runs list shows what was stored.
  auto* dialog = new PredictDialog(m_db, m_runId, QString::fromLatin1(kDasp));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  QPointer<PredictDialog> alive(dialog);
  choose(*dialog, {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}, "1,2,3,4,5,6,7,8");
  QSignalSpy finished(dialog, &PredictDialog::finished);
  dialog->show();
  QVERIFY2(dialog->start(), qPrintable(dialog->statusText()));
  QTRY_VERIFY_WITH_TIMEOUT(dialog->progressBar()->value() >= 1, 60000);
  if (escape) {
    QTest::keyClick(dialog, Qt::Key_Escape);
  } else {
    QVERIFY(!dialog->close());  // not closed yet: hidden until its child has stopped
  }
  QVERIFY(!dialog->isVisible());
  QVERIFY(dialog->isRunning());
  QVERIFY2(dialog->statusText().startsWith("Cancelling"), qPrintable(dialog->statusText()));
  QTRY_VERIFY_WITH_TIMEOUT(alive.isNull(), 60000);
  QCOMPARE(finished.size(), 1);
}

void TestPredict::refusesWhatItCannotPredict() {
  PredictDialog missing(m_db, 9999, QString::fromLatin1(kDasp));
  QVERIFY(!missing.start());
  QVERIFY2(missing.statusText().contains("9999"), qPrintable(missing.statusText()));
  PredictDialog dialog(m_db, m_runId, QString::fromLatin1(kDasp));
  dialog.seedsEdit()->setText("1,two");
  QVERIFY(!dialog.start());
  QVERIFY2(dialog.statusText().contains("'two'"), qPrintable(dialog.statusText()));
  for (QCheckBox* box : dialog.strategyBoxes()) box->setChecked(false);
  dialog.seedsEdit()->setText("1");
  QVERIFY(!dialog.start());
  QVERIFY2(dialog.statusText().contains("strategy"), qPrintable(dialog.statusText()));
}

void TestPredict::mainWindowOffersTheActionOnOneRun() {
  ui::MainWindow window(m_db);
  auto* runs = window.findChild<ui::RunsPanel*>();
  QVERIFY(runs);
  runs->reload();
  const int row = runs->model()->rowOfRun(m_runId);
  QVERIFY(row >= 0);
  runs->table()->selectRow(runs->proxy()->mapFromSource(runs->model()->index(row, 0)).row());
  QCOMPARE(runs->selectedRunIds(), std::vector<std::int64_t>{m_runId});
  QVERIFY(runs->predictAction()->isEnabled());
  runs->predictAction()->trigger();
  auto* dialog = window.findChild<PredictDialog*>();
  QVERIFY(dialog);
  QVERIFY(dialog->isVisible());
  QVERIFY2(dialog->statusText().isEmpty(), qPrintable(dialog->statusText()));  // the run profiled
}

QTEST_MAIN(TestPredict)
#include "tst_predict.moc"
