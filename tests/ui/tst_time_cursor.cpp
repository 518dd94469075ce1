// SPDX-License-Identifier: MIT
// The time cursor shared by the live view's charts (ui/live/live_charts.h): hovering the
// node lanes or the convergence chart moves one cursor over the lanes, the convergence
// chart and the per-node bars; leaving puts it back; in a replay a click moves the
// slider's cursor. Real mouse events on shown widgets. Run headless:
// QT_QPA_PLATFORM=offscreen.

#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/run_data.h"
#include "ui/live/live_charts.h"

#include <QApplication>
#include <QChart>
#include <QSlider>
#include <QtTest>

#include <cmath>

using namespace dasp::ui;

namespace {

// Two workers iterating once a second for 40 s; evaluations every 5 s (10 updates/s).
RunData run() {
  RunData r;
  r.runId = 3;
  r.status = QStringLiteral("completed");
  for (int w = 0; w < 2; ++w) {
    NodeData& n = r.node(QStringLiteral("worker-%1").arg(w));
    for (int i = 1; i <= 40; ++i) {
      n.intervals.push_back({i - 1.0, i - 0.3, NodeState::Compute, Parallel::Sync});
      n.intervals.push_back({i - 0.3, i * 1.0, NodeState::Wait, Parallel::Sync});
      n.wait.push_back({static_cast<double>(i), i, 0.3});
    }
  }
  for (int k = 1; k <= 8; ++k) r.evaluations.push_back({5.0 * k, 50 * k, 3200 * k, 1.0 / k, 0.1 * k});
  r.endT = 40;
  return r;
}

// The charts at 1000 × 700 in a window, once it is exposed (hover and clicks need one).
bool shownOnScreen(LiveCharts& charts) {
  charts.resize(1000, 700);
  charts.show();
  return QTest::qWaitForWindowExposed(&charts);
}

void leave(QWidget* w) {
  QEvent e(QEvent::Leave);
  QApplication::sendEvent(w, &e);
}

// A point on the convergence chart's plot at x-axis value `x`, in viewport coordinates.
QPoint onPlot(ConvergenceChart* chart, double x) {
  const QRectF plot = chart->chart()->mapRectToScene(chart->chart()->plotArea());
  for (int px = static_cast<int>(plot.left()) + 1; px < plot.right(); ++px) {
    const QPoint p = chart->mapFromScene(QPointF(px, plot.center().y()));
    if (chart->axisXAt(p) >= x) return p;
  }
  return {};
}

}  // namespace

class TestTimeCursor : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void hoverMovesTheCursorEverywhereInAReplay();
  void clickMovesTheSliderInAReplay();
  void hoverWhileLive();
  void updatesAxisMapsToRunTime();
};

void TestTimeCursor::hoverMovesTheCursorEverywhereInAReplay() {
  const RunData data = run();
  LiveCharts charts;
  charts.showReplay(&data);
  QVERIFY(shownOnScreen(charts));
  QCOMPARE(charts.cursorTime(), 40.0);
  QSignalSpy moved(&charts, &LiveCharts::cursorMoved);
  // Over the lanes at t = 10: every chart's cursor goes there, the bars cover [0, 10].
  NodeLanes* lanes = charts.lanes();
  const QPoint at10(static_cast<int>(std::lround(lanes->xForTime(10))), lanes->laneRect(0).center().y());
  QTest::mouseMove(lanes, at10);
  const double t = lanes->timeForX(at10.x());
  QVERIFY2(std::abs(t - 10) < 0.2, qPrintable(QString::number(t)));
  QCOMPARE(charts.shownCursorTime(), t);
  QCOMPARE(lanes->cursorTime(), t);
  QCOMPARE(charts.convergence()->cursorTime(), t);
  QCOMPARE(charts.bars()->stats()[0].iterations, std::int64_t(std::floor(t)));
  QVERIFY(!moved.isEmpty());
  QCOMPARE(moved.last().at(0).toDouble(), t);
  // Over the convergence chart (time axis) at t = 25: the lanes follow.
  ConvergenceChart* chart = charts.convergence();
  const QPoint at25 = onPlot(chart, 25);
  QVERIFY(!at25.isNull());
  QTest::mouseMove(chart->viewport(), at25);
  const double t2 = chart->axisXAt(at25);
  QVERIFY2(std::abs(t2 - 25) < 0.5, qPrintable(QString::number(t2)));
  QCOMPARE(lanes->cursorTime(), t2);
  QCOMPARE(charts.bars()->stats()[0].iterations, std::int64_t(std::floor(t2)));
  // Leaving: back to the slider's cursor, which the hover never moved.
  leave(chart->viewport());
  QCOMPARE(charts.shownCursorTime(), 40.0);
  QCOMPARE(lanes->cursorTime(), 40.0);
  QCOMPARE(charts.bars()->stats()[0].iterations, std::int64_t(40));
  QCOMPARE(charts.timeSlider()->value(), LiveCharts::kSliderSteps);
}

void TestTimeCursor::clickMovesTheSliderInAReplay() {
  const RunData data = run();
  LiveCharts charts;
  charts.showReplay(&data);
  QVERIFY(shownOnScreen(charts));
  NodeLanes* lanes = charts.lanes();
  const QPoint at20(static_cast<int>(std::lround(lanes->xForTime(20))), lanes->laneRect(1).center().y());
  QTest::mouseClick(lanes, Qt::LeftButton, {}, at20);
  const double t = lanes->timeForX(at20.x());
  QCOMPARE(charts.cursorTime(), t);
  QVERIFY(std::abs(charts.timeSlider()->value() - t / 40 * LiveCharts::kSliderSteps) <= 1);
  // Leaving keeps the clicked cursor.
  leave(lanes);
  QCOMPARE(charts.shownCursorTime(), t);
  QCOMPARE(charts.convergence()->cursorTime(), t);
  // A click on the convergence chart moves it too.
  ConvergenceChart* chart = charts.convergence();
  const QPoint at30 = onPlot(chart, 30);
  QTest::mouseClick(chart->viewport(), Qt::LeftButton, {}, at30);
  QCOMPARE(charts.cursorTime(), chart->axisXAt(at30));
  QCOMPARE(lanes->cursorTime(), charts.cursorTime());
}

void TestTimeCursor::hoverWhileLive() {
  const RunData data = run();
  LiveCharts charts;
  charts.showLive(&data);
  QVERIFY(shownOnScreen(charts));
  QVERIFY(std::isnan(charts.lanes()->cursorTime()));
  NodeLanes* lanes = charts.lanes();
  const double t0 = lanes->windowStart();
  const QPoint p(static_cast<int>(std::lround(lanes->xForTime(t0 + 5))), lanes->laneRect(0).center().y());
  QTest::mouseMove(lanes, p);
  const double t = lanes->timeForX(p.x());
  QCOMPARE(charts.convergence()->cursorTime(), t);
  // The bars cover the kBarsSeconds before the cursor: 10 iterations of each worker.
  const double from = t - LiveCharts::kBarsSeconds;
  const auto expected = static_cast<std::int64_t>(std::floor(t) - std::floor(std::max(from, 0.0)));
  QCOMPARE(charts.bars()->stats()[0].iterations, expected);
  // A click while live pins nothing (the run goes on); leaving clears the cursor.
  QTest::mouseClick(lanes, Qt::LeftButton, {}, p);
  QVERIFY(std::isnan(charts.cursorTime()));
  leave(lanes);
  QVERIFY(std::isnan(charts.lanes()->cursorTime()));
  QVERIFY(std::isnan(charts.convergence()->cursorTime()));
}

void TestTimeCursor::updatesAxisMapsToRunTime() {
  const RunData data = run();
  LiveCharts charts;
  charts.showReplay(&data);
  charts.convergence()->setXAxis(ConvergenceChart::XAxis::Updates);
  // 50 updates per 5 s: update 125 was made at 12.5 s; before the first evaluation a ramp.
  QCOMPARE(charts.timeAtAxisX(125), 12.5);
  QCOMPARE(charts.timeAtAxisX(25), 2.5);
  QCOMPARE(charts.timeAtAxisX(1e9), 40.0);
  QVERIFY(std::isnan(charts.timeAtAxisX(std::nan(""))));
  charts.convergence()->setXAxis(ConvergenceChart::XAxis::Samples);
  QCOMPARE(charts.timeAtAxisX(3200 * 3), 15.0);
}

QTEST_MAIN(TestTimeCursor)
#include "tst_time_cursor.moc"
