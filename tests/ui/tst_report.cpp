// SPDX-License-Identifier: MIT
// Tests of the report exports (ui/charts/report.h) and the dasp-report tool over a small
// store built with RunStore/RunRecorder: CSV at full resolution, Chrome trace JSON, the
// HTML report with embedded charts, the PDF (rendered with pdftoppm when installed), write
// errors, and the tool's exit codes. Run headless: QT_QPA_PLATFORM=offscreen.

#include "core/store/run_store.h"
#include "ui/charts/report.h"
#include "ui/charts/run_data.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QXmlStreamReader>
#include <QTemporaryDir>
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

constexpr int kEvaluations = 6;
constexpr int kIterations = 25;  // per worker
constexpr int kWorkers = 2;

const char* kReportTool = DASP_BINARY_DIR "/bin/dasp-report";

// The fault drills of the ASP run (drill_faults.h) give 12 + 5 CSV figures.
constexpr int kFaultCsvRows = 12 + 5;

// Writes one run: evaluations, per-iteration intervals and samples, decisions, events,
// node rows, a summary and, when given, fault drills.
std::int64_t writeRun(RunStore& store, const std::string& path, const std::string& strategy, std::int64_t seed,
                      double speed, const std::vector<RecoveryMetrics>& faults = {}) {
  NewRun run;
  run.kind = "distributed";
  run.name = "report-test";
  run.specJson = R"({"name":"report-test","strategy":{"name":")" + strategy +
                 R"("},"stop":{"target_accuracy":0.5},"optimizer":{"lr":0.01,"lr_convention":"PER_GRADIENT"}})";
  run.model = "mlp";
  run.dataset = "synthetic";
  run.strategy = strategy;
  run.recovery = faults.empty() ? "none" : "checkpoint";
  run.seed = seed;
  run.codeVersion = "test";
  Result<std::int64_t> id = store.createRun(run);
  if (!id) qFatal("createRun: %s", id.message().c_str());
  auto rec = RunRecorder::open(path, *id);
  if (!rec) qFatal("recorder: %s", rec.message().c_str());
  RunRecorder& r = **rec;
  for (int w = 0; w < kWorkers; ++w) {
    NodeRow node;
    node.runId = *id;
    node.node = "worker-" + std::to_string(w);
    node.role = "worker";
    r.record(node);
  }
  for (int e = 0; e < kEvaluations; ++e) {
    r.record(EvaluationRow{*id, e * speed, e * 10, e * 10, e * 640, 2.0 / (1 + e), 0.1 + 0.15 * e});
  }
  for (int w = 0; w < kWorkers; ++w) {
    const std::string node = "worker-" + std::to_string(w);
    for (int i = 0; i < kIterations; ++i) {
      const double t = i * 0.1 * speed;
      r.record(StateIntervalRow{*id, node, "WAIT", "SYNC", t, t + 0.02});
      r.record(StateIntervalRow{*id, node, "COMPUTE", "SYNC", t + 0.02, t + 0.09});
      r.record(StateIntervalRow{*id, node, "PUSH", "SYNC", t + 0.09, t + 0.1});
      r.record(SampleRow{*id, node, "wait_s", t + 0.1, i, 0.02 + 1e-13 * i});
      r.record(SampleRow{*id, node, "staleness", t + 0.1, i, static_cast<double>(i % 3)});
      r.record(SampleRow{*id, node, "train_loss", t + 0.1, i, 0.1234567890123 + i});
      r.record(SampleRow{*id, node, "compute_s", t + 0.1, i, 0.07});
      r.record(SampleRow{*id, node, "emulated_s", t + 0.1, i, 0.01});  // not a RunData series
      if (i == 0 || i == kIterations / 2) {  // the batch series: a row per change
        r.record(SampleRow{*id, node, "batch_size", t + 0.1, i, i == 0 ? 64.0 : 48.0});
      }
    }
  }
  r.record(DecisionRow{*id, 0.5, "worker-1", "state_change SYNC->ASYNC", "slow \"node\" <1>", DecisionKind::StateChange});
  r.record(DecisionRow{*id, 1.0, "cluster", "barrier_timeout", "kappa", DecisionKind::BarrierTimeout});
  r.record(EventRow{*id, 0.0, RE::NODE, "worker-0", "UP: joined", RE::NODE_UP, {}});
  r.record(EventRow{*id, 1.2, RE::FAULT, "worker-1", "crash injected", RE::CODE_UNSPECIFIED, {}});
  std::vector<SummaryRow> summary{{"final_accuracy", 0.85, ""}, {"mean_wait_s", 0.02, ""},
                                  {"mean_staleness", 1.0, ""},  {"max_staleness", 2.0, ""},
                                  {"updates", 50.0, ""},        {"dropped", 0.0, ""},
                                  {"lr_convention", std::nullopt, "PER_GRADIENT"}};
  if (strategy == "bsp") summary.push_back({"time_to_target_s", 2.0 * speed, ""});
  r.setSummary(summary);
  if (!faults.empty()) r.recordFaults(faults);
  if (Status s = r.finish(RunStatus::Completed); !s) qFatal("finish: %s", s.message().c_str());
  return *id;
}

std::vector<QByteArray> lines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  std::vector<QByteArray> out;
  for (const QByteArray& l : f.readAll().split('\n')) {
    if (!l.isEmpty()) out.push_back(l);
  }
  return out;
}

}  // namespace

class TestReport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void csvHasEveryRow();
  void chromeTraceIsValidJson();
  void htmlHasSummaryAndImages();
  void heterogeneityCostAgainstTheReference();
  void htmlHasFaultsAndRecovery();
  void pdfRendersWithPdftoppm();
  void unwritablePathsFailWithTheName();
  void emptyRunsExport();
  void toolRejectsUnknownRunIds();
  void toolWritesEachFormat();
  void toolWritesEachChart_data();
  void toolWritesEachChart();
  void toolRejectsBadCharts();

 private:
  QTemporaryDir m_dir;
  QString m_db;
  std::vector<std::int64_t> m_ids;
  std::vector<RunData> m_runs;
};

void TestReport::initTestCase() {
  QVERIFY(m_dir.isValid());
  m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
  auto store = RunStore::open(m_db.toStdString());
  QVERIFY2(store.isOk(), store.message().c_str());
  m_ids.push_back(writeRun(**store, m_db.toStdString(), "bsp", 1, 1.0));
  m_ids.push_back(writeRun(**store, m_db.toStdString(), "asp", 1, 0.8, drillFaults("restored checkpoint v10 <ok>")));
  for (std::int64_t id : m_ids) {
    auto data = loadRunData(**store, id);
    QVERIFY2(data.isOk(), data.message().c_str());
    m_runs.push_back(std::move(data).value());
  }
  QCOMPARE(m_runs[0].evaluations.size(), std::size_t{kEvaluations});
  QCOMPARE(m_runs[0].nodes.size(), std::size_t{kWorkers});
  QCOMPARE(m_runs[0].nodes[0].batch.size(), std::size_t{2});
  QCOMPARE(m_runs[0].nodes[0].batch.back().value, 48.0);
  QVERIFY(m_runs[0].faults.empty());
  QCOMPARE(m_runs[1].faults.size(), std::size_t{2});
  QCOMPARE(m_runs[1].faults[0].fault.detail, std::string("restored checkpoint v10 <ok>"));
  QCOMPARE(m_runs[1].faults[0].updatesLost, std::optional<std::int64_t>(10));
  QVERIFY(!m_runs[1].faults[1].recoverS);
}

void TestReport::csvHasEveryRow() {
  const QString path = m_dir.filePath(QStringLiteral("out.csv"));
  const Status s = writeCsv(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  const auto rows = lines(path);
  QVERIFY(!rows.empty());
  QCOMPARE(rows.front(), QByteArray("run_id,node,series,t_s,version,value"));
  // Every sample of the four series, the batch changes and two rows per evaluation,
  // nothing thinned.
  const std::size_t samples = 2 * kWorkers * kIterations * 4 + 2 * kWorkers * 2;
  const std::size_t evaluations = 2 * kEvaluations;
  QCOMPARE(rows.size() - 1, samples + 2 * evaluations + kFaultCsvRows);
  int accuracy = 0, loss = 0, wait = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const QList<QByteArray> f = rows[i].split(',');
    QCOMPARE(f.size(), 6);
    if (f[2] == "accuracy") {
      ++accuracy;
      QCOMPARE(f[1], QByteArray("evaluator"));
    }
    if (f[2] == "loss") ++loss;
    if (f[2] == "wait_s") ++wait;
  }
  QCOMPARE(accuracy, 2 * kEvaluations);
  QCOMPARE(loss, 2 * kEvaluations);
  QCOMPARE(wait, 2 * kWorkers * kIterations);
  // Full resolution: the values read back exactly.
  bool found = false;
  for (const QByteArray& r : rows) {
    const QList<QByteArray> f = r.split(',');
    if (f[1] == "worker-1" && f[2] == "wait_s" && f[4] == "3") found = f[5].toDouble() == 0.02 + 1e-13 * 3;
  }
  QVERIFY2(found, "wait_s of iteration 3 reads back exactly");
  found = false;
  for (const QByteArray& r : rows) found = found || r == "1,worker-0,train_loss,0.1,0,0.1234567890123";
  QVERIFY(found);
  // Fault figures: one row each, at the fault time and the version before it.
  const QByteArray asp = QByteArray::number(static_cast<qlonglong>(m_ids[1]));
  int faultRows = 0;
  bool sawLost = false, sawPause = false, sawAbsent = false;
  for (const QByteArray& r : rows) {
    const QList<QByteArray> f = r.split(',');
    if (!f[2].startsWith("fault.")) continue;
    ++faultRows;
    QCOMPARE(f[0], asp);
    sawLost = sawLost || r == asp + ",server,fault.0.updates_lost,1.2,20,10";
    sawPause = sawPause || r == asp + ",worker-1,fault.1.accuracy_before,3,0,0.55";
    sawAbsent = sawAbsent || f[2] == "fault.1.recover_s" || f[2] == "fault.1.detection_s";
  }
  QCOMPARE(faultRows, kFaultCsvRows);
  QVERIFY(sawLost);
  QVERIFY(sawPause);
  QVERIFY(!sawAbsent);  // absent figures have no row
}

void TestReport::chromeTraceIsValidJson() {
  const QString path = m_dir.filePath(QStringLiteral("out.trace.json"));
  const Status s = writeChromeTrace(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
  QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
  const QJsonArray events = doc.object().value(QStringLiteral("traceEvents")).toArray();
  QVERIFY(!events.isEmpty());
  int complete = 0, instant = 0, names = 0;
  bool sawWait = false;
  for (const QJsonValue& v : events) {
    const QJsonObject e = v.toObject();
    const QString ph = e.value(QStringLiteral("ph")).toString();
    if (ph == QLatin1String("X")) {
      ++complete;
      QVERIFY(e.contains(QStringLiteral("ts")) && e.contains(QStringLiteral("dur")));
      QVERIFY(e.value(QStringLiteral("tid")).toInt() >= 1);
      if (e.value(QStringLiteral("pid")).toInt() == m_ids[0] && e.value(QStringLiteral("tid")).toInt() == 1 &&
          e.value(QStringLiteral("name")).toString() == QLatin1String("WAIT") &&
          qFuzzyCompare(e.value(QStringLiteral("ts")).toDouble(), 100000.0)) {
        sawWait = true;  // iteration 1 of worker-0 starts waiting at 0.1 s
        QCOMPARE(e.value(QStringLiteral("dur")).toDouble(), 20000.0);
        QCOMPARE(e.value(QStringLiteral("args")).toObject().value(QStringLiteral("parallel")).toString(), QStringLiteral("SYNC"));
      }
    }
    if (ph == QLatin1String("i")) ++instant;
    if (ph == QLatin1String("M") && e.value(QStringLiteral("name")).toString() == QLatin1String("thread_name")) ++names;
  }
  QCOMPARE(complete, 2 * kWorkers * kIterations * 3);
  QCOMPARE(instant, 2 * (2 + 2));  // two decisions and two events per run
  QCOMPARE(names, 2 * (kWorkers + 1));
  QVERIFY(sawWait);
}

void TestReport::heterogeneityCostAgainstTheReference() {
  auto run = [](const char* strategy, double ttt, const QString& specJson) {
    RunData r;
    r.name = QStringLiteral("hetero");
    r.strategy = QLatin1String(strategy);
    r.specJson = specJson;
    setSpecIdentity(r);
    if (!r.referenceOf.isEmpty()) r.name = QStringLiteral("hetero (homogeneous-equivalent reference)");
    r.summary[QStringLiteral("time_to_target_s")] = ttt;
    return r;
  };
  const QString bsp = QStringLiteral(R"({"name":"hetero","strategy":{"name":"bsp"}})");
  const QString paper = QStringLiteral(R"({"name":"hetero","strategy":{"name":"dasp","dasp":{"rule":"PAPER"}}})");
  const QString reference = QStringLiteral(R"({"name":"hetero reference","strategy":{"name":"bsp"},"reference_of":"hetero"})");
  const std::vector<RunData> runs{run("bsp", 10, bsp), run("dasp", 6, paper), run("bsp", 4, reference),
                                  run("bsp", 6, reference)};
  QCOMPARE(runs[1].label, QStringLiteral("dasp-r"));
  QCOMPARE(runs[2].label, QStringLiteral("reference"));
  QCOMPARE(runs[2].referenceOf, QStringLiteral("hetero"));
  const std::vector<RunFigures> figs = runFigures(runs);
  QCOMPARE(*figs[0].heterogeneityCost, 2.0);  // 10 / the references' mean 5
  QCOMPARE(*figs[1].heterogeneityCost, 1.2);
  QCOMPARE(*figs[2].heterogeneityCost, 0.8);
  QVERIFY(std::abs(*figs[1].speedupVsBsp - 10.0 / 6.0) < 1e-12);  // against BSP of its own experiment
  // The reference runs are a group of their own in the per-strategy table, not BSP.
  const QString path = m_dir.filePath(QStringLiteral("cost.html"));
  QVERIFY(writeHtmlReport(runs, path).isOk());
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QString html = QString::fromUtf8(f.readAll());
  QVERIFY(html.contains(QStringLiteral("<th>heterogeneity cost</th>")));
  QVERIFY2(html.contains(QStringLiteral("<td class=\"l\">reference</td><td>2</td>")), qPrintable(html));
  QVERIFY(html.contains(QStringLiteral("<td class=\"l\">dasp-r</td><td>1</td>")));
}

void TestReport::htmlHasSummaryAndImages() {
  const QString path = m_dir.filePath(QStringLiteral("out.html"));
  const Status s = writeHtmlReport(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QString html = QString::fromUtf8(f.readAll());
  QVERIFY(html.startsWith(QStringLiteral("<!DOCTYPE html>")));
  QVERIFY(html.contains(QStringLiteral("<table class=\"summary\"")));
  QVERIFY(html.contains(QStringLiteral("time to target (s)")));
  QVERIFY(html.contains(QStringLiteral("speedup vs BSP")));
  QVERIFY(html.contains(QStringLiteral("PER_GRADIENT")));
  QVERIFY(html.contains(QStringLiteral("crash injected")));        // the event table
  QVERIFY(QString(html).remove(QChar(0x200B)).contains(QStringLiteral("stop.target_accuracy")));  // the spec
  QVERIFY(html.contains(QStringLiteral("<img src=\"data:image/png;base64,")));
  // The embedded charts decode as real images.
  const QRegularExpression re(QStringLiteral("data:image/png;base64,([A-Za-z0-9+/=]+)"));
  int images = 0;
  for (auto it = re.globalMatch(html); it.hasNext();) {
    const QImage img = QImage::fromData(QByteArray::fromBase64(it.next().captured(1).toLatin1()), "PNG");
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 400);
    ++images;
  }
  QVERIFY(images >= 3 + 2 * 2);  // three convergence charts, lanes and bars per run
  // Speedup of the ASP run against the BSP run (2.0 s from its summary): the ASP summary
  // has no time to target, its evaluations reach 0.55 >= 0.5 at evaluation 3, t = 2.4 s.
  const std::vector<RunFigures> figs = runFigures(m_runs);
  QCOMPARE(figs.size(), std::size_t{2});
  QVERIFY(figs[0].timeToTarget && qFuzzyCompare(*figs[0].timeToTarget, 2.0));
  QVERIFY(figs[1].timeToTarget && qFuzzyCompare(*figs[1].timeToTarget, 2.4));
  QVERIFY(figs[1].speedupVsBsp && qFuzzyCompare(*figs[1].speedupVsBsp, 2.0 / 2.4));
  QVERIFY(figs[0].speedupVsBsp && qFuzzyCompare(*figs[0].speedupVsBsp, 1.0));
  QCOMPARE(figs[1].lrConvention, QStringLiteral("PER_GRADIENT"));
}

void TestReport::htmlHasFaultsAndRecovery() {
  const QString path = m_dir.filePath(QStringLiteral("faults.html"));
  const Status s = writeHtmlReport(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QString html = QString::fromUtf8(f.readAll());
  QVERIFY(html.contains(QStringLiteral("<h2>Faults and recovery</h2>")));
  QVERIFY(html.contains(QStringLiteral("<table class=\"recovery\"")));
  QVERIFY(html.contains(QStringLiteral("back to pre-fault (s)")));
  QVERIFY(html.contains(QStringLiteral("<td class=\"l\">0: kill server</td>")));
  QVERIFY(html.contains(QStringLiteral("<td>1/1 never</td>")));
  QVERIFY(html.contains(QStringLiteral("restored checkpoint v10 &lt;ok&gt;")));  // the detail, escaped
  QVERIFY(html.contains(QStringLiteral("<table class=\"faults\"")));
  QVERIFY(html.contains(QStringLiteral("<td class=\"l\">1: pause worker-1</td><td>3.00</td>")));
  QVERIFY(html.contains(QStringLiteral("<td>20 → 10</td>")));
  QVERIFY(html.contains(QStringLiteral("<td>never</td>")));
  QVERIFY(html.contains(QStringLiteral("mean ± sample std")));

  // The groups: the ASP run only, its worker count from its lanes.
  const std::vector<RunFaults> drills = runFaults(m_runs);
  QCOMPARE(drills.size(), std::size_t{1});
  QCOMPARE(drills[0].runId, m_ids[1]);
  QCOMPARE(drills[0].recovery, std::string("checkpoint"));
  QCOMPARE(drills[0].workers, kWorkers);
  QCOMPARE(drills[0].finalAccuracy, 0.85);
  QCOMPARE(drills[0].faults.size(), std::size_t{2});

  // No section when no run has faults.
  const QString plain = m_dir.filePath(QStringLiteral("nofaults.html"));
  QVERIFY(writeHtmlReport({m_runs[0]}, plain).isOk());
  QFile p(plain);
  QVERIFY(p.open(QIODevice::ReadOnly));
  QVERIFY(!QString::fromUtf8(p.readAll()).contains(QStringLiteral("Faults and recovery")));
}

void TestReport::pdfRendersWithPdftoppm() {
  const QString path = m_dir.filePath(QStringLiteral("out.pdf"));
  const Status s = writePdfReport(m_runs, path);
  QVERIFY2(s.isOk(), s.message().c_str());
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QVERIFY(f.read(5).startsWith("%PDF"));
  const QString pdftoppm = QStandardPaths::findExecutable(QStringLiteral("pdftoppm"));
  if (pdftoppm.isEmpty()) QSKIP("pdftoppm is not installed (Debian package poppler-utils): PDF not rendered");
  QProcess p;
  const QString prefix = m_dir.filePath(QStringLiteral("page"));
  p.start(pdftoppm, {QStringLiteral("-png"), QStringLiteral("-r"), QStringLiteral("40"), QStringLiteral("-f"),
                     QStringLiteral("1"), QStringLiteral("-l"), QStringLiteral("1"), path, prefix});
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 0);
  const QStringList pngs = QDir(m_dir.path()).entryList({QStringLiteral("page*.png")});
  QCOMPARE(pngs.size(), 1);
  const QImage page(m_dir.filePath(pngs.front()));
  QVERIFY(!page.isNull());
  QVERIFY(page.width() > page.height());  // A4 landscape: the summary table is wide
}

void TestReport::unwritablePathsFailWithTheName() {
  const QString dir = m_dir.filePath(QStringLiteral("missing-dir"));
  for (const QString& name : {QStringLiteral("x.csv"), QStringLiteral("x.trace.json"), QStringLiteral("x.html"),
                              QStringLiteral("x.pdf")}) {
    const QString path = dir + QLatin1Char('/') + name;
    const Status s = writeReport(m_runs, path);
    QVERIFY(!s.isOk());
    QVERIFY2(QString::fromStdString(s.message()).contains(path), s.message().c_str());
    QVERIFY(!QFile::exists(path));
  }
  const Status bad = writeReport(m_runs, m_dir.filePath(QStringLiteral("x.docx")));
  QVERIFY(!bad.isOk());
  QVERIFY(QString::fromStdString(bad.message()).contains(QStringLiteral("x.docx")));
}

void TestReport::emptyRunsExport() {
  const std::vector<RunData> none;
  std::vector<RunData> blank(1);
  QVERIFY(writeCsv(none, m_dir.filePath(QStringLiteral("none.csv"))).isOk());
  QCOMPARE(lines(m_dir.filePath(QStringLiteral("none.csv"))).size(), std::size_t{1});
  for (const QString& name : {QStringLiteral("blank.csv"), QStringLiteral("blank.trace.json"),
                              QStringLiteral("blank.html"), QStringLiteral("blank.pdf")}) {
    const Status s = writeReport(blank, m_dir.filePath(name));
    QVERIFY2(s.isOk(), s.message().c_str());
  }
  QVERIFY(writeHtmlReport(none, m_dir.filePath(QStringLiteral("none.html"))).isOk());
}

void TestReport::toolRejectsUnknownRunIds() {
  QProcess p;
  const QString out = m_dir.filePath(QStringLiteral("bad.html"));
  p.start(QString::fromLatin1(kReportTool),
          {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("%1,999,1234").arg(m_ids[0]),
           QStringLiteral("--out"), out});
  QVERIFY2(p.waitForFinished(60000), qPrintable(p.errorString()));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(QStringLiteral("999")) && err.contains(QStringLiteral("1234")), qPrintable(err));
  QVERIFY(!QFile::exists(out));
  // A missing store and an unknown format are bad input too.
  p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_dir.filePath(QStringLiteral("nope.sqlite")),
                                             QStringLiteral("--runs"), QStringLiteral("all"), QStringLiteral("--out"), out});
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 2);
  QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("nope.sqlite"))));
  p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"),
                                             QStringLiteral("--out"), m_dir.filePath(QStringLiteral("r.docx"))});
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 2);
}

void TestReport::toolWritesEachFormat() {
  for (const QString& name : {QStringLiteral("tool.csv"), QStringLiteral("tool.trace.json"), QStringLiteral("tool.html"),
                              QStringLiteral("tool.pdf")}) {
    QProcess p;
    const QString out = m_dir.filePath(name);
    p.start(QString::fromLatin1(kReportTool),
            {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"), QStringLiteral("--out"), out});
    QVERIFY2(p.waitForFinished(60000), qPrintable(p.errorString()));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(QFileInfo(out).size() > 100);
  }
  // A write failure exits 1, naming the file.
  QProcess p;
  const QString out = m_dir.filePath(QStringLiteral("missing-dir/tool.csv"));
  p.start(QString::fromLatin1(kReportTool),
          {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QString::number(m_ids[1]), QStringLiteral("--out"), out});
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 1);
  QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(out));
}

void TestReport::toolWritesEachChart_data() {
  QTest::addColumn<QString>("chart");
  QTest::addColumn<QString>("ext");
  for (const char* chart : {"convergence", "loss", "time-to-target", "lanes", "staleness"}) {
    for (const char* ext : {"png", "svg"}) {
      QTest::addRow("%s.%s", chart, ext) << QString::fromLatin1(chart) << QString::fromLatin1(ext);
    }
  }
}

// dasp-report --chart NAME writes a real image: a PNG that decodes at the chart's size, an
// SVG that parses and draws something.
void TestReport::toolWritesEachChart() {
  QFETCH(QString, chart);
  QFETCH(QString, ext);
  const QString out = m_dir.filePath(QStringLiteral("%1.%2").arg(chart, ext));
  QProcess p;
  p.start(QString::fromLatin1(kReportTool), {QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"),
                                             QStringLiteral("--chart"), chart, QStringLiteral("--out"), out});
  QVERIFY2(p.waitForFinished(60000), qPrintable(p.errorString()));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  QFile file(out);
  QVERIFY(file.open(QIODevice::ReadOnly));
  const QByteArray bytes = file.readAll();
  // Two runs: the lanes and the histograms are stacked, one per run under its title.
  const bool stacked = chart == QLatin1String("lanes") || chart == QLatin1String("staleness");
  if (ext == QLatin1String("png")) {
    QImage image;
    QVERIFY(image.loadFromData(bytes, "PNG"));
    QCOMPARE(image.width(), 960);
    QVERIFY2(image.height() >= (stacked ? 2 * 60 : 300), qPrintable(QString::number(image.height())));
    // Not a blank canvas: some pixels are neither white nor the frame's grey.
    int ink = 0;
    for (int y = 0; y < image.height(); y += 2) {
      for (int x = 0; x < image.width(); x += 2) ink += qGray(image.pixel(x, y)) < 128 ? 1 : 0;
    }
    QVERIFY2(ink > 200, qPrintable(QString::number(ink)));
  } else {
    QXmlStreamReader xml(bytes);
    int drawn = 0;
    while (!xml.atEnd()) {
      xml.readNext();
      if (xml.isStartElement() && (xml.name() == QLatin1String("path") || xml.name() == QLatin1String("polyline") ||
                                   xml.name() == QLatin1String("rect") || xml.name() == QLatin1String("text"))) {
        ++drawn;
      }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY2(drawn > 10, qPrintable(QString::number(drawn)));
    QSvgRenderer renderer(bytes);
    QVERIFY(renderer.isValid());
    QCOMPARE(renderer.viewBoxF().width(), 960.0);
  }
}

void TestReport::toolRejectsBadCharts() {
  auto run = [&](const QStringList& extra, const QString& out) {
    QProcess p;
    p.start(QString::fromLatin1(kReportTool),
            QStringList{QStringLiteral("--db"), m_db, QStringLiteral("--runs"), QStringLiteral("all"), QStringLiteral("--out"), out} +
                extra);
    if (!p.waitForFinished(60000)) return std::make_pair(-1, QString());
    return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
  };
  const QString png = m_dir.filePath(QStringLiteral("bad.png"));
  auto [code, err] = run({QStringLiteral("--chart"), QStringLiteral("pie")}, png);
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("pie")) && err.contains(QStringLiteral("time-to-target")), qPrintable(err));
  std::tie(code, err) = run({QStringLiteral("--chart"), QStringLiteral("loss")}, m_dir.filePath(QStringLiteral("loss.gif")));
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("loss.gif")), qPrintable(err));
  const QString unwritable = m_dir.filePath(QStringLiteral("missing-dir/loss.png"));
  std::tie(code, err) = run({QStringLiteral("--chart"), QStringLiteral("loss")}, unwritable);
  QCOMPARE(code, 1);
  QVERIFY2(err.contains(unwritable), qPrintable(err));
  QVERIFY(!QFile::exists(png));
  // --group-by takes "strategy" or a field that differs; anything else is named with the choices.
  std::tie(code, err) = run({QStringLiteral("--chart"), QStringLiteral("time-to-target"), QStringLiteral("--group-by"),
                             QStringLiteral("cluster.nonsense")}, png);
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("--group-by cluster.nonsense")) && err.contains(QStringLiteral("strategy")),
           qPrintable(err));
  QVERIFY(!QFile::exists(png));
  std::tie(code, err) = run({QStringLiteral("--chart"), QStringLiteral("time-to-target"), QStringLiteral("--group-by"),
                             QStringLiteral("strategy")}, png);
  QCOMPARE(code, 0);
  QVERIFY(!QImage(png).isNull());
  // Reports group too (tst_sweep), but a CSV has nothing to group.
  std::tie(code, err) = run({QStringLiteral("--group-by"), QStringLiteral("strategy")}, m_dir.filePath(QStringLiteral("r.html")));
  QCOMPARE(code, 0);
  std::tie(code, err) = run({QStringLiteral("--group-by"), QStringLiteral("strategy")}, m_dir.filePath(QStringLiteral("r.csv")));
  QCOMPARE(code, 2);
  QVERIFY2(err.contains(QStringLiteral("--group-by is for --chart and HTML or PDF reports")), qPrintable(err));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"
