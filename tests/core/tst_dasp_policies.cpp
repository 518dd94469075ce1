// SPDX-License-Identifier: MIT
// DASP's two rules (ADAPTIVE, the default, and PAPER, DASP-R) driven over scripted event
// sequences by the discrete-event harness of tests/support/policy_harness.h. Pure logic:
// no sleeps, no threads.
#include "tests/support/policy_harness.h"

#include <set>

using namespace policy_harness;

class TestDaspPolicies : public QObject {
  Q_OBJECT

 private slots:
  void daspHomogeneousIsBsp_data();
  void daspHomogeneousIsBsp();
  void daspMovesSlowNodeAsync_data();
  void daspMovesSlowNodeAsync();
  void daspFollowsSpeedChange_data();
  void daspFollowsSpeedChange();
  void daspAsyncScalingAndDrop_data();
  void daspAsyncScalingAndDrop();
  void daspLeadCap_data();
  void daspLeadCap();
  void adaptiveHomogeneousIsBsp_data();
  void adaptiveHomogeneousIsBsp();
  void adaptiveBalancesBatches_data();
  void adaptiveBalancesBatches();
  void adaptiveFollowsSpeedChange_data();
  void adaptiveFollowsSpeedChange();
  void adaptiveTooSlowNodeRunsAsync();
  void adaptiveLateGradientJoinsNextRound();
  void anytimeBatchCountsWholeMicroBatches();
  void adaptiveAnytimeRoundsDoNotWaitForJitter();
  void adaptiveAnytimeRoundCountsFromTheServersAnswer();
  void adaptiveEqualBatchesChooseFastGroup();
};

// ---- DASP -----------------------------------------------------------------------------

void TestDaspPolicies::daspHomogeneousIsBsp_data() {
  QTest::addColumn<int>("workers");
  QTest::addColumn<double>("jitter");
  QTest::addColumn<quint64>("seed");
  QTest::newRow("4 exact") << 4 << 0.0 << quint64{1};
  QTest::newRow("4 jitter 2%") << 4 << 0.02 << quint64{2};
  QTest::newRow("8 jitter 5%") << 8 << 0.05 << quint64{3};
  QTest::newRow("16 jitter 5%") << 16 << 0.05 << quint64{4};
}

void TestDaspPolicies::daspHomogeneousIsBsp() {
  QFETCH(int, workers);
  QFETCH(double, jitter);
  QFETCH(quint64, seed);
  auto policy = make(paperDasp());
  SimConfig cfg;
  cfg.times.assign(static_cast<std::size_t>(workers), 1.0);
  cfg.jitter = jitter;
  cfg.seed = seed;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 100);
  QCOMPARE(maxStaleness(res), std::int64_t{0});
  for (auto s : res.updateSizes) QCOMPARE(s, static_cast<std::size_t>(workers));
  QCOMPARE(countKind(res, DecisionKind::StateChange), 0);
  // Change-only: every re-partition finds the SYNC set it started with (everyone), so none
  // is recorded, though the rule ran every global round.
  QCOMPARE(countKind(res, DecisionKind::Repartition), 0);
  for (auto st : res.finalStates) QCOMPARE(st, ParallelState::Sync);
}

void TestDaspPolicies::daspMovesSlowNodeAsync_data() {
  QTest::addColumn<QList<double>>("times");
  QTest::addColumn<int>("hysteresis");
  QTest::newRow("1,1,1,4 h=2") << QList<double>{1, 1, 1, 4} << 2;
  QTest::newRow("1,1,1,4 h=3") << QList<double>{1, 1, 1, 4} << 3;
  QTest::newRow("1,1,1,4 h=1") << QList<double>{1, 1, 1, 4} << 1;
  QTest::newRow("7 fast, 1 slow") << QList<double>{1, 1, 1, 1, 1, 1, 1, 4} << 2;
}

void TestDaspPolicies::daspMovesSlowNodeAsync() {
  QFETCH(QList<double>, times);
  QFETCH(int, hysteresis);
  auto spec = paperDasp();
  spec.mutable_dasp()->set_hysteresis(hysteresis);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = 0.02;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const int slow = static_cast<int>(times.size()) - 1;
  const auto changes = stateChanges(res, slow);
  QCOMPARE(static_cast<int>(changes.size()), 1);
  QCOMPARE(changes[0].from, ParallelState::Sync);
  QCOMPARE(changes[0].to, ParallelState::Async);
  // Moved by the re-partition that took it out of the SYNC set — the only one recorded
  // (change-only) — after `hysteresis` agreeing evaluations: with h > 1 the state changes
  // rounds after the record.
  const auto repartitions = decisionsOf(res, DecisionKind::Repartition);
  QCOMPARE(static_cast<int>(repartitions.size()), 1);
  QVERIFY2(hysteresis > 1 ? repartitions[0].t < changes[0].t : repartitions[0].t == changes[0].t,
           qPrintable(QStringLiteral("recorded at t=%1, demoted at t=%2").arg(repartitions[0].t).arg(changes[0].t)));
  for (int r = 0; r < slow; ++r) {
    QVERIFY2(stateChanges(res, r).empty(), qPrintable(QStringLiteral("fast rank %1 moved").arg(r)));
    QCOMPARE(res.finalStates[static_cast<std::size_t>(r)], ParallelState::Sync);
  }
  QCOMPARE(res.finalStates[static_cast<std::size_t>(slow)], ParallelState::Async);
  // After the move the fast nodes' rounds no longer wait for the slow one: there are about
  // as many updates as fast iterations, and the slow node's ASYNC gradients are scaled.
  QVERIFY(res.updates > 150);
  int asyncApplied = 0;
  for (const auto& a : res.applied) {
    if (a.rank == slow && a.t > changes[0].t) {
      ++asyncApplied;
      QCOMPARE(a.scale, 1.0 / static_cast<double>(std::max<std::int64_t>(1, a.staleness)));
    }
  }
  QVERIFY(asyncApplied > 10);
}

void TestDaspPolicies::daspFollowsSpeedChange_data() {
  QTest::addColumn<int>("hysteresis");
  QTest::addColumn<double>("factor");
  QTest::newRow("x4, h=2") << 2 << 4.0;
  QTest::newRow("x4, h=1") << 1 << 4.0;
  QTest::newRow("x3, h=3") << 3 << 3.0;
}

void TestDaspPolicies::daspFollowsSpeedChange() {
  QFETCH(int, hysteresis);
  QFETCH(double, factor);
  auto spec = paperDasp();
  spec.mutable_dasp()->set_hysteresis(hysteresis);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 1, 1};
  cfg.jitter = 0.02;
  cfg.endTime = 300;
  cfg.changes.push_back(SpeedChange{3, 60, 160, factor});
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const auto changes = stateChanges(res, 3);
  QVERIFY2(changes.size() >= 2, qPrintable(QStringLiteral("%1 state changes").arg(changes.size())));
  QCOMPARE(changes.front().to, ParallelState::Async);
  QVERIFY(changes.front().t > 60 && changes.front().t < 80);
  QCOMPARE(changes.back().to, ParallelState::Sync);
  QVERIFY(changes.back().t > 160 && changes.back().t < 220);
  QCOMPARE(res.finalStates[3], ParallelState::Sync);
  for (int r = 0; r < 3; ++r) QVERIFY(stateChanges(res, r).empty());
  // Two re-partitions changed the SYNC set (out after the slow-down, back in after it
  // ended, which promoted it); the hundreds of others changed nothing and are not recorded.
  const auto repartitions = decisionsOf(res, DecisionKind::Repartition);
  QCOMPARE(static_cast<int>(repartitions.size()), 2);
  // (The demotion itself may come first, from a missed barrier.)
  QVERIFY2(repartitions[0].t > 60 && repartitions[0].t < 80, qPrintable(QString::number(repartitions[0].t)));
  QVERIFY(repartitions[1].t > 160 && repartitions[1].t <= changes.back().t);
  // Back in the group: the last rounds include all four again.
  QCOMPARE(res.updateSizes.back(), std::size_t{4});
  // While it was ASYNC the fast nodes kept going: no round waited for the slow node.
  int updatesWhileSlow = 0;
  for (double t : res.updateTimes) updatesWhileSlow += (t > 80 && t < 160) ? 1 : 0;
  QVERIFY2(updatesWhileSlow > 70, qPrintable(QString::number(updatesWhileSlow)));
}

void TestDaspPolicies::daspAsyncScalingAndDrop_data() {
  QTest::addColumn<bool>("scaling");
  QTest::addColumn<int>("sMax");
  QTest::newRow("scaling, s_max 8") << true << 8;
  QTest::newRow("no scaling, s_max 8") << false << 8;
  QTest::newRow("scaling, s_max 1") << true << 1;
  QTest::newRow("no scaling, s_max 0") << false << 0;
}

void TestDaspPolicies::daspAsyncScalingAndDrop() {
  QFETCH(bool, scaling);
  QFETCH(int, sMax);
  auto spec = paperDasp();
  spec.mutable_dasp()->set_staleness_scaling(scaling);
  spec.mutable_dasp()->set_s_max(sMax);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 1, 4};
  cfg.jitter = 0.02;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QCOMPARE(res.finalStates[3], ParallelState::Async);
  int asyncApplied = 0;
  for (const auto& a : res.applied) {
    if (a.stateAtApply != ParallelState::Async) continue;
    ++asyncApplied;
    QVERIFY(a.staleness <= sMax);
    const double want =
        scaling ? 1.0 / static_cast<double>(std::max<std::int64_t>(1, a.staleness)) : 1.0;
    QCOMPARE(a.scale, want);
  }
  // The slow node's gradients are ~4 versions stale: applied under s_max 8, dropped under
  // s_max ≤ 1.
  if (sMax >= 8) {
    QVERIFY(asyncApplied > 10);
    QVERIFY(res.drops.empty());
  } else {
    QVERIFY(res.drops.size() > 10);
    for (const auto& d : res.decisions) {
      if (d.kind == DecisionKind::Drop) QVERIFY(d.value > sMax);
    }
  }
}

void TestDaspPolicies::daspLeadCap_data() {
  QTest::addColumn<bool>("leadCap");
  QTest::addColumn<int>("sHigh");
  QTest::newRow("cap 2") << true << 2;
  QTest::newRow("cap 5") << true << 5;
  QTest::newRow("no cap") << false << 2;
}

void TestDaspPolicies::daspLeadCap() {
  QFETCH(bool, leadCap);
  QFETCH(int, sHigh);
  auto spec = paperDasp();
  spec.mutable_dasp()->set_lead_cap(leadCap);
  spec.mutable_dasp()->set_s_high(sHigh);
  spec.mutable_dasp()->set_s_max(100);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 4, 8};  // {0, 1} SYNC; 2 and 3 ASYNC, 2 twice as fast as 3
  cfg.jitter = 0.02;
  cfg.endTime = 400;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QCOMPARE(res.finalStates[2], ParallelState::Async);
  QCOMPARE(res.finalStates[3], ParallelState::Async);
  std::int64_t maxAsyncLead = 0;
  for (const auto& rel : res.releases) {
    if (rel.rank == 2 && rel.state == ParallelState::Async) {
      maxAsyncLead = std::max(maxAsyncLead, rel.lead);
    }
  }
  double demotedAt = kInf;
  for (const auto& d : stateChanges(res, 2)) demotedAt = std::min(demotedAt, d.t);
  int asyncParks = 0;
  for (const auto& p : res.parks) asyncParks += (p.rank == 2 && p.since > demotedAt) ? 1 : 0;
  if (leadCap) {
    QVERIFY2(maxAsyncLead <= sHigh, qPrintable(QString::number(maxAsyncLead)));
    QVERIFY(asyncParks > 0);
  } else {
    QVERIFY(maxAsyncLead > sHigh);
    QCOMPARE(asyncParks, 0);
  }
}


// ---- DASP, rule ADAPTIVE (the default) ------------------------------------------------

namespace {
dasp::v1::StrategySpec adaptiveDasp() { return strategy("dasp"); }  // the default rule
const dasp::DaspAdaptivePolicy& asAdaptive(const SyncPolicy& p) {
  return dynamic_cast<const dasp::DaspAdaptivePolicy&>(p);
}
// Seconds between the last `count` updates, averaged.
double meanRoundTime(const SimResult& res, std::size_t count) {
  if (res.updateTimes.size() <= count) return kInf;
  const auto n = res.updateTimes.size();
  return (res.updateTimes[n - 1] - res.updateTimes[n - 1 - count]) / static_cast<double>(count);
}
}  // namespace

void TestDaspPolicies::adaptiveHomogeneousIsBsp_data() {
  QTest::addColumn<int>("workers");
  QTest::newRow("4") << 4;
  QTest::newRow("16") << 16;
}

void TestDaspPolicies::adaptiveHomogeneousIsBsp() {
  QFETCH(int, workers);
  auto policy = make(adaptiveDasp());
  QCOMPARE(std::string(policy->name()), std::string("dasp"));
  SimConfig cfg;
  cfg.times.assign(static_cast<std::size_t>(workers), 1.0);
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 150);
  QCOMPARE(maxStaleness(res), std::int64_t{0});
  for (auto s : res.updateSizes) QCOMPARE(s, static_cast<std::size_t>(workers));
  for (const auto& a : res.applied) QCOMPARE(a.scale, 1.0);  // every batch the spec's
  QCOMPARE(countKind(res, DecisionKind::StateChange), 0);
  QCOMPARE(countKind(res, DecisionKind::BarrierTimeout), 0);
  for (int r = 0; r < workers; ++r) QCOMPARE(policy->batchFor(r), 64);
}

void TestDaspPolicies::adaptiveBalancesBatches_data() {
  QTest::addColumn<QList<double>>("times");
  QTest::addColumn<double>("jitter");
  QTest::addColumn<bool>("clusterTotal");
  for (bool clusterTotal : {false, true}) {
    const char* budget = clusterTotal ? "CLUSTER_TOTAL" : "FASTEST_AT_NOMINAL";
    QTest::addRow("1,1,2,4 %s", budget) << QList<double>{1, 1, 2, 4} << 0.0 << clusterTotal;
    QTest::addRow("1,1,2,4 jitter 5%% %s", budget) << QList<double>{1, 1, 2, 4} << 0.05 << clusterTotal;
    QTest::addRow("1,1,1,1,1.5,2,3,4 %s", budget) << QList<double>{1, 1, 1, 1, 1.5, 2, 3, 4} << 0.02
                                                  << clusterTotal;
    QTest::addRow("7 at 1, one at 8 %s", budget) << QList<double>{1, 1, 1, 1, 1, 1, 1, 8} << 0.02 << clusterTotal;
  }
}

void TestDaspPolicies::adaptiveBalancesBatches() {
  QFETCH(QList<double>, times);
  QFETCH(double, jitter);
  QFETCH(bool, clusterTotal);
  auto spec = adaptiveDasp();
  if (clusterTotal) spec.mutable_dasp()->set_batch_budget(dasp::v1::DaspParams::CLUSTER_TOTAL);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = jitter;
  cfg.endTime = 300;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const auto& dasp = asAdaptive(*policy);
  const int n = static_cast<int>(times.size());
  // Shares in proportion to speed, summing to the spec's total batch (CLUSTER_TOTAL) or
  // with the fastest node at the spec's batch (FASTEST_AT_NOMINAL).
  double rate = 0;
  for (double t : times) rate += 1.0 / t;
  const double fastest = *std::min_element(times.begin(), times.end());
  const double budget = clusterTotal ? 64.0 * n : 64.0 * fastest * rate;
  int total = 0;
  for (int r = 0; r < n; ++r) {
    const double ideal = budget * (1.0 / times[r]) / rate;
    total += dasp.share(r);
    QVERIFY2(std::abs(dasp.share(r) - ideal) <= 0.1 * ideal + 1,
             qPrintable(QStringLiteral("rank %1: share %2, ideal %3").arg(r).arg(dasp.share(r)).arg(ideal)));
    QCOMPARE(res.finalStates[static_cast<std::size_t>(r)], ParallelState::Sync);
  }
  QVERIFY2(std::abs(total - budget) <= 0.05 * budget + 1, qPrintable(QString::number(total)));
  // Rounds at the pace of the homogeneous-equivalent cluster (each at N / Σ 1/t) or of the
  // fastest node, within 15 % (jitter makes a barrier wait for its slowest member).
  const double pace = clusterTotal ? n / rate : fastest;
  QVERIFY2(meanRoundTime(res, 50) < 1.15 * pace,
           qPrintable(QStringLiteral("round %1, expected %2").arg(meanRoundTime(res, 50)).arg(pace)));
  QVERIFY(maxStaleness(res) <= 1);
  // Each gradient weighs its batch: a round's weights sum to its samples ÷ the spec's batch.
  double weights = 0;
  for (std::size_t i = res.applied.size() - static_cast<std::size_t>(n); i < res.applied.size(); ++i) {
    weights += res.applied[i].scale;
  }
  QVERIFY2(std::abs(weights - budget / 64.0) < 0.05 * budget / 64.0 || maxStaleness(res) == 1,
           qPrintable(QString::number(weights)));
}

void TestDaspPolicies::adaptiveFollowsSpeedChange_data() {
  QTest::addColumn<double>("factor");
  QTest::newRow("slows x4") << 4.0;
  QTest::newRow("slows x3") << 3.0;
  QTest::newRow("speeds up x4") << 0.25;
}

void TestDaspPolicies::adaptiveFollowsSpeedChange() {
  QFETCH(double, factor);
  auto policy = make(adaptiveDasp());
  SimConfig cfg;
  cfg.times = {1, 1, 1, 1, 1, 1, 1, 1};
  cfg.jitter = 0.02;
  cfg.endTime = 300;
  cfg.changes.push_back(SpeedChange{3, 60, kInf, factor});
  cfg.changes.push_back(SpeedChange{5, 60, kInf, factor});
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const auto& dasp = asAdaptive(*policy);
  // The change is detected within a few of the changed nodes' iterations...
  double detected = kInf;
  for (const auto& d : res.decisions) {
    if (d.kind == DecisionKind::Repartition && d.rank == 3 && d.t > 60) {
      detected = std::min(detected, d.t);
    }
  }
  QVERIFY2(detected < 60 + 3 * std::max(1.0, factor), qPrintable(QString::number(detected)));
  // ...after which the shares follow the new speeds (the fastest at the spec's batch) and
  // the rounds the new pace of the fastest node.
  const double fastest = std::min(1.0, factor);
  const double ideal = 64.0 * fastest / factor;
  QVERIFY2(std::abs(dasp.share(3) - ideal) <= 0.1 * ideal + 1, qPrintable(QString::number(dasp.share(3))));
  QVERIFY2(meanRoundTime(res, 40) < 1.1 * fastest, qPrintable(QString::number(meanRoundTime(res, 40))));
  QVERIFY(maxStaleness(res) <= 1);
  for (auto st : res.finalStates) QCOMPARE(st, ParallelState::Sync);
}

void TestDaspPolicies::adaptiveTooSlowNodeRunsAsync() {
  // A node 64× slower would get a share of 1 sample (below min_batch 4): ASYNC, with the
  // spec's batch, and the SYNC three share 192 samples without waiting for it. (The
  // silence limit is raised above its 64-unit iterations.)
  auto spec = adaptiveDasp();
  spec.set_barrier_timeout_s(1000);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 1, 64};
  cfg.endTime = 400;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const auto changes = stateChanges(res, 3);
  QCOMPARE(static_cast<int>(changes.size()), 1);
  QCOMPARE(changes[0].to, ParallelState::Async);
  QCOMPARE(res.finalStates[3], ParallelState::Async);
  QCOMPARE(asAdaptive(*policy).share(3), 64);
  QCOMPARE(asAdaptive(*policy).share(0) + asAdaptive(*policy).share(1) + asAdaptive(*policy).share(2), 192);
  QVERIFY2(meanRoundTime(res, 20) < 1.05, qPrintable(QString::number(meanRoundTime(res, 20))));
}

void TestDaspPolicies::adaptiveLateGradientJoinsNextRound() {
  // Counted batches (anytime off): rank 1 is ×2 for one iteration, the round times out at
  // kappa (1.5) × its expected compute, it stays SYNC, and its late gradient enters the
  // next round with staleness 1: none dropped.
  auto spec = adaptiveDasp();
  spec.mutable_dasp()->set_anytime(false);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 1, 1};
  cfg.endTime = 100;
  cfg.changes.push_back(SpeedChange{1, 30, 31, 2.0});
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(countKind(res, DecisionKind::BarrierTimeout) >= 1);
  QCOMPARE(countKind(res, DecisionKind::Drop), 0);
  QVERIFY(res.drops.empty());
  QCOMPARE(maxStaleness(res), std::int64_t{1});
  for (auto st : res.finalStates) QCOMPARE(st, ParallelState::Sync);
  // Every push was applied once, but those of the round still open at the end.
  QVERIFY(res.applied.size() <= res.pushes.size());
  QVERIFY(res.applied.size() + 4 >= res.pushes.size());
}

void TestDaspPolicies::anytimeBatchCountsWholeMicroBatches() {
  using dasp::anytimeBatch;
  using dasp::ComputeBudget;
  QCOMPARE(anytimeBatch(ComputeBudget{1.0, 4, 256}, 0.01), 100);   // 25 micro-batches of 0.04 s
  QCOMPARE(anytimeBatch(ComputeBudget{0.999, 4, 256}, 0.01), 96);  // the 25th would end late
  QCOMPARE(anytimeBatch(ComputeBudget{0.01, 4, 256}, 0.01), 4);    // at least one
  QCOMPARE(anytimeBatch(ComputeBudget{10.0, 4, 256}, 0.01), 256);  // at most maxBatch
  QCOMPARE(anytimeBatch(ComputeBudget{0, 4, 256}, 0.01), 4);       // no budget, no speed
  QCOMPARE(anytimeBatch(ComputeBudget{1.0, 4, 256}, -1.0), 4);
}

void TestDaspPolicies::adaptiveAnytimeRoundsDoNotWaitForJitter() {
  // Speeds 1, 1, 2, 4 with every iteration ×(1 ± 30 %): with counted batches a round waits
  // for its slowest draw; with anytime batches every member computes until the round's end
  // whatever its draw, so the rounds keep the fastest node's pace and nobody waits long.
  auto run = [](bool anytime) {
    auto spec = adaptiveDasp();
    spec.mutable_dasp()->set_anytime(anytime);
    auto policy = make(spec);
    SimConfig cfg;
    cfg.times = {1, 1, 2, 4};
    cfg.jitter = 0.3;
    cfg.endTime = 300;
    return simulate(*policy, cfg);
  };
  const auto counted = run(false);
  const auto anytime = run(true);
  CHECK_SIM_SANE(counted);
  CHECK_SIM_SANE(anytime);
  auto parked = [](const SimResult& res) {
    double s = 0;
    for (const auto& p : res.parks) s += p.waited;
    return s / (4 * 300.0);
  };
  QVERIFY2(parked(anytime) < 0.5 * parked(counted),
           qPrintable(QStringLiteral("waiting: anytime %1, counted %2").arg(parked(anytime)).arg(parked(counted))));
  QVERIFY2(meanRoundTime(anytime, 100) < 1.05 && meanRoundTime(counted, 100) > 1.15,
           qPrintable(QStringLiteral("rounds: anytime %1, counted %2")
                          .arg(meanRoundTime(anytime, 100))
                          .arg(meanRoundTime(counted, 100))));
  QCOMPARE(maxStaleness(anytime), std::int64_t{0});
  QCOMPARE(countKind(anytime, DecisionKind::BarrierTimeout), 0);
  // The pushed batches follow each draw: a node's counts vary from round to round.
  std::set<int> counts;
  for (std::size_t i = anytime.pushes.size() / 2; i < anytime.pushes.size(); ++i) {
    if (anytime.pushes[i].first == 0) counts.insert(anytime.pushedBatches[i]);
  }
  QVERIFY2(counts.size() >= 5, qPrintable(QString::number(counts.size())));
}

void TestDaspPolicies::adaptiveAnytimeRoundCountsFromTheServersAnswer() {
  // Speeds 1, 1, 2, 4 and a server busy 0.3 s applying each update (a round of many
  // gradients): the members are released 0.3 s after the close. The round's compute time
  // counts from that answer, so the fastest node still computes its nominal 64 samples a
  // round; counted from the close, the apply would take 0.3 of its 1.0 s (44 samples).
  auto spec = adaptiveDasp();
  spec.mutable_dasp()->set_anytime(true);  // the spec's default; a bare StrategySpec has it off
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 2, 4};
  cfg.applySeconds = 0.3;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 100);
  int later = 0;
  for (std::size_t i = res.pushes.size() / 2; i < res.pushes.size(); ++i) {
    if (res.pushes[i].first != 0) continue;
    ++later;
    QCOMPARE(res.pushedBatches[i], 64);
  }
  QVERIFY(later > 40);
  QCOMPARE(maxStaleness(res), std::int64_t{0});
}

void TestDaspPolicies::adaptiveEqualBatchesChooseFastGroup() {
  // balance_batches off: the SYNC group is the k fastest with the highest k ÷ t_k; for
  // 1, 1, 2, 4 that is the two fast nodes (2 samples per unit of time against 1.5 and 1).
  auto spec = adaptiveDasp();
  spec.mutable_dasp()->set_balance_batches(false);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = {1, 1, 2, 4};
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QCOMPARE(res.finalStates[0], ParallelState::Sync);
  QCOMPARE(res.finalStates[1], ParallelState::Sync);
  QCOMPARE(res.finalStates[2], ParallelState::Async);
  QCOMPARE(res.finalStates[3], ParallelState::Async);
  for (int r = 0; r < 4; ++r) QCOMPARE(policy->batchFor(r), 64);
}

QTEST_GUILESS_MAIN(TestDaspPolicies)
#include "tst_dasp_policies.moc"
