// SPDX-License-Identifier: MIT
// Tests of the chart widgets (ui/charts/): decimation, node lanes rendered offscreen to
// an image, decision tooltips, grouped convergence with a ± std band, per-node bars, the
// staleness histogram, and empty or NaN data. Run headless: QT_QPA_PLATFORM=offscreen.

#include "ui/charts/convergence_chart.h"
#include "ui/charts/decimate.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/staleness_histogram.h"
#include "ui/charts/run_data.h"

#include <QAreaSeries>
#include <QChart>
#include <QHelpEvent>
#include <QLineSeries>
#include <QToolTip>
#include <QValueAxis>
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

using namespace dasp::ui;

using RE = dasp::v1::RunEvent;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two workers with known states, and a third with 1000 tiny iterations, mostly COMPUTE.
RunData laneRun() {
  RunData r;
  r.runId = 1;
  r.strategy = QStringLiteral("dasp");
  NodeData& w0 = r.node(QStringLiteral("worker-0"));
  w0.intervals = {{0, 4, NodeState::Compute, Parallel::Sync},
                  {4, 6, NodeState::Wait, Parallel::Sync},
                  {6, 10, NodeState::Push, Parallel::Sync}};
  NodeData& w1 = r.node(QStringLiteral("worker-1"));
  w1.intervals = {{0, 10, NodeState::Pull, Parallel::Async}};
  NodeData& w2 = r.node(QStringLiteral("worker-2"));
  for (int i = 0; i < 1000; ++i) {
    const double t = i * 0.01;
    w2.intervals.push_back({t, t + 0.008, NodeState::Compute, Parallel::Sync});
    w2.intervals.push_back({t + 0.008, t + 0.01, NodeState::Wait, Parallel::Sync});
  }
  r.decisions.push_back({3.0, QStringLiteral("worker-1"), QStringLiteral("state_change SYNC->ASYNC"),
                         QStringLiteral("compute EMA 2.1x the fastest"), dasp::DecisionKind::StateChange});
  // A re-partition record: kept in the run, never a marker.
  r.decisions.push_back({5.0, QStringLiteral("cluster"), QStringLiteral("repartition"),
                         QStringLiteral("re-partitioned by compute time"), dasp::DecisionKind::Repartition});
  r.decisions.push_back({7.0, QStringLiteral("cluster"), QStringLiteral("barrier_timeout"), QStringLiteral("kappa 1.5"),
                         dasp::DecisionKind::BarrierTimeout});
  r.endT = 10;
  return r;
}

RunData evalRun(std::int64_t id, const QString& strategy, double offset, int count = 20) {
  RunData r;
  r.runId = id;
  r.strategy = strategy;
  for (int i = 0; i < count; ++i) {
    const double t = i * 0.5;
    r.evaluations.push_back({t, i * 10, i * 640, 2.0 / (1 + i), std::min(0.95, 0.1 + 0.04 * i + offset)});
  }
  r.endT = (count - 1) * 0.5;
  return r;
}

bool sameColor(const QImage& img, QPointF p, const QColor& c) {
  const QColor got = img.pixelColor(static_cast<int>(p.x()), static_cast<int>(p.y()));
  if (got.rgb() != c.rgb()) qWarning("pixel at (%g, %g) is %s, want %s", p.x(), p.y(), qPrintable(got.name()), qPrintable(c.name()));
  return got.rgb() == c.rgb();
}

}  // namespace

class TestCharts : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void decimationKeepsExtremesAndCaps();
  void decimationShortAndRanged();
  void lanesDrawStateColours();
  void outageLanesShowTheWorkSoFar();
  void lanesFollowAndWindow();
  void shardLanesShowApplyingAndServing();
  void legendWrapsToTheWidth();
  void decisionTooltip();
  void decisionStripMarksOnlyChanges();
  void groupedChartHasBand();
  void chartDecimatesLongSeries();
  void chartEventMarkerTooltip();
  void nodeBarsFlagStraggler();
  void nodeBarsShowBatchSharesAndSamples();
  void stalenessHistogramCounts();
  void emptyAndNaNDataDoNotCrash();
};

void TestCharts::decimationKeepsExtremesAndCaps() {
  std::vector<QPointF> pts;
  for (int i = 0; i < 100000; ++i) pts.emplace_back(i * 0.01, std::sin(i * 0.001));
  pts[31337].setY(50);
  pts[77777].setY(-50);
  pts[500].setY(kNaN);
  const int pixels = 200;
  const QList<QPointF> out = decimateMinMax(pts, pixels);
  QVERIFY(out.size() <= 2 * pixels + 2);
  QVERIFY(out.size() >= pixels);
  QCOMPARE(out.front(), pts.front());
  QCOMPARE(out.back(), pts.back());
  QVERIFY(out.contains(pts[31337]));
  QVERIFY(out.contains(pts[77777]));
  for (qsizetype i = 1; i < out.size(); ++i) QVERIFY(out[i - 1].x() < out[i].x());
  for (const QPointF& p : out) QVERIFY(std::isfinite(p.y()));
  // The envelope per pixel column: every column's max of the raw data is in the output.
  double maxY = -1e9, minY = 1e9;
  for (const QPointF& p : out) maxY = std::max(maxY, p.y()), minY = std::min(minY, p.y());
  QCOMPARE(maxY, 50.0);
  QCOMPARE(minY, -50.0);
}

void TestCharts::decimationShortAndRanged() {
  std::vector<QPointF> few{{0, 1}, {1, 2}, {2, kNaN}, {3, 0}};
  QCOMPARE(decimateMinMax(few, 100).size(), 3);
  QVERIFY(decimateMinMax(std::vector<QPointF>{}, 100).isEmpty());
  std::vector<QPointF> pts;
  for (int i = 0; i < 10000; ++i) pts.emplace_back(i, i % 7);
  // Visible [1000, 2000] on 50 pixels: the neighbours 999 and 2001 are kept, nothing further.
  const QList<QPointF> out = decimateMinMax(pts, 50, 1000, 2000);
  QVERIFY(out.size() <= 102);
  QCOMPARE(out.front().x(), 999.0);
  QCOMPARE(out.back().x(), 2001.0);
}

void TestCharts::lanesDrawStateColours() {
  const RunData run = laneRun();
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(900, 260);
  lanes.setWindow(0, 10);
  const QImage img = lanes.grab().toImage();
  QCOMPARE(img.width(), 900);
  auto at = [&](double t, int lane) { return QPointF(lanes.xForTime(t), lanes.laneRect(lane).center().y()); };
  QVERIFY(sameColor(img, at(2, 0), NodeLanes::stateColor(NodeState::Compute)));
  QVERIFY(sameColor(img, at(5, 0), NodeLanes::stateColor(NodeState::Wait)));
  QVERIFY(sameColor(img, at(8, 0), NodeLanes::stateColor(NodeState::Push)));
  QVERIFY(sameColor(img, at(5, 1), NodeLanes::stateColor(NodeState::Pull)));
  // Sub-pixel intervals merge into the state covering most of each pixel (80 % COMPUTE).
  for (double t : {1.0, 3.3, 5.55, 9.1}) QVERIFY(sameColor(img, at(t, 2), NodeLanes::stateColor(NodeState::Compute)));
  // The parallel-state strips.
  const QPointF strip0(lanes.xForTime(5), lanes.stripRect(0).center().y());
  const QPointF strip1(lanes.xForTime(5), lanes.stripRect(1).center().y());
  QVERIFY(sameColor(img, strip0, NodeLanes::parallelColor(Parallel::Sync)));
  QVERIFY(sameColor(img, strip1, NodeLanes::parallelColor(Parallel::Async)));
  // The palette has a distinct colour for each state.
  QSet<QRgb> colours;
  for (NodeState s : kNodeStates) colours.insert(NodeLanes::stateColor(s).rgb());
  QCOMPARE(colours.size(), static_cast<qsizetype>(kNodeStates.size()));
}

// A worker that trains on through a server outage (LOCAL): its lane is OFFLINE over each
// period it reported, and says how many local steps it had taken by then.
void TestCharts::outageLanesShowTheWorkSoFar() {
  RunData run;
  run.runId = 1;
  run.recovery = QStringLiteral("local");
  NodeData& w0 = run.node(QStringLiteral("worker-0"));
  w0.intervals = {{0, 2, NodeState::Compute, Parallel::Async},
                  {2, 3, NodeState::Offline, Parallel::None},
                  {3, 4.5, NodeState::Offline, Parallel::None},
                  {4.5, 10, NodeState::Compute, Parallel::Async}};
  w0.offlineSteps = {{3, 0, 10}, {4.5, 0, 24}};
  run.endT = 10;
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(900, 200);
  lanes.setWindow(0, 10);
  const QImage img = lanes.grab().toImage();
  const int y = lanes.laneRect(0).top() + 1;  // above a count's text
  QVERIFY(sameColor(img, QPointF(lanes.xForTime(2.5), y), NodeLanes::stateColor(NodeState::Offline)));
  QVERIFY(sameColor(img, QPointF(lanes.xForTime(4.0), y), NodeLanes::stateColor(NodeState::Offline)));
  QVERIFY(sameColor(img, QPointF(lanes.xForTime(6.0), y), NodeLanes::stateColor(NodeState::Compute)));
  const int mid = lanes.laneRect(0).center().y();
  const QString first = lanes.toolTipAt(QPoint(static_cast<int>(lanes.xForTime(2.2)), mid));
  QVERIFY2(first.contains(QStringLiteral("OFFLINE")) && first.contains(QStringLiteral("10 local steps")), qPrintable(first));
  const QString second = lanes.toolTipAt(QPoint(static_cast<int>(lanes.xForTime(4.2)), mid));
  QVERIFY2(second.contains(QStringLiteral("24 local steps")), qPrintable(second));
  // A stateless server's workers keep a backlog instead.
  run.recovery = QStringLiteral("stateless");
  const QString backlog = lanes.toolTipAt(QPoint(static_cast<int>(lanes.xForTime(4.2)), mid));
  QVERIFY2(backlog.contains(QStringLiteral("24 gradients in its backlog")), qPrintable(backlog));
}

// A sharded server's shards: a lane each above the workers', each period a column with
// its applying share from the bottom and its serving share above; the store's samples of
// one period (any order) make one period.
// The legend of a run with shards and OFFLINE periods is wider than a report's 960-px
// chart: it goes on in a second row, and its last entry ("serving") is drawn whole.
void TestCharts::legendWrapsToTheWidth() {
  RunData run = laneRun();
  QVERIFY(run.addShardSample(QStringLiteral("server"), "shard_period_s", 2.0, 2.0));
  run.nodes.front().offlineSteps = {{3, 0, 10}};
  NodeLanes lanes;
  lanes.setRun(&run);
  auto servingBoxIn = [&](int width) {
    lanes.resize(width, 300);
    const QImage img = lanes.grab().toImage();
    const QRgb serving = NodeLanes::shardLoadColor(false).rgb();
    for (int y = lanes.laneRect(static_cast<int>(run.nodes.size()) - 1).bottom() + 1; y < img.height(); ++y) {
      for (int x = 0; x + 9 < img.width(); ++x) {  // the box is 10 px wide
        if (img.pixel(x, y) == serving && img.pixel(x + 9, y) == serving) return true;
      }
    }
    return false;
  };
  QVERIFY(servingBoxIn(1600));
  const int oneRow = lanes.minimumSizeHint().height();
  QVERIFY(servingBoxIn(960));
  QVERIFY(lanes.minimumSizeHint().height() > oneRow);  // the second row has its room
}

void TestCharts::shardLanesShowApplyingAndServing() {
  RunData run = laneRun();
  for (const auto& [series, value] : {std::pair{"shard_apply_s", 0.6}, {"shard_serve_s", 0.3}, {"shard_period_s", 2.0}}) {
    QVERIFY(run.addShardSample(QStringLiteral("server"), series, 2.0, value));
  }
  QVERIFY(run.addShardSample(QStringLiteral("shard-1"), "shard_period_s", 2.0, 2.0));
  QVERIFY(run.addShardSample(QStringLiteral("shard-1"), "shard_serve_s", 2.0, 1.0));
  QVERIFY(run.addShardSample(QStringLiteral("shard-1"), "shard_apply_s", 6.0, 0.2));  // a later period
  QVERIFY(run.addShardSample(QStringLiteral("shard-1"), "shard_period_s", 6.0, 4.0));
  QVERIFY(!run.addShardSample(QStringLiteral("shard-1"), "wait_s", 6.0, 1.0));
  QCOMPARE(run.shards.size(), std::size_t{2});
  QCOMPARE(run.shards[0].name, QStringLiteral("server"));
  QCOMPARE(run.shards[1].load.size(), std::size_t{2});
  QCOMPARE(run.shards[1].load[1].t0, 2.0);
  QCOMPARE(run.nodes.size(), std::size_t{3});  // no worker lane for a shard
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(900, 300);
  lanes.setWindow(0, 10);
  const QImage img = lanes.grab().toImage();
  const QRect server = lanes.shardLaneRect(0), shard1 = lanes.shardLaneRect(1);
  QVERIFY(server.bottom() < shard1.top());
  QVERIFY(shard1.bottom() < lanes.stripRect(0).top());
  const int x = static_cast<int>(lanes.xForTime(1.0));
  // server, 0-2 s: 30 % applying from the bottom (3 of 10 rows), then 15 % serving (2).
  QVERIFY(sameColor(img, QPointF(x, server.bottom()), NodeLanes::shardLoadColor(true)));
  QVERIFY(sameColor(img, QPointF(x, server.bottom() - 4), NodeLanes::shardLoadColor(false)));
  QVERIFY(sameColor(img, QPointF(x, server.top()), QColor(0xF2, 0xF2, 0xF2)));
  // shard-1, 0-2 s: half serving, nothing applied; 2-6 s: 5 % applying.
  QVERIFY(sameColor(img, QPointF(x, shard1.bottom()), NodeLanes::shardLoadColor(false)));
  const int x4 = static_cast<int>(lanes.xForTime(4.0));
  QVERIFY(sameColor(img, QPointF(x4, shard1.bottom()), NodeLanes::shardLoadColor(true)));
  QVERIFY(sameColor(img, QPointF(x4, shard1.top()), QColor(0xF2, 0xF2, 0xF2)));
  const QString tip = lanes.toolTipAt(QPoint(x, server.center().y()));
  QVERIFY2(tip.contains(QStringLiteral("applying 30.0 %, serving 15.0 %")), qPrintable(tip));
  QVERIFY2(tip.contains(QStringLiteral("shard 0, which decides")), qPrintable(tip));
  // The worker lanes still draw their states below.
  QVERIFY(sameColor(img, QPointF(lanes.xForTime(2), lanes.laneRect(0).center().y()),
                    NodeLanes::stateColor(NodeState::Compute)));
}

void TestCharts::lanesFollowAndWindow() {
  RunData run = laneRun();
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(600, 200);
  lanes.setFollow(4);
  QVERIFY(lanes.following());
  QCOMPARE(lanes.windowStart(), 6.0);
  QCOMPARE(lanes.windowEnd(), 10.0);
  run.endT = 20;  // the live run grew
  lanes.refresh();
  QCOMPARE(lanes.windowEnd(), 20.0);
  QSignalSpy changed(&lanes, &NodeLanes::windowChanged);
  // A wheel notch zooms in around the mouse and leaves follow mode.
  const QPointF pos(lanes.xForTime(18), lanes.laneRect(0).center().y());
  QWheelEvent wheel(pos, lanes.mapToGlobal(pos), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(&lanes, &wheel);
  QCOMPARE(changed.count(), 1);
  QVERIFY(!lanes.following());
  QVERIFY(lanes.windowEnd() - lanes.windowStart() < 4.0);
  QVERIFY(lanes.windowStart() > 16.0 && lanes.windowEnd() <= 20.0);
  lanes.setCursor(18.5);
  QCOMPARE(lanes.cursorTime(), 18.5);
  lanes.setCursor(QCursor(Qt::CrossCursor));  // the widget's own cursor still works
  QVERIFY(!lanes.grab().isNull());
}

void TestCharts::decisionStripMarksOnlyChanges() {
  // The cluster lane marks the barrier timeout (t = 7) but not the re-partition record
  // (t = 5): neither a triangle nor a tooltip entry.
  const RunData run = laneRun();
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(900, 260);
  lanes.setWindow(0, 10);
  const QRect cluster = lanes.clusterLaneRect();
  const QImage image = lanes.grab().toImage();
  auto markedAt = [&](double t) {
    // The triangle's tip column, a few pixels under the lane's top.
    const int x = static_cast<int>(std::lround(lanes.xForTime(t)));
    for (int y = cluster.top() + 3; y <= cluster.top() + 8; ++y) {
      if (image.pixelColor(x, y) == QColor(0x22, 0x22, 0x22)) return true;
    }
    return false;
  };
  QVERIFY(markedAt(7));
  QVERIFY(!markedAt(5));
  const QPoint onRecord(static_cast<int>(lanes.xForTime(5)), cluster.center().y());
  QVERIFY2(!lanes.toolTipAt(onRecord).contains(QStringLiteral("repartition")), qPrintable(lanes.toolTipAt(onRecord)));
  // The record stays in the run (the store and the reports keep it).
  QCOMPARE(run.decisions.size(), std::size_t(3));
}

void TestCharts::decisionTooltip() {
  RunData run = laneRun();
  run.nodes[1].host = QStringLiteral("dasp-b");
  run.nodes[1].slurmStep = QStringLiteral("5.3");
  NodeLanes lanes;
  lanes.setRun(&run);
  lanes.resize(900, 260);
  lanes.setWindow(0, 10);
  const QPoint onDecision(static_cast<int>(lanes.xForTime(3)), lanes.laneRect(1).top() + 2);
  const QString tip = lanes.toolTipAt(onDecision);
  QVERIFY2(tip.contains(QStringLiteral("state_change SYNC->ASYNC")), qPrintable(tip));
  QVERIFY2(tip.contains(QStringLiteral("compute EMA 2.1x the fastest")), qPrintable(tip));
  QVERIFY(tip.contains(QStringLiteral("worker-1")));
  const QPoint onCluster(static_cast<int>(lanes.xForTime(7)), lanes.clusterLaneRect().center().y());
  QVERIFY(lanes.toolTipAt(onCluster).contains(QStringLiteral("barrier_timeout")));
  // Away from markers the tooltip names the lane's state.
  const QPoint onLane(static_cast<int>(lanes.xForTime(5)), lanes.laneRect(0).center().y());
  QVERIFY2(lanes.toolTipAt(onLane).contains(QStringLiteral("WAIT")), qPrintable(lanes.toolTipAt(onLane)));
  // A lane names the host and the Slurm step its node ran in, where the run had them.
  const QPoint onPlacedLane(static_cast<int>(lanes.xForTime(5)), lanes.laneRect(1).center().y());
  QVERIFY2(lanes.toolTipAt(onPlacedLane).contains(QStringLiteral("worker-1 on dasp-b, Slurm step 5.3")),
           qPrintable(lanes.toolTipAt(onPlacedLane)));
  QVERIFY2(!lanes.toolTipAt(onLane).contains(QStringLiteral(" on ")), qPrintable(lanes.toolTipAt(onLane)));
  // The real tooltip event shows it.
  lanes.show();
  QVERIFY(QTest::qWaitForWindowExposed(&lanes));
  QHelpEvent help(QEvent::ToolTip, onDecision, lanes.mapToGlobal(onDecision));
  QApplication::sendEvent(&lanes, &help);
  QTRY_VERIFY(QToolTip::text().contains(QStringLiteral("compute EMA 2.1x the fastest")));
  QToolTip::hideText();
}

void TestCharts::groupedChartHasBand() {
  std::vector<RunData> runs{evalRun(1, QStringLiteral("bsp"), 0.0), evalRun(2, QStringLiteral("bsp"), 0.05),
                            evalRun(3, QStringLiteral("bsp"), -0.05), evalRun(4, QStringLiteral("asp"), 0.02)};
  std::vector<const RunData*> ptrs;
  for (const RunData& r : runs) ptrs.push_back(&r);
  ConvergenceChart chart;
  chart.resize(800, 500);
  chart.setRuns(ptrs);
  // Ungrouped: one raw and one smoothed line per run, no band.
  QCOMPARE(chart.chart()->series().size(), 8);
  chart.setGrouped(true);
  QList<QAreaSeries*> bands;
  QList<QLineSeries*> means;
  for (QAbstractSeries* s : chart.chart()->series()) {
    if (auto* a = qobject_cast<QAreaSeries*>(s)) bands << a;
    else if (auto* l = qobject_cast<QLineSeries*>(s)) means << l;
  }
  QCOMPARE(bands.size(), 2);  // bsp and asp
  QCOMPARE(means.size(), 2);
  QAreaSeries* bsp = bands.front();
  QVERIFY(bsp->upperSeries()->count() > 10);
  QCOMPARE(bsp->upperSeries()->count(), bsp->lowerSeries()->count());
  double widest = 0;
  for (int i = 0; i < bsp->upperSeries()->count(); ++i) {
    const double gap = bsp->upperSeries()->at(i).y() - bsp->lowerSeries()->at(i).y();
    QVERIFY(gap >= 0);
    widest = std::max(widest, gap);
  }
  QVERIFY(widest > 0.05);  // seeds differ by ±0.05: std 0.05, band 0.1 wide
  QVERIFY(means.front()->name().contains(QStringLiteral("n=3")));
  // The lone asp run has a zero-width band.
  QAreaSeries* asp = bands.back();
  for (int i = 0; i < asp->upperSeries()->count(); ++i) {
    QCOMPARE(asp->upperSeries()->at(i).y(), asp->lowerSeries()->at(i).y());
  }
  chart.setSmoothing(0.9);
  chart.setXAxis(ConvergenceChart::XAxis::Samples);
  chart.setMetric(ConvergenceChart::Metric::Loss);
  chart.setTarget(0.5);
  chart.setCursor(3.0);
  QVERIFY(!chart.grab().isNull());
  chart.setGrouped(false);
  chart.setSmoothing(0.5);
  int visibleRaw = 0;
  for (QAbstractSeries* s : chart.chart()->series()) visibleRaw += s->isVisible() ? 1 : 0;
  QCOMPARE(visibleRaw, 8);  // raw traces shown behind the smoothed ones
}

void TestCharts::chartDecimatesLongSeries() {
  RunData run = evalRun(1, QStringLiteral("asp"), 0, 50000);
  ConvergenceChart chart;
  chart.resize(700, 400);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.setRuns({&run});
  QTRY_VERIFY(chart.chart()->plotArea().width() > 100);
  chart.refresh();
  const int plotW = static_cast<int>(chart.chart()->plotArea().width());
  for (QAbstractSeries* s : chart.chart()->series()) {
    auto* line = qobject_cast<QLineSeries*>(s);
    QVERIFY(line != nullptr);
    QVERIFY2(line->count() <= 2 * plotW + 2, qPrintable(QString::number(line->count())));
  }
}

void TestCharts::chartEventMarkerTooltip() {
  RunData run = evalRun(1, QStringLiteral("bsp"), 0);
  run.events.push_back({5.0, RE::FAULT, QStringLiteral("worker-1"), QStringLiteral("crash"), RE::CODE_UNSPECIFIED, {}});
  run.events.push_back({0.0, RE::NODE, QStringLiteral("worker-0"), QStringLiteral("UP: joined"), RE::NODE_UP, {}});
  ConvergenceChart chart;
  chart.resize(800, 450);
  chart.show();
  QVERIFY(QTest::qWaitForWindowExposed(&chart));
  chart.setRuns({&run});
  QTRY_VERIFY(chart.chart()->plotArea().width() > 100);
  chart.refresh();
  auto* axis = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Horizontal).first());
  QVERIFY(axis != nullptr);
  const QRectF plot = chart.chart()->mapRectToScene(chart.chart()->plotArea());
  const double x = plot.left() + (5.0 - axis->min()) / (axis->max() - axis->min()) * plot.width();
  const QPoint pos = chart.mapFromScene(QPointF(x, plot.bottom() - 4));
  const QString tip = chart.markerToolTipAt(pos);
  QVERIFY2(tip.contains(QStringLiteral("fault")) && tip.contains(QStringLiteral("crash")), qPrintable(tip));
  QVERIFY(chart.markerToolTipAt(chart.mapFromScene(QPointF(x, plot.top() + 10))).isEmpty());
  // The routine "UP: joined" gets no marker.
  const double x0 = plot.left() + (0.0 - axis->min()) / (axis->max() - axis->min()) * plot.width();
  QVERIFY(chart.markerToolTipAt(chart.mapFromScene(QPointF(x0, plot.bottom() - 4))).isEmpty());
}

void TestCharts::nodeBarsFlagStraggler() {
  RunData run;
  for (int n = 0; n < 4; ++n) {
    NodeData& node = run.node(QStringLiteral("worker-%1").arg(n));
    const int count = n == 3 ? 30 : 100;
    for (int i = 1; i <= count; ++i) {
      node.wait.push_back({10.0 * i / count, i, n == 3 ? 0.0 : 0.05});
      node.staleness.push_back({10.0 * i / count, i, static_cast<double>(n)});
    }
  }
  run.node(QStringLiteral("worker-0")).staleness.push_back({5, 1, kNaN});
  run.endT = 10;
  const std::vector<NodeStats> stats = NodeBars::computeStats(run, 0, 10);
  QCOMPARE(stats.size(), std::size_t{4});
  QCOMPARE(stats[0].throughput, 10.0);
  QCOMPARE(stats[3].throughput, 3.0);
  QVERIFY(stats[3].straggler);
  QVERIFY(!stats[0].straggler && !stats[1].straggler && !stats[2].straggler);
  // The score (core stragglerScores): 3 it/s against the fastest node's 10.
  QVERIFY(std::abs(stats[3].relativeScore - 0.3) < 1e-9);
  QCOMPARE(stats[3].score, stats[3].relativeScore);
  QCOMPARE(stats[0].score, 1.0);
  QCOMPARE(stats[0].meanWait, 0.05);
  QCOMPARE(stats[0].meanStaleness, 0.0);  // the NaN is left out
  QCOMPARE(stats[2].meanStaleness, 2.0);
  // The last 10 s of a run of 10 s is the whole run; a later window has no data.
  NodeBars bars;
  bars.setRun(&run);
  QCOMPARE(bars.stats().size(), std::size_t{4});
  QVERIFY(bars.stats()[3].straggler);
  bars.setWindow(20, 30);
  QCOMPARE(bars.stats()[0].iterations, std::int64_t{0});
  QVERIFY(std::isnan(bars.stats()[0].meanWait));
  QVERIFY(!bars.stats()[3].straggler);
  bars.resize(700, 200);
  QVERIFY(!bars.grab().isNull());
  // Equal nodes: no straggler.
  run.nodes.pop_back();
  for (const NodeStats& s : NodeBars::computeStats(run, 0, 10)) QVERIFY(!s.straggler);
}

// Under DASP's batch shares two nodes make the same iterations a second with different
// batches: the bars give each node's batch, its share and its samples a second, with a
// batch change mid-window counted at each iteration's batch; a run without the batch
// series falls back to the spec's batch.
void TestCharts::nodeBarsShowBatchSharesAndSamples() {
  RunData run;
  run.batchSize = 64;
  for (int n = 0; n < 2; ++n) {
    NodeData& node = run.node(QStringLiteral("worker-%1").arg(n));
    for (int i = 1; i <= 100; ++i) node.wait.push_back({0.1 * i, i, 0.0});  // 10 it/s
  }
  run.node(QStringLiteral("worker-0")).batch = {{0.1, 1, 96}};
  run.node(QStringLiteral("worker-1")).batch = {{0.1, 1, 48}, {5.05, 50, 32}};  // 32 from iteration 51
  run.endT = 10;
  const std::vector<NodeStats> stats = NodeBars::computeStats(run, 0, 10);
  QCOMPARE(stats[0].throughput, stats[1].throughput);  // the same it/s ...
  QCOMPARE(stats[0].samplesPerS, 960.0);               // ... and not the same samples/s
  QCOMPARE(stats[1].samplesPerS, (50 * 48 + 50 * 32) / 10.0);
  QCOMPARE(stats[0].batch, 96.0);
  QCOMPARE(stats[1].batch, 32.0);  // at the window's end
  QCOMPARE(stats[0].batchShare, 0.75);
  QCOMPARE(batchText(stats[1]), QStringLiteral("32 (25%)"));
  // Without the series: the spec's batch.
  run.node(QStringLiteral("worker-0")).batch.clear();
  run.node(QStringLiteral("worker-1")).batch.clear();
  const std::vector<NodeStats> plain = NodeBars::computeStats(run, 0, 10);
  QCOMPARE(plain[0].samplesPerS, 640.0);
  QCOMPARE(batchText(plain[0]), QStringLiteral("64 (50%)"));
}

void TestCharts::stalenessHistogramCounts() {
  RunData run;
  run.node(QStringLiteral("worker-0"));
  run.node(QStringLiteral("worker-1"));
  for (double v : {0.0, 0.0, 1.0, 3.0}) run.nodes[0].staleness.push_back({1, 1, v});
  for (double v : {3.0, 3.0, kNaN, -1.0, 1000.0}) run.nodes[1].staleness.push_back({1, 1, v});
  const std::vector<std::int64_t> counts = StalenessHistogram::histogram(run);
  QCOMPARE(counts.size(), std::size_t{StalenessHistogram::kMaxBins});
  QCOMPARE(counts[0], std::int64_t{2});
  QCOMPARE(counts[1], std::int64_t{1});
  QCOMPARE(counts[2], std::int64_t{0});
  QCOMPARE(counts[3], std::int64_t{3});
  QCOMPARE(counts[StalenessHistogram::kMaxBins - 1], std::int64_t{1});
  StalenessHistogram hist;
  hist.setRun(&run);
  QCOMPARE(hist.counts(), counts);
  hist.resize(500, 220);
  QVERIFY(!hist.grab().isNull());
}

void TestCharts::emptyAndNaNDataDoNotCrash() {
  RunData empty;
  RunData nan;
  nan.runId = 2;
  nan.evaluations.push_back({kNaN, 1, 1, kNaN, kNaN});
  nan.evaluations.push_back({1.0, 2, 2, 1.0, kNaN});
  nan.node(QStringLiteral("worker-0")).intervals.push_back({kNaN, 1.0, NodeState::Compute, Parallel::Sync});
  nan.node(QStringLiteral("worker-0")).intervals.push_back({0.5, kNaN, NodeState::Wait, Parallel::Sync});
  nan.node(QStringLiteral("worker-0")).wait.push_back({kNaN, 1, kNaN});
  nan.decisions.push_back({kNaN, QStringLiteral("worker-0"), QStringLiteral("drop 9"), QString(), dasp::DecisionKind::Drop});
  nan.endT = kNaN;

  for (const RunData* r : std::vector<const RunData*>{nullptr, &empty, &nan}) {
    NodeLanes lanes;
    lanes.resize(400, 150);
    lanes.setRun(r);
    lanes.refresh();
    QVERIFY(!lanes.grab().isNull());
    QVERIFY(lanes.toolTipAt(QPoint(200, 50)).isEmpty() || r != nullptr);
    lanes.setFollow(kNaN);
    lanes.setWindow(kNaN, 3);
    QVERIFY(!lanes.grab().isNull());
    NodeBars bars;
    bars.setRun(r);
    bars.resize(400, 100);
    QVERIFY(!bars.grab().isNull());
    StalenessHistogram hist;
    hist.setRun(r);
    hist.resize(400, 150);
    QVERIFY(!hist.grab().isNull());
  }
  ConvergenceChart chart;
  chart.resize(500, 300);
  chart.setRuns({});
  QVERIFY(!chart.grab().isNull());
  chart.setRuns({&empty, &nan, nullptr});
  chart.setGrouped(true);
  chart.setSmoothing(kNaN);
  chart.setCursor(kNaN);
  chart.setTarget(kNaN);
  chart.setXAxis(ConvergenceChart::XAxis::Updates);
  chart.refresh();
  QVERIFY(!chart.grab().isNull());
  chart.setGrouped(false);
  QVERIFY(!chart.grab().isNull());
}

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
