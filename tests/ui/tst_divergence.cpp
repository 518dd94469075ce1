// SPDX-License-Identifier: MIT
// A diverged run as the workbench shows it, without starting any process: the live
// panel's banner and the workers' refused pushes, the runs table's status and its cause,
// the compare view's and the report's "not reached (diverged)". Run headless:
// QT_QPA_PLATFORM=offscreen.
#include "tests/ui/fault_fixtures.h"
#include "ui/charts/report.h"
#include "ui/runs/run_table_model.h"

#include <QFile>

#include <limits>

using namespace fault_fixtures;

namespace {

// A stored run of 2 workers that diverged at version 7, 0.3 s into the run.
std::int64_t storeDivergedRun(RunStore& store, const std::string& path) {
  NewRun run;
  run.kind = "distributed";
  run.name = "diverging";
  run.strategy = "asp";
  run.specJson = specToJson(withDefaults(parse(R"({"cluster":{"count":2},"stop":{"target_accuracy":0.8}})")), false);
  const std::int64_t id = store.createRun(run).value();
  auto rec = RunRecorder::open(path, id);
  if (!rec) qFatal("%s", rec.message().c_str());
  (*rec)->record(EvaluationRow{id, 0.0, 0, 0, 0, 2.3, 0.1});
  (*rec)->record(EvaluationRow{id, 0.25, 5, 5, 160, std::numeric_limits<double>::quiet_NaN(), 0.1});
  Divergence d;
  d.cause = DivergenceCause::NonFiniteTrainLoss;
  d.version = 7;
  d.tS = 0.3;
  if (auto st = (*rec)->finish(RunStatus::Diverged, {}, d); !st) qFatal("%s", st.message().c_str());
  return id;
}

}  // namespace

class TestDivergence : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void livePanelBannerAndRefusedPushes() {
    LiveRunFeed feed;
    RunController controller(&feed);
    LivePanel panel(&controller);
    RunData data;
    data.runId = 4;
    data.kind = QStringLiteral("distributed");
    data.specJson = QString::fromStdString(specToJson(withDefaults(parse(R"({"cluster":{"count":2}})")), false));
    data.node(QStringLiteral("worker-0"));
    data.node(QStringLiteral("worker-1"));
    auto reject = [&](double t, const char* node) {
      data.events.push_back({t, RE::REJECT, QLatin1String(node),
                             QStringLiteral("gradient contains NaN or Inf; rejected, not applied"), RE::CODE_UNSPECIFIED, {}});
    };
    reject(0.2, "worker-1");
    reject(0.25, "worker-1");
    reject(0.3, "server");  // a refused call (no token): not a worker's push
    data.endT = 0.3;
    panel.showLive(&data);
    panel.setRunning(true);
    QTableWidget* table = panel.nodeTable();
    QCOMPARE(cell(table, 0, LivePanel::Refused), QStringLiteral("0"));
    QCOMPARE(cell(table, 1, LivePanel::Refused), QStringLiteral("2"));
    QVERIFY(panel.divergenceBanner()->isHidden());

    data.status = QStringLiteral("diverged");
    data.divergence = QStringLiteral("training loss not finite at version 7 (0.30 s)");
    panel.setRunning(false);
    panel.refresh();
    QVERIFY(!panel.divergenceBanner()->isHidden());
    const QString banner = panel.divergenceBanner()->text();
    QVERIFY2(banner.contains(QStringLiteral("diverged")) && banner.contains(QStringLiteral("version 7")), qPrintable(banner));
    QVERIFY2(panel.summaryLabel()->text().contains(QStringLiteral("diverged")), qPrintable(panel.summaryLabel()->text()));

    data.status = QStringLiteral("completed");
    data.divergence.clear();
    panel.refresh();
    QVERIFY(panel.divergenceBanner()->isHidden());
  }

  void runsTableCompareAndReport() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
    auto store = RunStore::open(path);
    QVERIFY2(store.isOk(), store.message().c_str());
    const std::int64_t id = storeDivergedRun(**store, path);

    RunTableModel model;
    QVERIFY((model).reload(**store).isOk());
    QCOMPARE(model.rowCount(), 1);
    const QModelIndex status = model.index(0, RunTableModel::Status);
    QCOMPARE(model.data(status, Qt::DisplayRole).toString(), QStringLiteral("diverged"));
    const QString tip = model.data(status, Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("Diverged: training loss not finite at version 7")), qPrintable(tip));

    auto loaded = loadRunData(**store, id);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->status, QStringLiteral("diverged"));
    QVERIFY(std::isnan(loaded->evaluations.back().loss));
    ComparePanel compare;
    compare.setRuns({loaded.value()});
    QCOMPARE(compare.summaryTable()->item(0, ComparePanel::Status)->text(), QStringLiteral("diverged"));
    QCOMPARE(compare.summaryTable()->item(0, ComparePanel::TimeToTarget)->text(), QStringLiteral("not reached (diverged)"));

    const QString html = dir.filePath(QStringLiteral("report.html"));
    const Status written = writeReport({loaded.value()}, html);
    QVERIFY2(written.isOk(), written.message().c_str());
    QFile f(html);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    QVERIFY(text.contains(QStringLiteral("not reached (diverged)")));
    QVERIFY(text.contains(QStringLiteral("<b>Diverged:</b> training loss not finite at version 7 (0.30 s).")));
  }
};

QTEST_MAIN(TestDivergence)
#include "tst_divergence.moc"
