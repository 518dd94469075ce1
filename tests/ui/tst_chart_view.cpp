// SPDX-License-Identifier: MIT
// Tests of the charts' view and images (issue 17): the convergence chart's y axis fits
// the curves (and returns to the full range), a log axis for the loss, zoom by call and by
// mouse and its reset, PNG and SVG exports that decode, the time-to-target bars equal the
// runs' mean and std, and the compare view grouping curves and bars by a spec field. Run headless: QT_QPA_PLATFORM=offscreen.

#include "core/results/mean_std.h"
#include "ui/charts/chart_export.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/report.h"
#include "ui/charts/run_data.h"
#include "ui/charts/run_groups.h"
#include "ui/charts/series_colors.h"
#include "ui/charts/sweep_heatmap.h"
#include "ui/charts/time_to_target_bars.h"
#include "ui/runs/compare_panel.h"

#include <QAction>
#include <QCheckBox>
#include <QChart>
#include <QComboBox>
#include <QLineSeries>
#include <QPushButton>
#include <QFile>
#include <QImage>
#include <QLogValueAxis>
#include <QMenu>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QXmlStreamReader>
#include <QtTest>

#include <cmath>
#include <vector>

using namespace dasp::ui;

namespace {

// Accuracy rising from chance (0.1) to a plateau at `plateau` within the first second, then
// flat: 41 evaluations over 20 s. Loss 2 / (1 + t).
RunData plateauRun(std::int64_t id, const QString& strategy, double plateau, double target = 0.8) {
  RunData r;
  r.runId = id;
  r.strategy = strategy;
  r.name = QStringLiteral("view-test");
  r.status = QStringLiteral("completed");
  r.specJson = QStringLiteral(R"({"stop":{"target_accuracy":%1}})").arg(target);
  for (int i = 0; i <= 40; ++i) {
    const double t = i * 0.5;
    const double acc = i == 0 ? 0.1 : plateau - 0.01 * (i % 2);
    r.evaluations.push_back({t, i * 10, i * 640, 2.0 / (1 + t), acc});
  }
  r.endT = 20;
  return r;
}

void settle(ConvergenceChart& chart) { prepareWidget(chart, QSize(800, 400), [&] { chart.settleLayout(); }); }

QAction* actionNamed(QMenu* menu, const QString& prefix) {
  for (QAction* a : menu->actions()) {
    if (a->text().startsWith(prefix)) return a;
  }
  return nullptr;
}

}  // namespace

class TestChartView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void yAxisFitsTheCurvesAndTogglesToFull();
  void logAxisForTheLoss();
  void zoomAndReset();
  void mouseZoomAndDoubleClickReset();
  void crosshairFollowsTheMouse();
  void exportWritesPngAndSvg();
  void exportErrorsNameTheFile();
  void barsAreMeanAndStd();
  void barsHaveTheirCurvesColoursAndWholeLabels();
  void paperRuleIsDaspREverywhere();
  void barsMarkDivergedAndReference();
  void groupsBySpecField();
  void compareGroupsByFieldWithBars();
};

void TestChartView::yAxisFitsTheCurvesAndTogglesToFull() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  const RunData b = plateauRun(2, QStringLiteral("dasp"), 0.87);
  ConvergenceChart chart;
  chart.setRuns({&a, &b});
  chart.setTarget(0.8);
  settle(chart);
  QVERIFY(chart.fitY());
  // The plateau (0.84–0.87) and the target line (0.8) fill the axis; the rise from 0.1 is cut.
  QVERIFY2(chart.yRange().x() >= 0.7 && chart.yRange().x() <= 0.8, qPrintable(QString::number(chart.yRange().x())));
  QVERIFY2(chart.yRange().y() >= 0.87 && chart.yRange().y() <= 0.9, qPrintable(QString::number(chart.yRange().y())));
  auto* axis = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0));
  QVERIFY(axis != nullptr);
  QCOMPARE(axis->min(), chart.yRange().x());
  // The toggle (context menu) returns to 0–1.
  std::unique_ptr<QMenu> menu(chart.createContextMenu(nullptr));
  QAction* fit = actionNamed(menu.get(), QStringLiteral("Fit y-axis"));
  QVERIFY(fit != nullptr && fit->isCheckable() && fit->isChecked());
  fit->trigger();
  QVERIFY(!chart.fitY());
  QCOMPARE(chart.yRange(), QPointF(0, 1));
  QCOMPARE(axis->min(), 0.0);
  QCOMPARE(axis->max(), 1.0);
  chart.setFitY(true);
  QVERIFY(chart.yRange().x() >= 0.7);
}

void TestChartView::logAxisForTheLoss() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  ConvergenceChart chart;
  chart.setRuns({&a});
  chart.setMetric(ConvergenceChart::Metric::Loss);
  chart.setLogY(true);
  settle(chart);
  QVERIFY(chart.logYActive());
  const QList<QAbstractAxis*> vertical = chart.chart()->axes(Qt::Vertical);
  QCOMPARE(vertical.size(), 1);  // the linear axis is gone, not hidden behind
  auto* log = qobject_cast<QLogValueAxis*>(vertical.first());
  QVERIFY(log != nullptr);
  // 2/(1+t) over t in [2, 20] after the first tenth: 0.095–0.67, decades 0.01–1.
  QVERIFY2(log->min() > 0 && log->min() <= 0.1 && log->max() >= 0.6 && log->max() <= 1.0,
           qPrintable(QStringLiteral("%1 %2").arg(log->min()).arg(log->max())));
  for (QAbstractSeries* s : chart.chart()->series()) QVERIFY(s->attachedAxes().contains(log));
  // Accuracy stays linear; back to the loss, the log axis returns.
  chart.setMetric(ConvergenceChart::Metric::Accuracy);
  QVERIFY(qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0)) != nullptr);
  QCOMPARE(chart.chart()->axes(Qt::Vertical).size(), 1);
  chart.setMetric(ConvergenceChart::Metric::Loss);
  QVERIFY(qobject_cast<QLogValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0)) != nullptr);
}

void TestChartView::zoomAndReset() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  ConvergenceChart chart;
  chart.setRuns({&a});
  settle(chart);
  const QPointF fullX = chart.xRange();
  QCOMPARE(fullX, QPointF(0, 20));
  chart.zoomX(5, 10);
  QVERIFY(chart.isZoomed());
  QCOMPARE(chart.xRange(), QPointF(5, 10));
  // A live refresh keeps the window.
  chart.refresh();
  QCOMPARE(chart.xRange(), QPointF(5, 10));
  chart.zoomTo(5, 10, 0.8, 0.9);
  QCOMPARE(chart.yRange(), QPointF(0.8, 0.9));
  chart.panBy(0.5, 0);
  QCOMPARE(chart.xRange(), QPointF(7.5, 12.5));
  chart.zoomXAt(10, 2);
  QCOMPARE(chart.xRange(), QPointF(8.75, 11.25));
  std::unique_ptr<QMenu> menu(chart.createContextMenu(nullptr));
  QAction* reset = actionNamed(menu.get(), QStringLiteral("Reset zoom"));
  QVERIFY(reset != nullptr && reset->isEnabled());
  reset->trigger();
  QVERIFY(!chart.isZoomed());
  QCOMPARE(chart.xRange(), fullX);
}

void TestChartView::mouseZoomAndDoubleClickReset() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  ConvergenceChart chart;
  chart.setRuns({&a});
  settle(chart);  // never shown: the events go to the widget directly
  const QRectF plot = chart.chart()->plotArea();
  const QPoint from = chart.mapFromScene(QPointF(plot.left() + plot.width() * 0.25, plot.top() + 10));
  const QPoint to = chart.mapFromScene(QPointF(plot.left() + plot.width() * 0.5, plot.bottom() - 10));
  QTest::mousePress(chart.viewport(), Qt::LeftButton, {}, from);
  QTest::mouseMove(chart.viewport(), to);
  QTest::mouseRelease(chart.viewport(), Qt::LeftButton, {}, to);
  QVERIFY(chart.isZoomed());
  QVERIFY2(std::abs(chart.xRange().x() - 5) < 0.2 && std::abs(chart.xRange().y() - 10) < 0.2,
           qPrintable(QStringLiteral("%1 %2").arg(chart.xRange().x()).arg(chart.xRange().y())));
  // Wheel: zooms in further about the pointer.
  const double width = chart.xRange().y() - chart.xRange().x();
  QWheelEvent wheel(QPointF(to), chart.viewport()->mapToGlobal(QPointF(to)), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(chart.viewport(), &wheel);
  QVERIFY(chart.xRange().y() - chart.xRange().x() < width);
  QTest::mouseDClick(chart.viewport(), Qt::LeftButton, {}, to);
  QVERIFY(!chart.isZoomed());
  QCOMPARE(chart.xRange(), QPointF(0, 20));
}

void TestChartView::crosshairFollowsTheMouse() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  ConvergenceChart chart;
  chart.setRuns({&a});
  settle(chart);
  QVERIFY(!std::isfinite(chart.crosshair().y()));
  const QRectF plot = chart.chart()->plotArea();
  const QPoint at = chart.mapFromScene(QPointF(plot.left() + plot.width() * 0.5, plot.top() + plot.height() * 0.25));
  auto hover = [&](const QPoint& pos) {
    QMouseEvent move(QEvent::MouseMove, QPointF(pos), chart.viewport()->mapToGlobal(QPointF(pos)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(chart.viewport(), &move);
  };
  hover(at);
  // Halfway along x (0–20 s) and a quarter down y: the values at the mouse, in axis units.
  const QPointF v = chart.crosshair();
  QVERIFY2(std::abs(v.x() - 10) < 0.2, qPrintable(QString::number(v.x())));
  const QPointF y = chart.yRange();
  const double expected = y.y() - 0.25 * (y.y() - y.x());
  QVERIFY2(std::abs(v.y() - expected) < 0.02 * (y.y() - y.x()), qPrintable(QStringLiteral("%1 vs %2").arg(v.y()).arg(expected)));
  // The crosshair and its read-outs are drawn without fault over the plot.
  QVERIFY(!chart.grab().toImage().isNull());
  // Outside the plot, and after the mouse leaves: none.
  hover(chart.mapFromScene(QPointF(plot.left() - 20, plot.top() + 5)));
  QVERIFY(!std::isfinite(chart.crosshair().y()));
  hover(at);
  QVERIFY(std::isfinite(chart.crosshair().y()));
  QEvent leave(QEvent::Leave);
  QApplication::sendEvent(chart.viewport(), &leave);
  QVERIFY(!std::isfinite(chart.crosshair().y()));
}

void TestChartView::exportWritesPngAndSvg() {
  const RunData a = plateauRun(1, QStringLiteral("bsp"), 0.85);
  ConvergenceChart chart;
  chart.setRuns({&a});
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString png = dir.filePath(QStringLiteral("c.png"));
  const QString svg = dir.filePath(QStringLiteral("c.svg"));
  const ChartPart part{&chart, QSize(640, 360), [&] { chart.settleLayout(); }};
  QVERIFY(writeChartImage({part}, png));
  QVERIFY(writeChartImage({part}, svg, QStringLiteral("test chart")));
  QImage image;
  QVERIFY(image.load(png, "PNG"));
  QCOMPARE(image.size(), QSize(640, 360));
  // Not blank: the curve's colour is somewhere.
  int blue = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) blue += image.pixelColor(x, y) == QColor(0x00, 0x72, 0xB2) ? 1 : 0;
  }
  QVERIFY2(blue > 50, qPrintable(QString::number(blue)));
  QFile f(svg);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray xml = f.readAll();
  QXmlStreamReader reader(xml);
  int paths = 0;
  while (!reader.atEnd()) {
    reader.readNext();
    if (reader.isStartElement() && (reader.name() == QLatin1String("path") || reader.name() == QLatin1String("polyline"))) ++paths;
  }
  QVERIFY2(!reader.hasError(), qPrintable(reader.errorString()));
  QVERIFY2(paths > 5, qPrintable(QString::number(paths)));
  QVERIFY(xml.contains("test chart"));
  QSvgRenderer renderer(xml);
  QVERIFY(renderer.isValid());
  QCOMPARE(renderer.viewBoxF(), QRectF(0, 0, 640, 360));
}

void TestChartView::exportErrorsNameTheFile() {
  ConvergenceChart chart;
  const ChartPart part{&chart, QSize(100, 100), {}};
  const dasp::Status bad = writeChartImage({part}, QStringLiteral("/tmp/x.gif"));
  QVERIFY(!bad);
  QVERIFY(QString::fromStdString(bad.message()).contains(QStringLiteral("x.gif")));
  const dasp::Status unwritable = writeChartImage({part}, QStringLiteral("/nonexistent-dir/c.png"));
  QVERIFY(!unwritable);
  QVERIFY(QString::fromStdString(unwritable.message()).contains(QStringLiteral("/nonexistent-dir/c.png")));
}

void TestChartView::barsAreMeanAndStd() {
  // Three bsp runs reaching 0.8 at 1.0, 1.5 and 3.0 s; two dasp runs at 0.5 and 1.0 s.
  std::vector<RunData> runs;
  const std::vector<std::pair<QString, double>> reach = {
      {QStringLiteral("bsp"), 1.0}, {QStringLiteral("bsp"), 1.5}, {QStringLiteral("bsp"), 3.0},
      {QStringLiteral("dasp"), 0.5}, {QStringLiteral("dasp"), 1.0}};
  for (std::size_t i = 0; i < reach.size(); ++i) {
    RunData r = plateauRun(static_cast<std::int64_t>(i + 1), reach[i].first, 0.85);
    for (Evaluation& e : r.evaluations) e.accuracy = e.t >= reach[i].second ? 0.85 : 0.5;
    runs.push_back(r);
  }
  const std::vector<RunFigures> figs = runFigures(runs);
  const TargetBars data = timeToTargetBars(runs, figs, groupLabels(runs, strategyGroupKey()));
  QCOMPARE(data.bars.size(), std::size_t(2));
  QCOMPARE(data.target, QStringLiteral("0.8"));
  const dasp::MeanStd bsp = dasp::meanStd({1.0, 1.5, 3.0});
  QCOMPARE(data.bars[0].label, QStringLiteral("bsp"));
  QCOMPARE(data.bars[0].runs, 3);
  QCOMPARE(*data.bars[0].mean, bsp.mean);
  QCOMPARE(*data.bars[0].sd, bsp.sd);
  QCOMPARE(*data.bars[1].mean, 0.75);
  QVERIFY(std::abs(*data.bars[1].sd - std::sqrt(0.125)) < 1e-12);
  // Drawn: the bar's top at the mean, the error bar's ends at mean ± sd.
  TimeToTargetBars widget;
  widget.setBars(data);
  widget.resize(600, 300);
  for (int i = 0; i < 2; ++i) {
    const TargetBar& b = data.bars[static_cast<std::size_t>(i)];
    const TimeToTargetBars::BarShape s = widget.barShape(i);
    QVERIFY(std::abs(widget.secondsAt(s.bar.top()) - *b.mean) < 1e-9);
    QVERIFY(std::abs(widget.secondsAt(s.errorTop) - (*b.mean + *b.sd)) < 1e-9);
    QVERIFY(std::abs(widget.secondsAt(s.errorBottom) - (*b.mean - *b.sd)) < 1e-9);
    QVERIFY(std::abs(widget.secondsAt(s.bar.bottom())) < 1e-9);
  }
  QVERIFY(widget.barShape(2).bar.isEmpty());
  const QImage image = renderWidget(widget, QSize(600, 300));
  QVERIFY(image.pixelColor(widget.barShape(0).bar.center().toPoint()) != QColor(Qt::white));
}

// A bar has its curve's colour, grouped (the reference counts as a group, as the chart
// draws it) or not (its first run's), and labels too wide for their slots are slanted,
// whole, with the room under the plot to hold them.
void TestChartView::barsHaveTheirCurvesColoursAndWholeLabels() {
  std::vector<RunData> runs;
  RunData reference = plateauRun(1, QStringLiteral("bsp"), 0.85);
  reference.referenceOf = QStringLiteral("view-test");
  reference.label = QStringLiteral("reference");
  runs.push_back(reference);
  const QStringList names = {QStringLiteral("dssp(3,15)"), QStringLiteral("backup(1)"), QStringLiteral("dssp(3,15)"),
                             QStringLiteral("ssp(3)"), QStringLiteral("dasp-r"), QStringLiteral("dasp"),
                             QStringLiteral("asp")};
  for (int i = 0; i < names.size(); ++i) {
    RunData r = plateauRun(i + 2, QStringLiteral("x"), 0.85);
    r.label = names[i];
    runs.push_back(r);
  }
  const std::vector<RunFigures> figs = runFigures(runs);
  const QStringList labels = groupLabels(runs, strategyGroupKey());
  const TargetBars grouped = timeToTargetBars(runs, figs, labels);
  QCOMPARE(grouped.bars.size(), std::size_t(6));
  QCOMPARE(grouped.bars[0].label, QStringLiteral("dssp(3,15)"));
  // The chart's own colour for the group's mean curve.
  ConvergenceChart chart;
  std::vector<const RunData*> pointers;
  for (const RunData& r : runs) pointers.push_back(&r);
  chart.setGrouped(true);
  chart.setRuns(pointers, labels);
  for (const TargetBar& bar : grouped.bars) {
    QColor curve;
    for (QAbstractSeries* series : chart.chart()->series()) {
      auto* line = qobject_cast<QLineSeries*>(series);
      if (line != nullptr && line->name().startsWith(bar.label + QStringLiteral(" (n="))) curve = line->pen().color();
    }
    QVERIFY2(curve.isValid(), qPrintable(bar.label));
    QCOMPARE(bar.color, curve);
  }
  QVERIFY(grouped.bars[0].color != grouped.bars[1].color);
  // A curve per run: the bar takes its first run's colour.
  const TargetBars perRun = timeToTargetBars(runs, figs, labels, false);
  QCOMPARE(perRun.bars[1].color, seriesColor(2));  // backup(1) is run index 2
  // Six bars in 360 px: slanted labels, with the room under the plot they need.
  TimeToTargetBars widget;
  widget.setBars(grouped);
  widget.resize(360, 300);
  const QFontMetrics fm(widget.font());
  const double below = 300 - widget.barShape(0).bar.bottom();
  QVERIFY2(below >= fm.horizontalAdvance(QStringLiteral("dssp(3,15)  2/2")) * std::sin(40 * M_PI / 180),
           qPrintable(QString::number(below)));
  const QImage image = renderWidget(widget, QSize(360, 300));
  const QColor drawn = image.pixelColor(widget.barShape(1).bar.center().toPoint());
  QVERIFY2(std::abs(drawn.hueF() - grouped.bars[1].color.hueF()) < 0.05,
           qPrintable(drawn.name() + QStringLiteral(" for ") + grouped.bars[1].color.name()));
  // Wide enough: the labels stay level, under the plot's usual margin.
  widget.resize(1200, 300);
  QCOMPARE(300 - widget.barShape(0).bar.bottom(), 52.0);
}

// A run of DASP's paper rule is "dasp-r" in the legend, the summary table, the bars and
// the sweep table alike, never "dasp" in one of them.
void TestChartView::paperRuleIsDaspREverywhere() {
  std::vector<RunData> runs;
  for (int i = 0; i < 2; ++i) {
    RunData r = plateauRun(i + 1, QStringLiteral("dasp"), 0.85);
    r.specJson = QStringLiteral(R"({"strategy":{"name":"dasp","dasp":{"rule":"PAPER"}},"cluster":{"count":%1},)"
                                R"("stop":{"target_accuracy":0.8}})")
                     .arg(4 * (i + 1));
    setSpecIdentity(r);
    runs.push_back(r);
  }
  QCOMPARE(runs[0].displayStrategy(), QStringLiteral("dasp-r"));
  ConvergenceChart chart;
  chart.setRuns({&runs[0], &runs[1]});
  QStringList legend;
  for (QAbstractSeries* series : chart.chart()->series()) {
    if (qobject_cast<QLineSeries*>(series) != nullptr && !series->name().isEmpty()) legend << series->name();
  }
  QCOMPARE(legend, QStringList({QStringLiteral("dasp-r #1"), QStringLiteral("dasp-r #2")}));
  const std::vector<RunFigures> figs = runFigures(runs);
  QCOMPARE(figs[0].strategy, QStringLiteral("dasp-r"));
  QCOMPARE(timeToTargetBars(runs, figs, groupLabels(runs, strategyGroupKey())).bars[0].label, QStringLiteral("dasp-r"));
  const SweepTable sweep = SweepTable::fromRuns(runs);
  QCOMPARE(sweep.rows.size(), std::size_t(2));
  for (const SweepRow& row : sweep.rows) QCOMPARE(row.strategy, QStringLiteral("dasp-r"));
}

void TestChartView::barsMarkDivergedAndReference() {
  std::vector<RunData> runs;
  RunData reached = plateauRun(1, QStringLiteral("asp"), 0.85);
  RunData diverged = plateauRun(2, QStringLiteral("asp"), 0.5);
  diverged.status = QStringLiteral("diverged");
  RunData never = plateauRun(3, QStringLiteral("ssp"), 0.5);
  RunData reference = plateauRun(4, QStringLiteral("bsp"), 0.85);
  reference.referenceOf = QStringLiteral("view-test");
  reference.label = QStringLiteral("reference");
  runs = {reached, diverged, never, reference};
  const std::vector<RunFigures> figs = runFigures(runs);
  const TargetBars data = timeToTargetBars(runs, figs, groupLabels(runs, strategyGroupKey()));
  QCOMPARE(data.bars.size(), std::size_t(2));  // the reference is a line, not a bar
  QCOMPARE(data.bars[0].diverged, 1);
  QCOMPARE(data.bars[0].times.size(), std::size_t(1));
  QVERIFY(!data.bars[0].sd);  // one run reached: no spread
  QCOMPARE(data.bars[1].notReached, 1);
  QVERIFY(!data.bars[1].mean);
  QCOMPARE(data.referenceRuns, 1);
  QVERIFY(data.reference.has_value());
  QCOMPARE(*data.reference, *figs[3].timeToTarget);
  TimeToTargetBars widget;
  widget.setBars(data);
  const QImage image = renderWidget(widget, QSize(600, 300));
  // The reference line is dashed green at its height.
  const int y = static_cast<int>(std::lround(widget.yOf(*data.reference)));
  int green = 0;
  for (int x = 0; x < image.width(); ++x) {
    for (int dy = -1; dy <= 1; ++dy) {
      const QColor c = image.pixelColor(x, y + dy);
      green += c.green() > 120 && c.red() < 80 && c.blue() < 160 ? 1 : 0;
    }
  }
  QVERIFY2(green > 100, qPrintable(QString::number(green)));
}

void TestChartView::groupsBySpecField() {
  std::vector<RunData> runs;
  for (int i = 0; i < 4; ++i) {
    RunData r = plateauRun(i + 1, QStringLiteral("dasp"), 0.85);
    r.specJson = QStringLiteral(R"({"strategy":{"name":"dasp"},"cluster":{"count":%1},"seed":%2})").arg(i < 2 ? 4 : 8).arg(i);
    runs.push_back(r);
  }
  const QStringList keys = groupKeys(runs);
  QVERIFY2(keys.contains(QStringLiteral("cluster.count")), qPrintable(keys.join(',')));
  QVERIFY(!keys.contains(QStringLiteral("seed")));
  const std::vector<RunGroup> groups = groupRuns(runs, QStringLiteral("cluster.count"));
  QCOMPARE(groups.size(), std::size_t(2));
  QCOMPARE(groups[0].label, QStringLiteral("cluster.count=4"));
  QCOMPARE(groups[1].members, (std::vector<std::size_t>{2, 3}));
  QCOMPARE(groupRuns(runs, strategyGroupKey()).size(), std::size_t(1));
}

void TestChartView::compareGroupsByFieldWithBars() {
  std::vector<RunData> runs;
  for (int i = 0; i < 4; ++i) {
    RunData r = plateauRun(i + 1, QStringLiteral("dasp"), 0.85);
    for (Evaluation& e : r.evaluations) e.accuracy = e.t >= 1.0 + i ? 0.85 : 0.5;  // reached at 1, 2, 3, 4 s
    r.specJson = QStringLiteral(R"({"strategy":{"name":"dasp"},"cluster":{"count":%1},"stop":{"target_accuracy":0.8}})")
                     .arg(i < 2 ? 4 : 16);
    runs.push_back(r);
  }
  ComparePanel panel;
  panel.setRuns(runs);
  QComboBox* key = panel.groupKeyCombo();
  QCOMPARE(key->currentText(), QStringLiteral("strategy"));
  QCOMPARE(panel.targetBars()->bars().bars.size(), std::size_t(1));  // one strategy
  const int field = key->findText(QStringLiteral("cluster.count"));
  QVERIFY(field > 0);
  key->setCurrentIndex(field);
  panel.groupCheck()->setChecked(true);
  const TargetBars& bars = panel.targetBars()->bars();
  QCOMPARE(bars.bars.size(), std::size_t(2));
  QCOMPARE(bars.bars[0].label, QStringLiteral("cluster.count=4"));
  QCOMPARE(*bars.bars[0].mean, 1.5);
  QCOMPARE(*bars.bars[1].mean, 3.5);
  QStringList names;
  for (QAbstractSeries* s : panel.chart()->chart()->series()) {
    if (qobject_cast<QLineSeries*>(s) != nullptr && !s->name().isEmpty()) names << s->name();
  }
  QVERIFY2(names.contains(QStringLiteral("cluster.count=16 (n=2)")), qPrintable(names.join(QStringLiteral(", "))));
  // The axis controls reach the chart.
  panel.fitYCheck()->setChecked(false);
  QCOMPARE(panel.chart()->yRange(), QPointF(0, 1));
  panel.chart()->zoomX(1, 2);
  panel.findChild<QPushButton*>(QStringLiteral("compareResetZoom"))->click();
  QVERIFY(!panel.chart()->isZoomed());
  // The same runs again keep the chosen key.
  panel.setRuns(runs);
  QCOMPARE(key->currentText(), QStringLiteral("cluster.count"));
}

QTEST_MAIN(TestChartView)
#include "tst_chart_view.moc"
