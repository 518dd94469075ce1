// SPDX-License-Identifier: MIT
// The recovery lines nodes print for the runner (net/client/recovery_line.h) and what the
// runner's FaultTracker makes of them: the format round-trips (quoted values included),
// other lines and other format versions are not read, and updates lost are counted
// against the highest version the failed server acknowledged to any worker.
#include "core/results/recovery_metrics.h"
#include "net/client/recovery_line.h"
#include "net/runner/fault_tracker.h"

#include <QtTest>

using namespace dasp;
using namespace dasp::net;

namespace pb = dasp::ps::v1;

namespace {

RecoveryReport outage(const std::string& node, std::int64_t acked) {
  RecoveryReport r;
  r.kind = RecoveryReport::Kind::OutageDetected;
  r.node = node;
  r.server = "127.0.0.1:4000";
  r.ackedVersion = acked;
  r.status = "UNAVAILABLE: failed to connect to all addresses; \"last\" error \\ here";
  return r;
}

// A line after the outage: `kind` Reconnected or OutageProgress.
RecoveryReport afterOutage(RecoveryReport::Kind kind, const std::string& node, double outageS) {
  RecoveryReport r;
  r.kind = kind;
  r.node = node;
  r.server = "127.0.0.1:4000";
  r.outageS = outageS;
  return r;
}

pb::EventBatch promoted(double t, std::int64_t version) {
  pb::EventBatch batch;
  auto* e = batch.add_events();
  e->set_kind(pb::ClusterEvent::RECOVERY);
  e->set_code(v1::RunEvent::PROMOTED);
  e->set_decision("promoted");
  e->set_t_s(t);
  e->set_version(version);
  e->set_detail("server-1 promoted to head at version " + std::to_string(version));
  return batch;
}

pb::EventBatch applied(double t, std::int64_t version) {
  pb::EventBatch batch;
  auto* e = batch.add_events();
  e->set_kind(pb::ClusterEvent::APPLY);
  e->set_t_s(t);
  e->set_version(version);
  return batch;
}

v1::FaultSpec headKill(double atS) {
  v1::FaultSpec f;
  f.set_node("server");
  f.set_action(v1::FaultSpec::KILL);
  f.set_at_s(atS);
  return f;
}

std::string noName(int) { return "worker"; }

}  // namespace

class TestRecoveryLines : public QObject {
  Q_OBJECT

 private slots:
  void outageRoundTrips() {
    const auto r = outage("worker-3", 812);
    const std::string line = formatRecoveryLine(r);
    QVERIFY2(line.rfind("dasp-recovery/2 outage_detected node=worker-3 server=127.0.0.1:4000 acked=812 status=\"", 0) == 0,
             line.c_str());
    const auto back = parseRecoveryLine(line);
    QVERIFY(back);
    QCOMPARE(static_cast<int>(back->kind), static_cast<int>(RecoveryReport::Kind::OutageDetected));
    QCOMPARE(back->node, r.node);
    QCOMPARE(back->server, r.server);
    QCOMPARE(back->ackedVersion, std::int64_t{812});
    QCOMPARE(back->status, r.status);
    // No acknowledgement yet is -1, and says so.
    const auto none = parseRecoveryLine(formatRecoveryLine(outage("worker-0", -1)));
    QVERIFY(none);
    QCOMPARE(none->ackedVersion, std::int64_t{-1});
  }

  void reconnectedRoundTrips() {
    RecoveryReport r;
    r.kind = RecoveryReport::Kind::Reconnected;
    r.node = "worker 1";  // quoted: holds a space
    r.server = "[::1]:4001";
    r.outageS = 1.25;
    r.computed = 12;
    r.inFlightKept = 1;
    r.dropped = 3;
    r.discarded = 0;
    r.flushed = 10;
    const std::string line = formatRecoveryLine(r);
    QVERIFY2(line.find("node=\"worker 1\"") != std::string::npos, line.c_str());
    QVERIFY2(line.find("outage_s=1.250000") != std::string::npos, line.c_str());
    const auto back = parseRecoveryLine(line + "\n");
    QVERIFY(back);
    QCOMPARE(static_cast<int>(back->kind), static_cast<int>(RecoveryReport::Kind::Reconnected));
    QCOMPARE(back->node, r.node);
    QCOMPARE(back->server, r.server);
    QCOMPARE(back->outageS, 1.25);
    QCOMPARE(back->computed, r.computed);
    QCOMPARE(back->inFlightKept, r.inFlightKept);
    QCOMPARE(back->dropped, r.dropped);
    QCOMPARE(back->discarded, r.discarded);
    QCOMPARE(back->flushed, r.flushed);
  }

  // A worker's work through the outage so far, as the lanes show it.
  void progressRoundTrips() {
    RecoveryReport r = afterOutage(RecoveryReport::Kind::OutageProgress, "worker-2", 3.5);
    r.periodS = 1.25;
    r.computed = 31;
    const std::string line = formatRecoveryLine(r);
    QVERIFY2(line.rfind("dasp-recovery/2 outage_progress node=worker-2 ", 0) == 0, line.c_str());
    const auto back = parseRecoveryLine(line);
    QVERIFY(back);
    QCOMPARE(static_cast<int>(back->kind), static_cast<int>(RecoveryReport::Kind::OutageProgress));
    QCOMPARE(back->node, r.node);
    QCOMPARE(back->outageS, 3.5);
    QCOMPARE(back->periodS, 1.25);
    QCOMPARE(back->computed, std::int64_t{31});
  }

  void otherLinesAreNotRead_data() {
    QTest::addColumn<QString>("line");
    QTest::newRow("log text") << "worker-0: push failed: acked=5";
    QTest::newRow("version 1") << "dasp-recovery outage_detected node=worker-0 server=a:1 status=\"x\"";
    QTest::newRow("version 3") << "dasp-recovery/3 outage_detected node=worker-0 server=a:1 acked=5";
    QTest::newRow("prefix inside") << "note: dasp-recovery/2 outage_detected node=worker-0 server=a:1 acked=5";
    QTest::newRow("unknown kind") << "dasp-recovery/2 exploded node=worker-0 server=a:1";
    QTest::newRow("no node") << "dasp-recovery/2 outage_detected server=a:1 acked=5";
    QTest::newRow("bad number") << "dasp-recovery/2 outage_detected node=w server=a:1 acked=5x";
    QTest::newRow("open quote") << "dasp-recovery/2 outage_detected node=w server=a:1 acked=5 status=\"never closed";
    QTest::newRow("reconnected without outage_s") << "dasp-recovery/2 reconnected node=w server=a:1 computed=3";
    QTest::newRow("progress without outage_s") << "dasp-recovery/2 outage_progress node=w server=a:1 computed=3";
    QTest::newRow("progress, bad period") << "dasp-recovery/2 outage_progress node=w server=a:1 outage_s=1 period_s=x";
  }
  void otherLinesAreNotRead() {
    QFETCH(QString, line);
    QVERIFY(!parseRecoveryLine(line.toStdString()));
  }

  void unknownKeysAreSkipped() {
    const auto r = parseRecoveryLine("dasp-recovery/2 outage_detected node=w server=a:1 future=\"x y\" acked=7");
    QVERIFY(r);
    QCOMPARE(r->ackedVersion, std::int64_t{7});
  }

  // The runner saw version 510 when it killed the head; the workers had been told 497,
  // 503 and 500; the promoted replica holds 503: nothing acknowledged was lost, although
  // the runner's own count would say 7.
  void trackerCountsAgainstAcknowledgements() {
    FaultTracker tracker({headKill(1.0)});
    tracker.observe(applied(0.9, 510), noName);
    const auto due = tracker.due(1.0);
    QCOMPARE(due.size(), std::size_t{1});
    tracker.fired(due.front().index, 1.0, "server-0", true, true);
    tracker.observeRecovery("worker-0", outage("worker-0", 497), 1.01);
    tracker.observeRecovery("worker-1", outage("worker-1", 503), 1.02);
    tracker.observeRecovery("worker-2", outage("worker-2", 500), 1.02);
    tracker.observeRecovery("evaluator", outage("evaluator", -1), 1.03);
    tracker.observe(promoted(1.2, 503), noName);
    const auto records = tracker.records();
    QCOMPARE(records.size(), std::size_t{1});
    const auto& f = records.front();
    QCOMPARE(f.versionBefore, std::int64_t{510});
    QCOMPARE(f.ackedBefore, std::optional<std::int64_t>(503));
    QCOMPARE(f.versionAfter, std::optional<std::int64_t>(503));
    QCOMPARE(f.detectedAtS, std::optional<double>(1.01));
    const auto metrics = computeRecoveryMetrics(records, {}, 0);
    QCOMPARE(metrics.front().updatesLost, std::optional<std::int64_t>(0));
  }

  // The progress lines through an outage are its running count: the reconnected line's
  // total is what the drill records, once.
  void trackerCountsTheOutagesWorkOnce() {
    FaultTracker tracker({headKill(2.0)});
    tracker.fired(tracker.due(2.0).front().index, 2.0, "server", true, false);
    tracker.observeRecovery("worker-0", outage("worker-0", 258), 2.01);
    for (int k = 1; k <= 3; ++k) {
      RecoveryReport progress = afterOutage(RecoveryReport::Kind::OutageProgress, "worker-0", k);
      progress.periodS = 1;
      progress.computed = 10 * k;
      tracker.observeRecovery("worker-0", progress, 2.0 + k);
    }
    RecoveryReport back = afterOutage(RecoveryReport::Kind::Reconnected, "worker-0", 3.4);
    back.computed = 34;
    tracker.observeRecovery("worker-0", back, 5.4);
    QCOMPARE(tracker.records().front().gradientsDuringOutage, std::int64_t{34});
  }

  // A checkpoint restart: what was acknowledged after the checkpoint is lost.
  void trackerCountsACheckpointsLoss() {
    FaultTracker tracker({headKill(2.0)});
    tracker.observe(applied(1.9, 260), noName);
    tracker.fired(tracker.due(2.0).front().index, 2.0, "server", true, false);
    tracker.observeRecovery("worker-0", outage("worker-0", 258), 2.01);
    RecoveryReport back = afterOutage(RecoveryReport::Kind::Reconnected, "worker-0", 1.5);
    back.discarded = 1;
    tracker.observeRecovery("worker-0", back, 3.6);
    pb::EventBatch restored;
    auto* e = restored.add_events();
    e->set_kind(pb::ClusterEvent::RECOVERY);
    e->set_code(v1::RunEvent::RESTORED);
    e->set_t_s(3.5);
    e->set_version(200);
    tracker.observe(restored, noName);
    const auto metrics = computeRecoveryMetrics(tracker.records(), {}, 0);
    QCOMPARE(metrics.front().fault.gradientsDiscarded, std::int64_t{1});
    QCOMPARE(metrics.front().updatesLost, std::optional<std::int64_t>(58));
  }

  // An evaluation taken just before a kill reaches the restarted server after it: it counts
  // before the fault, at the time its version was made, not at the time of its report.
  void lateEvaluationCountsAtItsVersionsTime() {
    FaultTracker tracker({headKill(6.0)});
    auto evaluation = [](double versionT, double reportT, double accuracy) {
      pb::EventBatch batch;
      auto* e = batch.add_events();
      e->set_kind(pb::ClusterEvent::EVALUATION);
      e->set_t_s(reportT);
      e->set_version_t_s(versionT);
      e->set_accuracy(accuracy);
      return batch;
    };
    tracker.observe(evaluation(3.0, 4.4, 0.30), noName);
    tracker.observe(applied(5.9, 60), noName);
    tracker.fired(tracker.due(6.0).front().index, 6.0, "server", true, false);
    tracker.observe(evaluation(5.5, 22.0, 0.41), noName);  // taken at 5.5, reported after the restart
    tracker.observe(applied(21.5, 61), noName);
    tracker.observe(evaluation(22.5, 24.0, 0.45), noName);
    const auto evaluations = tracker.evaluations();
    QCOMPARE(evaluations.size(), std::size_t{3});
    QCOMPARE(evaluations[1].tS, 5.5);
    const auto metrics = computeRecoveryMetrics(tracker.records(), evaluations, 0.45);
    QCOMPARE(metrics.front().accuracyBefore, std::optional<double>(0.41));
  }
};

QTEST_GUILESS_MAIN(TestRecoveryLines)
#include "tst_recovery_lines.moc"
