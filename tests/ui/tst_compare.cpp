// SPDX-License-Identifier: MIT
// Tests of the workbench's live charts, replay, compare view and export, on real runs
// launched from the window with the CLI's runner: the node lanes fill while a short
// synthetic 3-worker run goes and its row appears in the runs view; two finished runs are
// compared (a summary row each, curves drawn); the export menu writes an HTML report with
// the summary table, a PDF that pdftoppm renders, the CSV and the Chrome trace; a replay's
// slider moves the cursor over the charts and the node table; bad input (nothing to
// export, a run that does not exist, an unwritable file, an empty run) is an error, never
// a crash. Run headless: QT_QPA_PLATFORM=offscreen. The nodes are `dasp` processes from
// the build tree (DASP_BIN).

#include "workbench_env.h"
#include "core/spec/spec.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/report.h"
#include "ui/charts/staleness_histogram.h"
#include "ui/runs/compare_panel.h"
#include "ui/live/live_charts.h"
#include "ui/live/live_panel.h"
#include "ui/main_window.h"
#include "ui/live/run_controller.h"
#include "ui/runs/run_table_model.h"
#include "ui/runs/runs_panel.h"
#include "ui/designer/spec_designer.h"

#include <QAction>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineSeries>
#include <QProcess>
#include <QPushButton>
#include <QSlider>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace dasp;
using dasp::ui::MainWindow;
using dasp::ui::ReportFormat;

namespace {


// A short synthetic run: logistic regression, 3 workers (one ×3 slower), 10 ms iterations.
ExperimentSpec shortSpec(const QString& strategy, double seconds) {
  auto spec = parseSpecJson(QStringLiteral(R"({
    "name": "gui-compare",
    "model": {"name": "logreg"},
    "dataset": {"name": "synthetic", "synthetic": {"train_count": 4096, "test_count": 512}},
    "batch_size": 32,
    "cluster": {"count": 3, "slowdowns": [1, 1, 3], "base_iteration_ms": 10},
    "strategy": {"name": "%1", "barrier_timeout_s": 1},
    "stop": {"max_seconds": %2, "target_accuracy": 0.5, "stop_at_target": false},
    "evaluation": {"every_s": 0.3, "every_steps": 1000000},
    "device": "cpu"
  })").arg(strategy).arg(seconds).toStdString(), "test");
  if (!spec) qFatal("bad test spec: %s", spec.message().c_str());
  return spec.value();
}

// Worker lanes of the live view that have drawn intervals.
int lanesWithIntervals(const ui::NodeLanes* lanes) {
  if (lanes->run() == nullptr) return 0;
  int n = 0;
  for (const auto& node : lanes->run()->nodes) n += node.intervals.empty() ? 0 : 1;
  return n;
}

// Points drawn by the chart's line series.
int drawnPoints(const ui::ConvergenceChart* chart) {
  int points = 0;
  for (QAbstractSeries* s : chart->chart()->series()) {
    if (auto* line = qobject_cast<QLineSeries*>(s); line && line->isVisible()) points += static_cast<int>(line->count());
  }
  return points;
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void liveLanesFillDuringARun();
  void compareTwoRuns();
  void exportHtmlPdfCsvTrace();
  void pdfRendersWithPdftoppm();
  void replaySliderMovesTheCursor();
  void badInputIsAnError();
  void cleanupTestCase();

 private:
  // Triggers File → Export Report → format and answers the file chooser with `path`.
  bool exportThroughDialog(ReportFormat format, const QString& path);
  // Launches a run and waits until it is over; returns its id (0 on failure).
  std::int64_t runToCompletion(const QString& strategy, double seconds, bool checkLanes);

  QTemporaryDir m_dir;
  std::unique_ptr<MainWindow> m_window;
  std::vector<std::int64_t> m_runIds;
};

void TestCompare::initTestCase() {
  QVERIFY2(setUpWorkbenchEnvironment(), kDasp);
  QVERIFY(m_dir.isValid());
  m_window = std::make_unique<MainWindow>(m_dir.filePath(QStringLiteral("runs.sqlite")));
  m_window->setUseNativeDialogs(false);
  m_window->resize(1400, 900);
  m_window->show();
  QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

std::int64_t TestCompare::runToCompletion(const QString& strategy, double seconds, bool checkLanes) {
  MainWindow& w = *m_window;
  // From the designer, as Launch does with the form's spec.
  w.designer()->setSpec(shortSpec(strategy, seconds));
  if (!w.launch()) {
    qWarning("not launched: %s", qPrintable(w.designer()->message()));
    return 0;
  }
  const int rowsBefore = w.runModel()->rowCount();
  if (checkLanes) {
    // Live rows appear in the node lanes while the run goes: one lane per worker, drawn.
    const ui::NodeLanes* lanes = w.livePanel()->charts()->lanes();
    [&] { QTRY_VERIFY2_WITH_TIMEOUT(lanesWithIntervals(lanes) >= 3, qPrintable(w.logText()), 30000); }();
    if (QTest::currentTestFailed()) return 0;
    [&] {
      QVERIFY(lanes->following());  // the last 20 s of the live run
      QVERIFY(w.controller()->isRunning());
      QVERIFY(lanes->laneRect(2).height() > 0);
      // Hovering the lane names the node and its state somewhere along it. The lanes'
      // window follows the data on the next refresh tick, so look until it has caught up.
      auto hasTip = [&] {
        const QRect lane = lanes->laneRect(0);
        for (int x = lane.left(); x <= lane.right(); ++x) {
          if (lanes->toolTipAt(QPoint(x, lane.center().y())).startsWith(QLatin1String("worker-0"))) return true;
        }
        return false;
      };
      QTRY_VERIFY_WITH_TIMEOUT(hasTip(), 10000);
      // The run's row in the runs view.
      QTRY_COMPARE_WITH_TIMEOUT(w.runModel()->rowCount(), rowsBefore + 1, 10000);
    }();
    if (QTest::currentTestFailed()) return 0;
  }
  [&] { QTRY_VERIFY2_WITH_TIMEOUT(!w.controller()->isRunning(), qPrintable(w.logText()), 60000); }();
  if (QTest::currentTestFailed()) return 0;
  if (w.liveData().status != QLatin1String("completed")) {
    qWarning("run ended %s:\n%s", qPrintable(w.liveData().status), qPrintable(w.logText()));
    return 0;
  }
  w.reload();
  return w.liveData().runId;
}

void TestCompare::liveLanesFillDuringARun() {
  const std::int64_t bsp = runToCompletion(QStringLiteral("bsp"), 3, true);
  QVERIFY(bsp > 0);
  m_runIds.push_back(bsp);
  // The charts got the whole run: curves drawn, bars and the histogram filled.
  ui::LiveCharts* charts = m_window->livePanel()->charts();
  QVERIFY(!m_window->liveData().evaluations.empty());
  QVERIFY(drawnPoints(charts->convergence()) > 0);
  QCOMPARE(int(charts->bars()->stats().size()), 3);
  std::int64_t applied = 0;
  for (auto c : charts->histogram()->counts()) applied += c;
  QVERIFY(applied > 0);
  // The metric and x-axis combos switch the live chart.
  charts->metricCombo()->setCurrentIndex(1);
  QCOMPARE(charts->convergence()->metric(), ui::ConvergenceChart::Metric::Loss);
  charts->xAxisCombo()->setCurrentIndex(1);
  QCOMPARE(charts->convergence()->xAxis(), ui::ConvergenceChart::XAxis::Updates);
  charts->metricCombo()->setCurrentIndex(0);
  charts->xAxisCombo()->setCurrentIndex(0);

  const std::int64_t asp = runToCompletion(QStringLiteral("asp"), 3, false);
  QVERIFY(asp > 0);
  m_runIds.push_back(asp);
}

void TestCompare::compareTwoRuns() {
  QCOMPARE(int(m_runIds.size()), 2);
  MainWindow& w = *m_window;
  QTRY_COMPARE(w.runModel()->rowCount(), 2);
  w.runTable()->selectAll();
  QAction* compare = w.runsPanel()->compareAction();
  QVERIFY(compare->isEnabled());
  compare->trigger();

  ui::ComparePanel* panel = w.comparePanel();
  QCOMPARE(int(panel->runs().size()), 2);
  QTableWidget* table = panel->summaryTable();
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(table->item(0, ui::ComparePanel::Run)->text().toLongLong(), m_runIds[0]);
  QCOMPARE(table->item(0, ui::ComparePanel::Strategy)->text(), QStringLiteral("bsp"));
  QCOMPARE(table->item(1, ui::ComparePanel::Strategy)->text(), QStringLiteral("asp"));
  QCOMPARE(table->item(0, ui::ComparePanel::Target)->text(), QStringLiteral("0.500"));
  QVERIFY(table->item(1, ui::ComparePanel::FinalAccuracy)->text().toDouble() > 0);
  QVERIFY(table->item(0, ui::ComparePanel::Updates)->text().toDouble() > 0);
  // BSP against itself: 1×, when it reached the target.
  const auto figs = panel->figures();
  if (figs[0].timeToTarget) {
    QVERIFY(figs[0].speedupVsBsp.has_value());
    QCOMPARE(*figs[0].speedupVsBsp, 1.0);
  }

  ui::ConvergenceChart* chart = panel->chart();
  QVERIFY(chart->chart()->series().size() >= 2);
  QVERIFY(drawnPoints(chart) > 0);
  // x = updates, samples; EMA keeps the raw trace (faint) beside the smoothed one.
  panel->xAxisCombo()->setCurrentIndex(2);
  QCOMPARE(chart->xAxis(), ui::ConvergenceChart::XAxis::Samples);
  QVERIFY(drawnPoints(chart) > 0);
  panel->xAxisCombo()->setCurrentIndex(1);
  QCOMPARE(chart->xAxis(), ui::ConvergenceChart::XAxis::Updates);
  const int unsmoothed = drawnPoints(chart);
  panel->smoothingSlider()->setValue(60);
  QCOMPARE(chart->smoothing(), 0.6);
  QVERIFY(drawnPoints(chart) > unsmoothed);  // the raw traces are drawn too
  // Grouped by strategy: a mean (and band) per strategy.
  panel->groupCheck()->setChecked(true);
  QVERIFY(chart->grouped());
  QVERIFY(drawnPoints(chart) > 0);
  panel->groupCheck()->setChecked(false);
  // Another target: the figures follow.
  panel->targetSpin()->setValue(0.3);
  for (const auto& f : panel->figures()) QCOMPARE(*f.target, 0.3);
  QCOMPARE(table->item(1, ui::ComparePanel::Target)->text(), QStringLiteral("0.300"));
  QCOMPARE(chart->target(), 0.3);
  panel->targetSpin()->setValue(0);  // back to the spec's
  QCOMPARE(chart->target(), 0.5);
}

bool TestCompare::exportThroughDialog(ReportFormat format, const QString& path) {
  m_window->exportAction(format)->trigger();
  QFileDialog* dialog = nullptr;
  for (QFileDialog* d : m_window->findChildren<QFileDialog*>(QStringLiteral("exportDialog"))) {
    if (d->isVisible()) dialog = d;
  }
  if (dialog == nullptr) return false;
  dialog->selectFile(path);
  // As the Save button does (accept() is protected): fileSelected, and the export runs now.
  QMetaObject::invokeMethod(dialog, "accept", Qt::DirectConnection);
  return QFileInfo::exists(path);
}

void TestCompare::exportHtmlPdfCsvTrace() {
  QVERIFY(!m_window->comparePanel()->runs().empty());
  const QString html = m_dir.filePath(QStringLiteral("report.html"));
  QVERIFY(exportThroughDialog(ReportFormat::Html, html));
  const QByteArray page = readAll(html);
  QVERIFY(page.contains("<table class=\"summary\""));
  QVERIFY(page.contains("time to target"));
  for (std::int64_t id : m_runIds) QVERIFY(page.contains(QStringLiteral("<td>%1</td>").arg(id).toUtf8()));
  QVERIFY(page.contains("data:image/png;base64,"));  // the charts
  QVERIFY2(m_window->statusBar()->currentMessage().contains(html), qPrintable(m_window->statusBar()->currentMessage()));

  const QString pdf = m_dir.filePath(QStringLiteral("report.pdf"));
  QVERIFY(exportThroughDialog(ReportFormat::Pdf, pdf));
  QVERIFY(readAll(pdf).startsWith("%PDF"));

  const QString csv = m_dir.filePath(QStringLiteral("series.csv"));
  QVERIFY(exportThroughDialog(ReportFormat::Csv, csv));
  const QByteArray rows = readAll(csv);
  QVERIFY(rows.startsWith("run_id,node,series,t_s,version,value\n"));
  QVERIFY(rows.contains(",worker-2,wait_s,"));

  const QString trace = m_dir.filePath(QStringLiteral("timeline.trace.json"));
  QVERIFY(exportThroughDialog(ReportFormat::ChromeTrace, trace));
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(readAll(trace), &error);
  QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
  QVERIFY(doc.object().value(QStringLiteral("traceEvents")).isArray());
}

void TestCompare::pdfRendersWithPdftoppm() {
  const QString pdftoppm = QStandardPaths::findExecutable(QStringLiteral("pdftoppm"));
  if (pdftoppm.isEmpty()) QSKIP("pdftoppm (poppler-utils) is not installed: the PDF is not rendered");
  const QString pdf = m_dir.filePath(QStringLiteral("report.pdf"));
  QVERIFY(QFileInfo::exists(pdf));
  QProcess render;
  render.start(pdftoppm, {QStringLiteral("-png"), QStringLiteral("-r"), QStringLiteral("40"), QStringLiteral("-f"),
                          QStringLiteral("1"), QStringLiteral("-l"), QStringLiteral("1"), pdf,
                          m_dir.filePath(QStringLiteral("page"))});
  QVERIFY(render.waitForFinished(60000));
  QVERIFY2(render.exitCode() == 0, render.readAllStandardError().constData());
  const QStringList pngs = QDir(m_dir.path()).entryList({QStringLiteral("page*.png")});
  QCOMPARE(pngs.size(), 1);
  QVERIFY(QFileInfo(m_dir.filePath(pngs.front())).size() > 1000);
}

void TestCompare::replaySliderMovesTheCursor() {
  QCOMPARE(int(m_runIds.size()), 2);
  MainWindow& w = *m_window;
  const int row = w.runModel()->rowOfRun(m_runIds[0]);
  QVERIFY(row >= 0);
  w.runTable()->selectRow(w.proxyModel()->mapFromSource(w.runModel()->index(row, 0)).row());
  QAction* replay = w.runsPanel()->replayAction();
  QVERIFY(replay->isEnabled());
  replay->trigger();

  ui::LivePanel* live = w.livePanel();
  ui::LiveCharts* charts = live->charts();
  QVERIFY(live->isReplay());
  QCOMPARE(live->run(), &w.replayData());
  QCOMPARE(w.replayData().runId, m_runIds[0]);
  const double end = w.replayData().endT;
  QVERIFY(end > 0);
  QVERIFY(!charts->lanes()->following());  // the whole run
  QCOMPARE(charts->cursorTime(), end);
  QVERIFY(!live->findChild<QPushButton*>(QStringLiteral("slowButton"))->isEnabled());  // actions are for live runs
  QTableWidget* nodes = live->nodeTable();
  QCOMPARE(nodes->rowCount(), 3 + 2);  // the workers, the server, the evaluator
  QCOMPARE(nodes->item(3, ui::LivePanel::Node)->text(), QStringLiteral("server"));
  QCOMPARE(nodes->item(4, ui::LivePanel::Node)->text(), QStringLiteral("evaluator"));
  const qint64 allIterations = nodes->item(0, ui::LivePanel::Iterations)->text().toLongLong();
  QVERIFY(allIterations > 0);

  QSlider* slider = charts->timeSlider();
  QVERIFY(slider->isVisible());
  slider->setValue(ui::LiveCharts::kSliderSteps / 2);
  const double half = end / 2;
  QVERIFY(std::abs(charts->cursorTime() - half) < 1e-9);
  QCOMPARE(charts->lanes()->cursorTime(), charts->cursorTime());
  QCOMPARE(charts->convergence()->cursorTime(), charts->cursorTime());
  const qint64 halfIterations = nodes->item(0, ui::LivePanel::Iterations)->text().toLongLong();
  QVERIFY2(halfIterations > 0 && halfIterations < allIterations,
           qPrintable(QStringLiteral("%1 of %2").arg(halfIterations).arg(allIterations)));
  std::int64_t barIterations = 0;
  for (const auto& s : charts->bars()->stats()) barIterations += s.iterations;
  QVERIFY(barIterations > 0);
  QVERIFY(live->summaryLabel()->text().contains(QStringLiteral("Replay of run %1").arg(m_runIds[0])));

  slider->setValue(0);  // before anything ran
  QCOMPARE(charts->cursorTime(), 0.0);
  QCOMPARE(nodes->item(0, ui::LivePanel::Iterations)->text(), QStringLiteral("0"));
  charts->setCursorTime(end * 10);  // clamped
  QCOMPARE(charts->cursorTime(), end);
  QCOMPARE(slider->value(), ui::LiveCharts::kSliderSteps);

  // Back to the live run (the last one launched).
  auto* showLive = charts->findChild<QPushButton*>(QStringLiteral("showLiveButton"));
  QVERIFY(showLive);
  QVERIFY(showLive->isEnabled());
  showLive->click();
  QVERIFY(!live->isReplay());
  QCOMPARE(live->run(), &w.liveData());
  QVERIFY(std::isnan(charts->lanes()->cursorTime()));
  QVERIFY(!slider->isVisible());
}

void TestCompare::badInputIsAnError() {
  QCOMPARE(int(m_runIds.size()), 2);
  MainWindow& w = *m_window;
  // A run that does not exist: replay and compare say so.
  QVERIFY(!w.openInLiveView(987654));
  QCOMPARE(w.compareRuns({987654}), 0);
  QVERIFY2(w.comparePanel()->message().contains(QStringLiteral("987654")), qPrintable(w.comparePanel()->message()));
  QCOMPARE(w.comparePanel()->summaryTable()->rowCount(), 0);
  QCOMPARE(drawnPoints(w.comparePanel()->chart()), 0);
  // Nothing compared, nothing selected: nothing to export, no dialog, no file.
  w.runTable()->clearSelection();
  QVERIFY(w.chooseExportFile(ReportFormat::Html) == nullptr);
  const QString nothing = m_dir.filePath(QStringLiteral("nothing.html"));
  QVERIFY(!w.exportReport(ReportFormat::Html, nothing));
  QVERIFY(!QFileInfo::exists(nothing));
  // An unwritable file: the error names it.
  QCOMPARE(w.compareRuns({m_runIds[0]}), 1);
  const QString bad = QStringLiteral("/nonexistent-dir/report.pdf");
  const Status st = w.exportReport(ReportFormat::Pdf, bad);
  QVERIFY(!st);
  QVERIFY2(QString::fromStdString(st.message()).contains(bad), st.message().c_str());
  // A run with no data at all, and none: the views draw nothing and do not crash.
  ui::RunData empty;
  w.livePanel()->showReplay(&empty);
  w.livePanel()->charts()->timeSlider()->setValue(500);
  QCOMPARE(w.livePanel()->nodeTable()->rowCount(), 0);
  w.livePanel()->showReplay(nullptr);
  w.livePanel()->charts()->setCursorTime(3);
  w.showLiveRun();
  std::vector<ui::RunData> runs(2);
  w.comparePanel()->setRuns(std::move(runs));
  QCOMPARE(w.comparePanel()->summaryTable()->rowCount(), 2);
  w.comparePanel()->groupCheck()->setChecked(true);
  w.comparePanel()->setRuns({});
  QCOMPARE(w.comparePanel()->summaryTable()->rowCount(), 0);
}

void TestCompare::cleanupTestCase() { m_window.reset(); }

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
