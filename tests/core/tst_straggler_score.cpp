// SPDX-License-Identifier: MIT
// Straggler scores (core/results/straggler_score.h): relative to the fastest node and to
// the node's own best, the lower of the two, and which node is named the straggler.
#include "core/results/straggler_score.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace dasp;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Iterations at a fixed period from 0 up to `until`, then at `slowPeriod`.
std::vector<double> iterations(double period, double until, double slowPeriod, double end) {
  std::vector<double> t;
  for (double x = period; x <= until + 1e-9; x += period) t.push_back(x);
  for (double x = t.empty() ? slowPeriod : t.back() + slowPeriod; x <= end + 1e-9; x += slowPeriod) t.push_back(x);
  return t;
}

std::int64_t countIn(const std::vector<double>& t, double a, double b) {
  return std::count_if(t.begin(), t.end(), [&](double x) { return x > a && x <= b; });
}

}  // namespace

class TestStragglerScore : public QObject {
  Q_OBJECT

 private slots:
  void relativeToTheFastest() {
    // Four nodes with slowdowns 1, 1, 2, 4: relative scores 1, 1, 0.5, 0.25.
    const auto s = stragglerScores({{10, 10}, {10, 10}, {5, 5}, {2.5, 2.5}});
    QCOMPARE(s.size(), std::size_t(4));
    QCOMPARE(s[0].relative, 1.0);
    QCOMPARE(s[2].relative, 0.5);
    QCOMPARE(s[3].relative, 0.25);
    for (const auto& x : s) QCOMPARE(x.individual, 1.0);
    QCOMPARE(s[3].score, 0.25);
    // Only the lowest score below the threshold is the straggler, not every slow node.
    QVERIFY(s[3].straggler);
    QVERIFY(!s[0].straggler && !s[1].straggler && !s[2].straggler);
  }

  void individualAgainstItsOwnBest() {
    // Node 1 runs as fast as the others now but at a third of its own best: a node that
    // slowed down is found even when the fastest node slowed with it.
    const auto s = stragglerScores({{4, 4}, {4, 12}, {4, 4}});
    QCOMPARE(s[1].relative, 1.0);
    QCOMPARE(s[1].individual, 1.0 / 3.0);
    QCOMPARE(s[1].score, 1.0 / 3.0);
    QVERIFY(s[1].straggler);
  }

  void thresholdAndTies() {
    // Above the threshold nobody is a straggler; at it neither (strictly below counts).
    auto s = stragglerScores({{10, 10}, {8, 8}});
    QCOMPARE(s[1].score, 0.8);
    QVERIFY(!s[0].straggler && !s[1].straggler);
    s = stragglerScores({{10, 10}, {7.5, 7.5}});
    QVERIFY(!s[1].straggler);
    s = stragglerScores({{10, 10}, {7.4, 7.4}});
    QVERIFY(s[1].straggler);
    s = stragglerScores({{10, 10}, {8, 8}}, 0.9);
    QVERIFY(s[1].straggler);
    // Equal nodes: scores of 1, no straggler.
    s = stragglerScores({{3, 3}, {3, 3}, {3, 3}});
    for (const auto& x : s) {
      QCOMPARE(x.score, 1.0);
      QVERIFY(!x.straggler);
    }
  }

  void unknownThroughput() {
    // No window (NaN): no score, never the straggler; one scored node alone is none.
    auto s = stragglerScores({{kNaN, kNaN}, {2, 2}});
    QVERIFY(std::isnan(s[0].score));
    QVERIFY(!s[0].straggler && !s[1].straggler);
    QCOMPARE(s[1].score, 1.0);
    QVERIFY(stragglerScores({}).empty());
    // Nobody iterated: everyone is as fast as the fastest (1), nobody is a straggler.
    s = stragglerScores({{0, 0}, {0, 0}});
    QCOMPARE(s[0].score, 1.0);
    QVERIFY(!s[0].straggler);
    // A stopped node among running ones scores 0.
    s = stragglerScores({{0, 5}, {5, 5}});
    QCOMPARE(s[0].score, 0.0);
    QVERIFY(s[0].straggler);
  }

  void windowedFromIterationTimes() {
    // 10 it/s up to t = 60, then 2.5 it/s (slowed x4) to t = 100: over the last 10 s the
    // node runs at 2.5 it/s against a best window of 10 it/s.
    const auto t = iterations(0.1, 60, 0.4, 100);
    const auto count = [&](double a, double b) { return countIn(t, a, b); };
    const NodeThroughput w = windowedThroughput(count, 90, 100);
    QVERIFY2(std::abs(w.current - 2.5) < 0.11, qPrintable(QString::number(w.current)));
    QVERIFY2(std::abs(w.best - 10) < 0.11, qPrintable(QString::number(w.best)));
    const auto s = stragglerScores({w, {10, 10}});
    QVERIFY(std::abs(s[0].individual - 0.25) < 0.02);
    QVERIFY(s[0].straggler);
    // Before the slow-down its current window is its best.
    const NodeThroughput early = windowedThroughput(count, 40, 50);
    QVERIFY(std::abs(early.current - early.best) < 1e-9);
    // The whole run as one window has no earlier window: its best is itself.
    const NodeThroughput whole = windowedThroughput(count, 0, 100);
    QCOMPARE(whole.best, whole.current);
    // An empty window has no figures.
    QVERIFY(std::isnan(windowedThroughput(count, 5, 5).current));
  }
};

QTEST_GUILESS_MAIN(TestStragglerScore)
#include "tst_straggler_score.moc"
