// SPDX-License-Identifier: MIT
// Tests of the recovery metrics of fault drills and the recovery table
// (core/results/recovery_metrics.h): table-driven cases over small evaluation series, then the
// Markdown table's grouping and "mean ± std" / "never" cells.

#include "core/common/evaluation_schedule.h"
#include "core/results/recovery_metrics.h"

#include <QtTest>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace dasp;

namespace {

using Opt = std::optional<double>;

// The derived figures a case expects of one fault (in atS order).
struct Expected {
  int index = 0;
  Opt detectionS, downtimeS;
  std::optional<std::int64_t> updatesLost;
  Opt accuracyBefore, accuracyLowestAfter, recoverS, accuracyJump;
};

struct Case {
  const char* name;
  std::vector<FaultRecord> faults;
  std::vector<EvalPoint> evaluations;
  std::vector<Expected> expected;
};

// `before` is both the version the runner saw and the highest one acknowledged to a worker
// unless `acked` says otherwise (nullopt in `acked`: no worker reported one).
FaultRecord fault(int index, double atS, std::optional<double> detectedAtS = {}, std::optional<double> resumedAtS = {},
                  std::int64_t before = 0, std::optional<std::int64_t> after = {},
                  std::optional<std::optional<std::int64_t>> acked = {}) {
  FaultRecord f;
  f.index = index;
  f.node = "server";
  f.action = "kill";
  f.atS = atS;
  f.detectedAtS = detectedAtS;
  f.resumedAtS = resumedAtS;
  f.versionBefore = before;
  f.ackedBefore = acked ? *acked : std::optional<std::int64_t>(before);
  f.versionAfter = after;
  return f;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"drop then recover",
       {fault(0, 10.5, 10.7, 13.0, 500, 300)},
       {{0, 0, 0.1}, {5, 50, 0.5}, {10, 100, 0.6}, {12, 110, 0.3}, {14, 150, 0.45}, {16, 200, 0.62}, {20, 250, 0.7}},
       {{0, 0.2, 2.5, 200, 0.6, 0.3, 5.5, -0.15}}},
      {"evaluation at the fault time counts as before",
       {fault(0, 10.0)},
       {{5, 50, 0.5}, {10, 100, 0.6}, {12, 110, 0.55}, {14, 150, 0.65}},
       {{0, {}, {}, {}, 0.6, 0.55, 4.0, {}}}},
      {"never recovers",
       {fault(0, 6.0, 6.5, 9.0, 100, 120)},
       {{0, 0, 0.2}, {5, 50, 0.7}, {8, 80, 0.4}, {12, 120, 0.5}, {20, 200, 0.65}},
       {{0, 0.5, 3.0, 0, 0.7, 0.4, {}, -0.2}}},
      {"two faults, given out of order",
       {fault(1, 9.0), fault(0, 5.0)},
       {{0, 0, 0.1}, {4, 40, 0.6}, {6, 60, 0.2}, {8, 80, 0.3}, {10, 100, 0.1}, {12, 120, 0.5}, {14, 140, 0.7}},
       // The first fault's window ends at the second fault (9 s), before it is back (14 s).
       {{0, {}, {}, {}, 0.6, 0.2, 9.0, {}}, {1, {}, {}, {}, 0.3, 0.1, 3.0, {}}}},
      {"no evaluation before the fault",
       {fault(0, 1.0, {}, 2.0, 0, 0)},
       {{2, 20, 0.3}, {4, 40, 0.5}},
       {{0, {}, 1.0, 0, {}, 0.3, {}, {}}}},
      {"empty series", {fault(0, 1.0, 1.5)}, {}, {{0, 0.5, {}, {}, {}, {}, {}, {}}}},
      {"no resume seen: no change at resume",
       {fault(0, 1.0)},
       {{0, 0, 0.5}, {3, 30, 0.2}},
       {{0, {}, {}, {}, 0.5, 0.2, {}, {}}}},
      {"the stateless jump, unsorted series with a NaN",
       {fault(0, 10.5, 10.6, 11.0, 812, 812)},
       {{13, 130, 0.72}, {0, 0, 0.1}, {12.5, 125, kNaN}, {10, 100, 0.7}, {11, 110, 0.1}, {12, 120, 0.78}},
       {{0, 0.1, 0.5, 0, 0.7, 0.1, 1.5, 0.08}}},
      // The runner saw 505 applied, the workers were told 500, the promoted replica holds
      // 500: the five unacknowledged updates are no loss of the recovery mode's.
      {"updates lost count against acknowledgements",
       {fault(0, 1.0, {}, {}, 505, 500, std::optional<std::int64_t>(500))},
       {},
       {{0, {}, {}, 0, {}, {}, {}, {}}}},
      {"acknowledged beyond what the recovered server holds",
       {fault(0, 1.0, {}, {}, 505, 300, std::optional<std::int64_t>(503))},
       {},
       {{0, {}, {}, 203, {}, {}, {}, {}}}},
      {"no worker reported an acknowledgement: lost unknown",
       {fault(0, 1.0, {}, {}, 505, 300, std::optional<std::int64_t>())},
       {},
       {{0, {}, {}, {}, {}, {}, {}, {}}}},
      {"accuracy only falls: a negative change at resume",
       {fault(0, 1.0, {}, 2.5, 0, 0)},
       {{0, 0, 0.8}, {2, 20, 0.5}, {3, 30, 0.4}},
       {{0, {}, 1.5, 0, 0.8, 0.4, {}, -0.4}}},
  };
  return all;
}

bool near(double a, double b) { return std::abs(a - b) < 1e-9; }

QByteArray show(const Opt& v) { return v ? QByteArray::number(*v, 'g', 12) : QByteArray("none"); }

RecoveryMetrics makeMetrics(int index, const std::string& node, Opt detection, Opt downtime, std::optional<std::int64_t> lost,
                        Opt before, Opt lowest, Opt recover, Opt jump, double finalAccuracy, double cpuS = 1.0) {
  RecoveryMetrics m;
  m.fault.index = index;
  m.fault.node = node;
  m.fault.action = "kill";
  m.fault.gradientsDuringOutage = 10;
  m.fault.gradientsDropped = 2;
  m.fault.cpuS = cpuS;
  m.detectionS = detection;
  m.downtimeS = downtime;
  m.updatesLost = lost;
  m.accuracyBefore = before;
  m.accuracyLowestAfter = lowest;
  m.recoverS = recover;
  m.accuracyJump = jump;
  m.finalAccuracy = finalAccuracy;
  return m;
}

RunFaults run(std::int64_t id, const std::string& recovery, int workers, std::vector<RecoveryMetrics> faults) {
  RunFaults r;
  r.runId = id;
  r.label = "drill";
  r.recovery = recovery;
  r.workers = workers;
  r.seed = static_cast<std::uint64_t>(id);
  r.faults = std::move(faults);
  return r;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      if (start < text.size()) out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The cells of a Markdown row "| a | b |".
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::size_t pos = line.find('|');
  while (pos != std::string::npos) {
    const std::size_t next = line.find('|', pos + 1);
    if (next == std::string::npos) break;
    std::string c = line.substr(pos + 1, next - pos - 1);
    const auto b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? std::string() : c.substr(b, e - b + 1));
    pos = next;
  }
  return out;
}

}  // namespace

class TestRecoveryMetrics : public QObject {
  Q_OBJECT

 private slots:
  void metrics_data() {
    QTest::addColumn<int>("caseIndex");
    for (std::size_t i = 0; i < cases().size(); ++i) QTest::newRow(cases()[i].name) << static_cast<int>(i);
  }

  void metrics() {
    QFETCH(int, caseIndex);
    const Case& c = cases()[static_cast<std::size_t>(caseIndex)];
    const auto got = computeRecoveryMetrics(c.faults, c.evaluations, 0.875);
    QCOMPARE(got.size(), c.expected.size());
    const auto check = [](const char* what, const Opt& actual, const Opt& expected) {
      const bool same = actual.has_value() == expected.has_value() && (!actual || near(*actual, *expected));
      if (!same) {
        qWarning("%s: got %s, expected %s", what, show(actual).constData(), show(expected).constData());
      }
      return same;
    };
    for (std::size_t i = 0; i < got.size(); ++i) {
      const RecoveryMetrics& m = got[i];
      const Expected& e = c.expected[i];
      QCOMPARE(m.fault.index, e.index);
      QVERIFY(check("detectionS", m.detectionS, e.detectionS));
      QVERIFY(check("downtimeS", m.downtimeS, e.downtimeS));
      QCOMPARE(m.updatesLost, e.updatesLost);
      QVERIFY(check("accuracyBefore", m.accuracyBefore, e.accuracyBefore));
      QVERIFY(check("accuracyLowestAfter", m.accuracyLowestAfter, e.accuracyLowestAfter));
      QVERIFY(check("recoverS", m.recoverS, e.recoverS));
      QVERIFY(check("accuracyJump", m.accuracyJump, e.accuracyJump));
      QCOMPARE(m.finalAccuracy, 0.875);
    }
  }

  void recordIsCarriedThrough() {
    FaultRecord f = fault(3, 4.0, 4.5, 6.0, 10, 7);
    f.node = "worker-2";
    f.action = "pause";
    f.restartAtS = 5.0;
    f.gradientsDuringOutage = 9;
    f.gradientsDropped = 1;
    f.gradientsDiscarded = 2;
    f.cpuS = 3.5;
    f.detail = "promoted server-1 at v7";
    const auto got = computeRecoveryMetrics({f}, {}, 0.5);
    QCOMPARE(got.size(), std::size_t(1));
    const FaultRecord& g = got.front().fault;
    QCOMPARE(g.index, 3);
    QCOMPARE(g.node, f.node);
    QCOMPARE(g.action, f.action);
    QCOMPARE(g.restartAtS, f.restartAtS);
    QCOMPARE(g.gradientsDuringOutage, f.gradientsDuringOutage);
    QCOMPARE(g.gradientsDropped, f.gradientsDropped);
    QCOMPARE(g.gradientsDiscarded, f.gradientsDiscarded);
    QCOMPARE(g.cpuS, f.cpuS);
    QCOMPARE(g.detail, f.detail);
    QCOMPARE(got.front().updatesLost, std::optional<std::int64_t>(3));
    QVERIFY(computeRecoveryMetrics({}, {{1, 1, 0.5}}, 0.5).empty());
  }

  void tableGroupsAndFormats() {
    std::vector<RunFaults> runs = {
        run(1, "checkpoint", 4,
            {makeMetrics(0, "server", 0.2, 2.0, 200, 0.60, 0.30, 5.0, 0.10, 0.90, 2.0),
             makeMetrics(1, "server", {}, {}, {}, {}, {}, {}, {}, 0.90)}),
        run(2, "stateless", 4, {makeMetrics(0, "server", 0.1, 1.0, 12, 0.70, 0.10, 2.5, 0.62, 0.85)}),
        run(3, "checkpoint", 4, {makeMetrics(0, "server", 0.4, 4.0, 300, 0.62, 0.34, 7.0, 0.20, 0.92, 4.0)}),
        run(4, "checkpoint", 4, {makeMetrics(0, "server", 0.3, 3.0, 250, 0.64, 0.20, {}, 0.30, 0.88, 3.0)}),
        run(5, "none", 2, {makeMetrics(0, "worker-1", 0.5, {}, 0, 0.5, 0.4, {}, {}, 0.6)}),
    };
    runs[0].timeToTargetS = 30.0;
    runs[2].timeToTargetS = 34.0;
    const std::string md = recoveryTableMarkdown(runs);
    const auto lines = splitLines(md);
    QVERIFY2(lines.size() >= 2 + 4 + 2, md.c_str());
    const auto header = cells(lines[0]);
    const std::vector<std::string> expectedHeader = {
        "recovery",     "workers",      "fault",        "runs",
        "detection (s)", "downtime (s)", "updates lost", "gradients in outage",
        "dropped",      "acc. before",  "lowest after", "back to pre-fault (s)",
        "change at resume", "final accuracy", "CPU-s in outage", "time to target (s)"};
    QCOMPARE(header, expectedHeader);
    QCOMPARE(cells(lines[1]).size(), expectedHeader.size());
    QVERIFY(lines[1].find("---") != std::string::npos);

    // Groups in first-seen order: (checkpoint, 4, 0), (checkpoint, 4, 1), (stateless, 4, 0), (none, 2, 0).
    const auto a = cells(lines[2]), b = cells(lines[3]), c = cells(lines[4]), d = cells(lines[5]);
    QCOMPARE(a.size(), expectedHeader.size());
    QCOMPARE(a[0], std::string("checkpoint"));
    QCOMPARE(a[1], std::string("4"));
    QCOMPARE(a[2], std::string("0: kill server"));
    QCOMPARE(a[3], std::string("3"));
    QCOMPARE(a[4], std::string("0.30 \u00b1 0.10"));  // detection 0.2, 0.4, 0.3
    QCOMPARE(a[5], std::string("3.00 \u00b1 1.00"));
    QCOMPARE(a[6], std::string("250 \u00b1 50.0"));
    QCOMPARE(a[7], std::string("10 \u00b1 0.0"));
    QCOMPARE(a[8], std::string("2 \u00b1 0.0"));
    QCOMPARE(a[9], std::string("0.6200 \u00b1 0.0200"));
    QCOMPARE(a[10], std::string("0.2800 \u00b1 0.0721"));
    QCOMPARE(a[11], std::string("6.00 \u00b1 1.41 (1/3 never)"));  // 5 and 7 s, run 4 never
    QCOMPARE(a[12], std::string("0.2000 \u00b1 0.1000"));
    QCOMPARE(a[13], std::string("0.9000 \u00b1 0.0200"));
    QCOMPARE(a[14], std::string("3.0 \u00b1 1.0"));
    QCOMPARE(a[15], std::string("32.00 \u00b1 2.83 (1/3 never)"));  // runs 1 and 3; run 4 never

    // One run, nothing derived: no ±, "—" everywhere a figure is missing.
    QCOMPARE(b[2], std::string("1: kill server"));
    QCOMPARE(b[3], std::string("1"));
    for (int col : {4, 5, 6, 9, 10, 11, 12}) QCOMPARE(b[static_cast<std::size_t>(col)], std::string("\u2014"));
    QCOMPARE(b[7], std::string("10"));
    QCOMPARE(b[13], std::string("0.9000"));

    QCOMPARE(c[0], std::string("stateless"));
    QCOMPARE(c[4], std::string("0.10"));
    QCOMPARE(c[6], std::string("12"));
    QCOMPARE(c[11], std::string("2.50"));
    QCOMPARE(c[12], std::string("0.6200"));

    QCOMPARE(d[0], std::string("none"));
    QCOMPARE(d[1], std::string("2"));
    QCOMPARE(d[2], std::string("0: kill worker-1"));
    QCOMPARE(d[6], std::string("0"));
    QCOMPARE(d[11], std::string("1/1 never"));

    // Then a blank line and the explanation.
    QVERIFY(lines[6].empty());
    QVERIFY2(lines[7].find("mean \u00b1 sample std") != std::string::npos, lines[7].c_str());
    QVERIFY(lines[7].find("back to pre-fault") != std::string::npos);
    QCOMPARE(lines.size(), std::size_t(8));

    // The same content as cells.
    const RecoveryTable table = recoveryTable(runs);
    QCOMPARE(table.header, expectedHeader);
    QCOMPARE(table.rows.size(), std::size_t(4));
    QCOMPARE(table.rows[0], a);

    // Cases (dasp tables recovery NAME=FILE ...): a first column, and a group per case.
    for (std::size_t i = 0; i < runs.size(); ++i) runs[i].caseName = i < 2 ? "early" : "late";
    const RecoveryTable cased = recoveryTable(runs);
    QCOMPARE(cased.header.front(), std::string("case"));
    QCOMPARE(cased.rows.size(), std::size_t(5));  // checkpoint's index 0 is in both cases
    QCOMPARE(cased.rows[0][0], std::string("early"));
    QCOMPARE(cased.rows[0][4], std::string("1"));
    QCOMPARE(cased.rows[3][0], std::string("late"));
    QCOMPARE(cased.rows[3][1], std::string("checkpoint"));
    QCOMPARE(cased.rows[3][4], std::string("2"));
  }

  // The evaluator's schedule: regular evaluations, and one just before each fault where the
  // regular one would still be running then.
  void evaluationWaitsForTheMomentBeforeAFault() {
    const std::vector<double> faults{6.0, 36.0};
    QCOMPARE(evaluationWaitS(0.0, 2.0, 1.5, faults, 0.5), 2.0);     // 0 + 2 + 1.5 ends before 5.5
    QCOMPARE(evaluationWaitS(4.0, 2.0, 1.5, faults, 0.5), 1.5);     // 4 + 3.5 > 5.5: wait until 5.5
    QCOMPARE(evaluationWaitS(3.0, 2.0, 1.5, faults, 0.5), 2.5);
    QCOMPARE(evaluationWaitS(5.48, 2.0, 1.5, faults, 0.5), 2.0);    // 5.5 is 20 ms away: taken
    QCOMPARE(evaluationWaitS(7.0, 2.0, 1.5, faults, 0.5), 2.0);     // the next fault is far
    QCOMPARE(evaluationWaitS(33.0, 2.0, 1.5, faults, 0.5), 2.5);
    QCOMPARE(evaluationWaitS(40.0, 2.0, 1.5, faults, 0.5), 2.0);    // no fault left
    QCOMPARE(evaluationWaitS(3.0, 2.0, 1.5, {}, 0.5), 2.0);
  }

  void tableEscapesAndEmpty() {
    const std::string empty = recoveryTableMarkdown({});
    const auto lines = splitLines(empty);
    QCOMPARE(lines.size(), std::size_t(4));  // header, separator, blank, note
    QVERIFY(recoveryTable({}).rows.empty());

    RecoveryMetrics m;
    m.fault.action = "kill";
    m.fault.node = "a|b";
    const std::string md = recoveryTableMarkdown({run(1, "", 1, {m})});
    QVERIFY2(md.find("0: kill a\\|b") != std::string::npos, md.c_str());
    QCOMPARE(recoveryTable({run(1, "", 1, {m})}).rows.front().front(), std::string("\u2014"));
  }
};

QTEST_GUILESS_MAIN(TestRecoveryMetrics)
#include "tst_recovery_metrics.moc"
