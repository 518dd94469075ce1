// SPDX-License-Identifier: MIT
// The PDF report's layout (issue 17): six runs of a suite shaped like the default one
// (the real spec of experiments/default.json, four workers, thousands of state intervals,
// policy decisions, a fault) fit in at most six landscape A4 pages, the spec is printed
// once with each run's differences, the time-to-target chart comes first, and the table
// headers break only between words. Measured on the layout (layoutPdfReport), not by
// parsing the PDF. Run headless: QT_QPA_PLATFORM=offscreen.

#include "ui/charts/report.h"
#include "ui/charts/report_html.h"
#include "ui/charts/run_data.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/sweep_heatmap.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextLayout>
#include <QtTest>

#include <cmath>
#include <vector>

using namespace dasp::ui;

namespace {

const QStringList kStrategies = {QStringLiteral("bsp"),  QStringLiteral("asp"),    QStringLiteral("ssp"),
                                 QStringLiteral("dssp"), QStringLiteral("backup"), QStringLiteral("dasp")};

// Run `i` of the suite: the default experiment's spec with its strategy, 40 s, 80
// evaluations, four workers each with 500 iterations of COMPUTE, PUSH and WAIT.
RunData suiteRun(int i, const QJsonObject& spec) {
  RunData r;
  r.runId = i + 1;
  r.name = QStringLiteral("default");
  r.strategy = kStrategies[i];
  r.engine = QStringLiteral("sim");
  r.status = QStringLiteral("completed");
  r.seed = 1;
  QJsonObject s = spec;
  s.remove(QStringLiteral("suite"));
  QJsonObject strategy;
  strategy.insert(QStringLiteral("name"), r.strategy);
  s.insert(QStringLiteral("strategy"), strategy);
  r.specJson = QString::fromUtf8(QJsonDocument(s).toJson(QJsonDocument::Compact));
  setSpecIdentity(r);
  for (int e = 0; e <= 80; ++e) {
    const double t = e * 0.5;
    r.evaluations.push_back({t, e * 20, e * 1280, 2.0 / (1 + t), 0.1 + 0.78 * (1 - std::exp(-t / (2.0 + i)))});
  }
  for (int w = 0; w < 4; ++w) {
    NodeData& n = r.node(QStringLiteral("worker-%1").arg(w));
    for (int k = 0; k < 500; ++k) {
      const double t = k * 0.08;
      n.intervals.push_back({t, t + 0.05, NodeState::Compute, Parallel::Sync});
      n.intervals.push_back({t + 0.05, t + 0.06, NodeState::Push, Parallel::Sync});
      n.intervals.push_back({t + 0.06, t + 0.08, NodeState::Wait, Parallel::Sync});
      n.staleness.push_back({t + 0.06, k, static_cast<double>((k + w) % (i + 1))});
      n.wait.push_back({t + 0.08, k, 0.02});
    }
    n.lastT = 40;
  }
  for (int d = 0; d < 200 * i; ++d) {
    r.decisions.push_back({d * 0.2, QStringLiteral("cluster"), QStringLiteral("repartition"), {},
                           dasp::DecisionKind::Repartition});
  }
  Event fault;
  fault.t = 20;
  fault.kind = dasp::v1::RunEvent::FAULT;
  fault.node = QStringLiteral("worker-3");
  fault.detail = QStringLiteral("pause 2 s");
  r.events.push_back(fault);
  r.endT = 40;
  return r;
}

std::vector<RunData> sixRuns() {
  QFile f(QStringLiteral(DASP_SOURCE_DIR "/experiments/default.json"));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read experiments/default.json");
  const QJsonObject spec = QJsonDocument::fromJson(f.readAll()).object();
  std::vector<RunData> runs;
  for (int i = 0; i < 6; ++i) runs.push_back(suiteRun(i, spec));
  return runs;
}

QString reportHtml(const std::vector<RunData>& runs) {
  const SweepTable sweep = SweepTable::fromRuns(runs);
  ReportPage page;
  page.compact = true;
  const QString html = buildReportHtml(runs, page, sweep, SweepAxes{}, strategyGroupKey(),
                                       [](const QString& name, const QImage&) { return name; });
  return QString(html).remove(QChar(0x200B));  // the spec's break opportunities
}

}  // namespace

class TestReportLayout : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sixRunsFitInSixLandscapePages();
  void specPrintedOnceWithDifferences();
  void timeToTargetComesFirst();
  void headersBreakBetweenWordsOnly();
  void blankRunLaysOut();
  void differingEngineGetsAColumn();
  void shardCountIsShownOnceOrAsAColumn();
};

void TestReportLayout::sixRunsFitInSixLandscapePages() {
  const std::vector<RunData> runs = sixRuns();
  auto layout = layoutPdfReport(runs);
  QVERIFY2(layout.isOk(), layout.message().c_str());
  QVERIFY(layout.value().landscape);  // the summary table has more than kPortraitColumns columns
  const int pages = layout.value().pageCount();
  QVERIFY2(pages >= 2 && pages <= 6, qPrintable(QString::number(pages)));
  QVERIFY(layout.value().doc->pageSize().width() > layout.value().doc->pageSize().height());
}

void TestReportLayout::specPrintedOnceWithDifferences() {
  const QString html = reportHtml(sixRuns());
  // A field every run shares appears once, in the spec table.
  QCOMPARE(html.count(QStringLiteral("optimizer.lr_convention")), 1);
  QCOMPARE(html.count(QStringLiteral(">batch_size<")), 1);
  // The differences: one row per run with its strategy.name.
  const int diff = html.indexOf(QStringLiteral("<table class=\"spec-diff\""));
  QVERIFY(diff > 0);
  const QString table = html.mid(diff, html.indexOf(QStringLiteral("</table>"), diff) - diff);
  QVERIFY(table.contains(QStringLiteral("<th class=\"l\">strategy.name</th>")));
  for (int i = 0; i < 6; ++i) {
    QVERIFY2(table.contains(QStringLiteral("<tr><td>%1</td><td>1</td><td class=\"l\">%2</td></tr>").arg(i + 1).arg(kStrategies[i])),
             qPrintable(table));
  }
  // No per-run JSON spec any more.
  QVERIFY(!html.contains(QStringLiteral("&quot;batch_size&quot;")));
}

void TestReportLayout::timeToTargetComesFirst() {
  const QString html = reportHtml(sixRuns());
  const int ttt = html.indexOf(QStringLiteral("<h2>Time to target</h2>"));
  QVERIFY(ttt > 0);
  QVERIFY(ttt < html.indexOf(QStringLiteral("<h2>Summary</h2>")));
  QVERIFY(html.indexOf(QStringLiteral("<h2>Heterogeneity cost</h2>")) > 0);
  QVERIFY(html.indexOf(QStringLiteral("<h2>Decisions and faults</h2>")) > 0);
  QVERIFY(html.contains(QStringLiteral("repartition ×1000")));  // the dasp run's 200 × 5 decisions
  QVERIFY(html.contains(QStringLiteral("20.0 s worker-3 pause 2 s")));
}

// Every line of a header cell of the summary table starts at a word boundary.
void TestReportLayout::headersBreakBetweenWordsOnly() {
  const std::vector<RunData> runs = sixRuns();
  auto layout = layoutPdfReport(runs);
  QVERIFY(layout.isOk());
  QTextDocument& doc = *layout.value().doc;
  doc.documentLayout();  // lays the document out
  const QStringList headers = {QStringLiteral("strategy"), QStringLiteral("status"), QStringLiteral("heterogeneity cost"),
                               QStringLiteral("mean staleness"), QStringLiteral("final accuracy")};
  int checked = 0;
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
    if (!headers.contains(b.text())) continue;
    const QTextLayout* l = b.layout();
    for (int i = 0; i < l->lineCount(); ++i) {
      const int start = l->lineAt(i).textStart();
      QVERIFY2(start == 0 || b.text().at(start - 1) == QLatin1Char(' '),
               qPrintable(QStringLiteral("'%1' broken at %2").arg(b.text()).arg(start)));
    }
    ++checked;
  }
  QVERIFY2(checked >= headers.size(), qPrintable(QString::number(checked)));
}

void TestReportLayout::blankRunLaysOut() {
  // A run with nothing in it (no spec, no evaluations, no nodes) still gets its pages:
  // the summary and the (empty) charts, no spec and no run grid images.
  std::vector<RunData> one(1);
  auto layout = layoutPdfReport(one);
  QVERIFY2(layout.isOk(), layout.message().c_str());
  const int pages = layout.value().pageCount();
  QVERIFY2(pages >= 1 && pages <= 2, qPrintable(QString::number(pages)));
}

void TestReportLayout::differingEngineGetsAColumn() {
  std::vector<RunData> runs = sixRuns();
  const int shared = summaryColumnCount(runFigures(runs));
  QVERIFY(reportHtml(runs).contains(QStringLiteral("All runs: experiment default, engine sim")));
  runs[2].engine = QStringLiteral("real");
  QCOMPARE(summaryColumnCount(runFigures(runs)), shared + 1);
  const QString html = reportHtml(runs);
  QVERIFY(html.contains(QStringLiteral("<th class=\"l\">engine</th>")));
  QVERIFY(html.contains(QStringLiteral("<td class=\"l\">real</td>")));
  QVERIFY(!html.contains(QStringLiteral("engine sim,")));
}

void TestReportLayout::shardCountIsShownOnceOrAsAColumn() {
  std::vector<RunData> runs = sixRuns();
  const int shared = summaryColumnCount(runFigures(runs));
  QVERIFY(reportHtml(runs).contains(QStringLiteral("engine sim, 1 server shard,")));
  QJsonObject spec = QJsonDocument::fromJson(runs[2].specJson.toUtf8()).object();
  spec.insert(QStringLiteral("ps"), QJsonObject{{QStringLiteral("shards"), 4}});
  runs[2].specJson = QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Compact));
  QCOMPARE(runFigures(runs)[2].shards, 4);
  QCOMPARE(summaryColumnCount(runFigures(runs)), shared + 1);
  const QString html = reportHtml(runs);
  QVERIFY(html.contains(QStringLiteral("<th>server shards</th>")));
  QVERIFY(html.contains(QStringLiteral("<td>4</td>")));
  QVERIFY(!html.contains(QStringLiteral("1 server shard,")));
}

QTEST_MAIN(TestReportLayout)
#include "tst_report_layout.moc"
