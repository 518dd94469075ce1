// SPDX-License-Identifier: MIT
// Sync policies BSP, ASP, SSP, DSSP and backup workers, membership changes and
// makePolicy, driven over scripted event sequences by the discrete-event harness of
// tests/support/policy_harness.h. Pure logic: no sleeps, no threads.
#include "core/spec/spec.h"
#include "tests/support/policy_harness.h"

using namespace policy_harness;

class TestSyncPolicies : public QObject {
  Q_OBJECT

 private slots:
  void bspStalenessIsZero_data();
  void bspStalenessIsZero();
  void aspNeverParks_data();
  void aspNeverParks();
  void sspBoundsLead_data();
  void sspBoundsLead();
  void dsspBoundsLeadAndGrants_data();
  void dsspBoundsLeadAndGrants();
  void dsspController_data();
  void dsspController();
  void backupDropsLateGradient_data();
  void backupDropsLateGradient();
  void vanishedWorkerNeverDeadlocks_data();
  void vanishedWorkerNeverDeadlocks();
  void workerDownClosesRound_data();
  void workerDownClosesRound();
  void pushFromDownRankBringsItUp_data();
  void pushFromDownRankBringsItUp();
  void downReportsKeepInvariants_data();
  void downReportsKeepInvariants();
  void versionCountsEmittedUpdates_data();
  void versionCountsEmittedUpdates();
  void makePolicyNames_data();
  void makePolicyNames();
  void makePolicyErrors_data();
  void makePolicyErrors();
  void clusterStateTracksMinClock();
  void toStringNames();
};

// ---- BSP ------------------------------------------------------------------------------

void TestSyncPolicies::bspStalenessIsZero_data() {
  QTest::addColumn<QList<double>>("times");
  QTest::addColumn<double>("jitter");
  QTest::newRow("4 equal") << QList<double>{1, 1, 1, 1} << 0.0;
  QTest::newRow("4 equal, jitter") << QList<double>{1, 1, 1, 1} << 0.1;
  QTest::newRow("1,1,2,4") << QList<double>{1, 1, 2, 4} << 0.05;
  QTest::newRow("8 mixed") << QList<double>{1, 1, 1, 1, 1.5, 2, 3, 4} << 0.1;
}

void TestSyncPolicies::bspStalenessIsZero() {
  QFETCH(QList<double>, times);
  QFETCH(double, jitter);
  auto policy = make(strategy("bsp"));
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = jitter;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 10);
  QCOMPARE(maxStaleness(res), std::int64_t{0});
  for (auto s : res.updateSizes) QCOMPARE(s, static_cast<std::size_t>(times.size()));
  // versions = rounds: every worker pushed once per closed round (and maybe once into the
  // open one).
  for (int r = 0; r < static_cast<int>(times.size()); ++r) {
    const auto lag = policy->clock(r) - policy->version();
    QVERIFY2(lag == 0 || lag == 1, qPrintable(QStringLiteral("rank %1 clock %2 version %3")
                                                  .arg(r)
                                                  .arg(policy->clock(r))
                                                  .arg(policy->version())));
  }
  QVERIFY(res.drops.empty());
}

// ---- ASP ------------------------------------------------------------------------------

void TestSyncPolicies::aspNeverParks_data() {
  QTest::addColumn<QList<double>>("times");
  QTest::newRow("4 equal") << QList<double>{1, 1, 1, 1};
  QTest::newRow("1,1,2,4") << QList<double>{1, 1, 2, 4};
  QTest::newRow("1,10") << QList<double>{1, 10};
}

void TestSyncPolicies::aspNeverParks() {
  QFETCH(QList<double>, times);
  auto policy = make(strategy("asp"));
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = 0.05;
  cfg.endTime = 100;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.parks.empty());
  QCOMPARE(res.updates, static_cast<std::int64_t>(res.pushes.size()));
  for (auto s : res.updateSizes) QCOMPARE(s, std::size_t{1});
  QVERIFY(maxStaleness(res) > 0);  // several workers: pushes interleave
}

// ---- SSP ------------------------------------------------------------------------------

void TestSyncPolicies::sspBoundsLead_data() {
  QTest::addColumn<int>("s");
  QTest::addColumn<QList<double>>("times");
  for (int s : {0, 1, 3}) {
    QTest::addRow("s=%d 1,1,2,4", s) << s << QList<double>{1, 1, 2, 4};
    QTest::addRow("s=%d 1,5", s) << s << QList<double>{1, 5};
    QTest::addRow("s=%d 8 mixed", s) << s << QList<double>{1, 1, 1, 1, 1.5, 2, 3, 4};
  }
}

void TestSyncPolicies::sspBoundsLead() {
  QFETCH(int, s);
  QFETCH(QList<double>, times);
  auto spec = strategy("ssp");
  spec.mutable_ssp()->set_staleness(s);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = 0.05;
  cfg.endTime = 200;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  std::int64_t maxLead = 0;
  for (const auto& rel : res.releases) {
    QVERIFY2(rel.lead <= s, qPrintable(QStringLiteral("rank %1 released at t=%2 with lead %3")
                                           .arg(rel.rank)
                                           .arg(rel.t)
                                           .arg(rel.lead)));
    maxLead = std::max(maxLead, rel.lead);
  }
  QCOMPARE(maxLead, std::int64_t{s});  // the bound is reached on a heterogeneous cluster
  QVERIFY(!res.parks.empty());
}

// ---- DSSP -----------------------------------------------------------------------------

void TestSyncPolicies::dsspBoundsLeadAndGrants_data() {
  QTest::addColumn<int>("sLow");
  QTest::addColumn<int>("sHigh");
  QTest::addColumn<QList<double>>("times");
  QTest::newRow("3..15 1,1,1,4") << 3 << 15 << QList<double>{1, 1, 1, 4};
  QTest::newRow("1..6 1,1,1,4") << 1 << 6 << QList<double>{1, 1, 1, 4};
  QTest::newRow("0..4 1,3") << 0 << 4 << QList<double>{1, 3};
  QTest::newRow("2..8 1,1.5,2.5") << 2 << 8 << QList<double>{1, 1.5, 2.5};
}

void TestSyncPolicies::dsspBoundsLeadAndGrants() {
  QFETCH(int, sLow);
  QFETCH(int, sHigh);
  QFETCH(QList<double>, times);
  auto spec = strategy("dssp");
  spec.mutable_dssp()->set_s_low(sLow);
  spec.mutable_dssp()->set_s_high(sHigh);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times = toStd(times);
  cfg.jitter = 0.05;
  cfg.endTime = 400;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  bool fastestBeyondLow = false;
  for (const auto& rel : res.releases) {
    QVERIFY2(rel.lead <= sHigh, qPrintable(QStringLiteral("rank %1 lead %2 > s_H")
                                               .arg(rel.rank)
                                               .arg(rel.lead)));
    if (rel.rank == 0 && rel.lead > sLow) fastestBeyondLow = true;
  }
  QVERIFY2(fastestBeyondLow, "the fastest worker never ran beyond s_L");
  QVERIFY(countKind(res, DecisionKind::Grant) > 0);
  for (const auto& d : res.decisions) {
    if (d.kind == DecisionKind::Grant) {
      QVERIFY(d.value >= 1 && d.value <= sHigh - sLow);
    }
  }
}

void TestSyncPolicies::dsspController_data() {
  // Two workers: fast (rank 0) pushes at f1, f2; slow (rank 1) at q1, q2 (q2 < f2).
  // F_k = f2 + k·(f2−f1), Q_j = q2 + j·(q2−q1); r* = argmin_k min_j |F_k − Q_j|.
  QTest::addColumn<double>("f1");
  QTest::addColumn<double>("f2");
  QTest::addColumn<double>("q1");
  QTest::addColumn<double>("q2");
  QTest::addColumn<int>("expected");
  QTest::newRow("Q1 = F2") << 9.0 << 10.0 << 4.0 << 8.0 << 2;
  QTest::newRow("Q1 = F0") << 9.0 << 10.0 << 4.0 << 7.0 << 0;
  // Q_1 = 19.2: |F_9 − Q_1| = 0.2.
  QTest::newRow("Q1 nearest F9") << 9.0 << 10.0 << 0.0 << 9.6 << 9;
  QTest::newRow("beyond R: clamp") << 9.9 << 10.0 << 0.0 << 9.0 << 12;  // F_12 = 11.2 < Q_1 = 18
}

void TestSyncPolicies::dsspController() {
  QFETCH(double, f1);
  QFETCH(double, f2);
  QFETCH(double, q1);
  QFETCH(double, q2);
  QFETCH(int, expected);
  dasp::DsspPolicy policy(3, 15);  // R = 12
  policy.reset(2, 0);
  PolicyOutput out;
  policy.onPullReleased(0, 0, 0);
  policy.onPullReleased(1, 0, 0);
  // Slow first, so it reaches clock 2 first and is the rank at c_min.
  policy.onPush(1, 0, q1, out);
  policy.onPush(1, 0, q2, out);
  policy.onPush(0, 0, f1, out);
  policy.onPush(0, 0, f2, out);
  QCOMPARE(policy.cluster().slowestRank(), 1);
  QCOMPARE(policy.controller(0, f2), expected);
}

// ---- Backup workers -------------------------------------------------------------------

void TestSyncPolicies::backupDropsLateGradient_data() {
  QTest::addColumn<int>("workers");
  QTest::addColumn<int>("backup");
  QTest::addColumn<quint64>("seed");
  for (quint64 seed : {1ULL, 2ULL, 3ULL}) {
    QTest::addRow("W=4 b=1 seed %llu", static_cast<unsigned long long>(seed)) << 4 << 1 << seed;
  }
  QTest::newRow("W=5 b=2") << 5 << 2 << quint64{4};
  QTest::newRow("W=3 b=0") << 3 << 0 << quint64{5};
}

void TestSyncPolicies::backupDropsLateGradient() {
  QFETCH(int, workers);
  QFETCH(int, backup);
  QFETCH(quint64, seed);
  auto spec = strategy("backup");
  spec.mutable_backup()->set_backup_workers(backup);
  auto policy = make(spec);
  SimConfig cfg;
  cfg.times.assign(static_cast<std::size_t>(workers), 1.0);
  cfg.jitter = 0.01;
  cfg.seed = seed;
  cfg.endTime = 100;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 50);
  QCOMPARE(maxStaleness(res), std::int64_t{0});
  for (auto s : res.updateSizes) QCOMPARE(s, static_cast<std::size_t>(workers - backup));
  // Exactly the b late gradients of every closed round are dropped (the last round's may
  // still be in flight), each one version late.
  std::vector<int> dropsPerRound(static_cast<std::size_t>(res.updates + 1), 0);
  for (const auto& d : res.drops) {
    QVERIFY(d.base >= 0 && d.base < res.updates);
    ++dropsPerRound[static_cast<std::size_t>(d.base)];
  }
  for (std::int64_t v = 0; v + 1 < res.updates; ++v) {
    const int dropped = dropsPerRound[static_cast<std::size_t>(v)];
    QVERIFY2(dropped == backup,
             qPrintable(QStringLiteral("round %1 dropped %2").arg(v).arg(dropped)));
  }
  const auto last = dropsPerRound[static_cast<std::size_t>(res.updates - 1)];
  QVERIFY(last >= 0 && last <= backup);
  const auto expectedDrops = static_cast<std::int64_t>(backup) * (res.updates - 1) + last;
  QCOMPARE(static_cast<std::int64_t>(res.drops.size()), expectedDrops);
  QCOMPARE(countKind(res, DecisionKind::Drop), static_cast<int>(res.drops.size()));
}

// ---- membership -----------------------------------------------------------------------

void TestSyncPolicies::vanishedWorkerNeverDeadlocks_data() {
  QTest::addColumn<QString>("name");
  // Every strategy that makes workers wait (ASP never does).
  for (const auto& n : dasp::knownStrategies()) {
    if (n != "asp") QTest::newRow(n.c_str()) << QString::fromStdString(n);
  }
}

void TestSyncPolicies::vanishedWorkerNeverDeadlocks() {
  QFETCH(QString, name);
  auto policy = make(strategy(name));  // barrier_timeout_s = 10
  SimConfig cfg;
  cfg.times = {1, 1, 1, 1.2};
  cfg.jitter = 0.01;
  cfg.endTime = 150;
  cfg.vanishRank = 3;
  cfg.vanishAt = 20;
  cfg.upAt = 80;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  const auto changes = stateChanges(res, 3);
  const auto down = std::find_if(changes.begin(), changes.end(), [](const PolicyDecision& d) {
    return d.to == ParallelState::Down;
  });
  QVERIFY2(down != changes.end(), "the vanished worker was never marked Down");
  QVERIFY(down->t > 20 && down->t < 45);
  QVERIFY(std::string(down->reason).size() > 0);
  // Versions kept coming while it was gone ...
  int updatesWhileGone = 0;
  for (double t : res.updateTimes) updatesWhileGone += (t > 45 && t < 80) ? 1 : 0;
  QVERIFY2(updatesWhileGone > 20, qPrintable(QString::number(updatesWhileGone)));
  // ... and after onWorkerUp() it is live again and its pushes count.
  QVERIFY(res.finalStates[3] != ParallelState::Down);
  int pushesAfterUp = 0;
  for (const auto& p : res.pushes) pushesAfterUp += (p.first == 3 && p.second > 80) ? 1 : 0;
  QVERIFY(pushesAfterUp > 20);
  int appliedAfterUp = 0;
  for (const auto& a : res.applied) appliedAfterUp += (a.rank == 3 && a.t > 80) ? 1 : 0;
  if (name != QLatin1String("backup")) QVERIFY(appliedAfterUp > 20);  // backup may drop it
  if (name == QLatin1String("bsp")) {
    QVERIFY(countKind(res, DecisionKind::BarrierTimeout) >= 1);
    QCOMPARE(res.updateSizes.back(), std::size_t{4});
  }
}

void TestSyncPolicies::workerDownClosesRound_data() {
  QTest::addColumn<QString>("name");
  QTest::newRow("bsp") << QStringLiteral("bsp");
  QTest::newRow("dasp") << QStringLiteral("dasp");
  QTest::newRow("backup b=0") << QStringLiteral("backup");
}

void TestSyncPolicies::workerDownClosesRound() {
  QFETCH(QString, name);
  auto spec = strategy(name);
  spec.mutable_backup()->set_backup_workers(0);
  auto policy = make(spec);
  policy->reset(4, 0);
  PolicyOutput out;
  for (int r = 0; r < 4; ++r) {
    QVERIFY(policy->mayProceed(r, 0));
    policy->onPullReleased(r, 0, 0);
  }
  for (int r = 0; r < 3; ++r) {
    out.clear();
    QCOMPARE(policy->onPush(r, 0, 1.0 + r * 0.1, out), dasp::PushOutcome::Held);
    QCOMPARE(out.updateCount(), std::size_t{0});
    QVERIFY(!policy->mayProceed(r, 1.5));
  }
  QVERIFY(policy->nextDeadline() > 1.5);
  QVERIFY(policy->nextDeadline() < kInf);
  // Rank 3 is reported gone: the round waiting only on it closes at once.
  out.clear();
  policy->onWorkerDown(3, 2.0, out);
  QCOMPARE(out.updateCount(), std::size_t{1});
  QCOMPARE(out.gradients.size(), std::size_t{3});
  QVERIFY(out.recheckPulls);
  QCOMPARE(policy->version(), std::int64_t{1});
  QCOMPARE(policy->state(3), ParallelState::Down);
  // (DASP may also re-partition here: every live worker has pushed.)
  QVERIFY(!out.decisions.empty());
  QCOMPARE(out.decisions[0].kind, DecisionKind::StateChange);
  QCOMPARE(out.decisions[0].rank, 3);
  QCOMPARE(out.decisions[0].to, ParallelState::Down);
  for (int r = 0; r < 3; ++r) QVERIFY(policy->mayProceed(r, 2.0));
  // Back up: c_3 = c_min, and the next round waits for it again.
  out.clear();
  policy->onWorkerUp(3, 3.0, out);
  QVERIFY(policy->state(3) != ParallelState::Down);
  QCOMPARE(policy->clock(3), std::int64_t{1});
  QVERIFY(policy->mayProceed(3, 3.0));
  for (int r = 0; r < 4; ++r) policy->onPullReleased(r, 1, 3.0);
  for (int r = 0; r < 3; ++r) {
    out.clear();
    QCOMPARE(policy->onPush(r, 1, 4.0, out), dasp::PushOutcome::Held);
  }
  out.clear();
  QCOMPARE(policy->onPush(3, 1, 4.5, out), dasp::PushOutcome::Applied);
  QCOMPARE(out.gradients.size(), std::size_t{4});
  QCOMPARE(policy->version(), std::int64_t{2});
}

void TestSyncPolicies::pushFromDownRankBringsItUp_data() {
  QTest::addColumn<QString>("name");
  for (const auto& n : dasp::knownStrategies()) QTest::newRow(n.c_str()) << QString::fromStdString(n);
}

void TestSyncPolicies::pushFromDownRankBringsItUp() {
  QFETCH(QString, name);
  auto policy = make(strategy(name));
  policy->reset(3, 0);
  PolicyOutput out;
  for (int r = 0; r < 3; ++r) policy->onPullReleased(r, 0, 0);
  policy->onWorkerDown(2, 0.5, out);
  QCOMPARE(policy->state(2), ParallelState::Down);
  QVERIFY(policy->mayProceed(2, 0.5));  // a Down rank takes part in no bound
  out.clear();
  policy->onPush(2, 0, 1.0, out);
  QVERIFY(policy->state(2) != ParallelState::Down);
  QVERIFY(!out.decisions.empty());
  QCOMPARE(out.decisions[0].kind, DecisionKind::StateChange);
  QCOMPARE(out.decisions[0].rank, 2);
  QCOMPARE(out.decisions[0].from, ParallelState::Down);
  QCOMPARE(policy->version(), static_cast<std::int64_t>(out.updateCount()));
}

void TestSyncPolicies::downReportsKeepInvariants_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<quint64>("seed");
  for (const auto& n : dasp::knownStrategies()) {
    for (quint64 seed : {1ULL, 2ULL, 3ULL}) {
      const QString row = QStringLiteral("%1 seed %2").arg(QString::fromStdString(n)).arg(seed);
      QTest::newRow(qPrintable(row)) << QString::fromStdString(n) << seed;
    }
  }
}

void TestSyncPolicies::downReportsKeepInvariants() {
  QFETCH(QString, name);
  QFETCH(quint64, seed);
  auto policy = make(strategy(name));
  SimConfig cfg;
  cfg.times = {1, 1, 1.2, 2, 3, 0.8};
  cfg.jitter = 0.1;
  cfg.seed = seed;
  cfg.endTime = 300;
  std::mt19937_64 rng(seed * 7919);
  std::uniform_real_distribution<double> when(5, 290);
  std::uniform_int_distribution<int> who(0, 5);
  for (int i = 0; i < 40; ++i) cfg.downReports.emplace_back(when(rng), who(rng));
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);
  QVERIFY(res.updates > 50);
  QVERIFY(countKind(res, DecisionKind::StateChange) >= 40);
  if (name == QLatin1String("bsp") || name == QLatin1String("backup")) {
    QCOMPARE(maxStaleness(res), std::int64_t{0});
  }
  if (name == QLatin1String("asp")) QVERIFY(res.parks.empty());
  const int bound = name == QLatin1String("ssp") ? 3 : name == QLatin1String("dssp") ? 15 : -1;
  if (bound >= 0) {
    for (const auto& rel : res.releases) {
      if (rel.state != ParallelState::Down) QVERIFY(rel.lead <= bound);
    }
  }
  // Every rank ends up live again: each one kept pushing after its reports.
  for (auto st : res.finalStates) QVERIFY(st != ParallelState::Down);
}

void TestSyncPolicies::versionCountsEmittedUpdates_data() {
  QTest::addColumn<QString>("name");
  for (const auto& n : dasp::knownStrategies()) QTest::newRow(n.c_str()) << QString::fromStdString(n);
}

void TestSyncPolicies::versionCountsEmittedUpdates() {
  QFETCH(QString, name);
  auto policy = make(strategy(name));
  SimConfig cfg;
  cfg.times = {1, 1.3, 2, 4, 0.7};
  cfg.jitter = 0.1;
  cfg.endTime = 120;
  cfg.vanishRank = 1;
  cfg.vanishAt = 30;
  cfg.upAt = 70;
  const auto res = simulate(*policy, cfg);
  CHECK_SIM_SANE(res);  // checks version() after every event
  QCOMPARE(policy->version(), res.updates);
  QVERIFY(res.updates > 20);
  std::size_t gradients = 0;
  for (auto s : res.updateSizes) gradients += s;
  QCOMPARE(gradients, res.applied.size());
  // Every push is either applied, held in the open round, or dropped.
  QVERIFY(res.applied.size() + res.drops.size() <= res.pushes.size());
  QVERIFY(res.applied.size() + res.drops.size() + 5 >= res.pushes.size());
}

// ---- makePolicy -----------------------------------------------------------------------

void TestSyncPolicies::makePolicyNames_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QString>("expected");
  for (const auto& n : dasp::knownStrategies()) {
    QTest::newRow(n.c_str()) << QString::fromStdString(n) << QString::fromStdString(n);
  }
  QTest::newRow("empty = bsp") << QString() << QStringLiteral("bsp");
}

void TestSyncPolicies::makePolicyNames() {
  QFETCH(QString, name);
  QFETCH(QString, expected);
  auto made = dasp::makePolicy(strategy(name), 64);
  QVERIFY2(made.isOk(), made.message().c_str());
  QCOMPARE(QString::fromLatin1(made.value()->name()), expected);
  made.value()->reset(4, 0);
  QCOMPARE(made.value()->workers(), 4);
  QCOMPARE(made.value()->version(), std::int64_t{0});
}

void TestSyncPolicies::makePolicyErrors_data() {
  QTest::addColumn<QString>("field");  // which field to break
  QTest::addColumn<QString>("message");
  QStringList known;
  for (const auto& n : dasp::knownStrategies()) known << QString::fromStdString(n);
  QTest::newRow("unknown name") << QStringLiteral("name")
                                << QStringLiteral("strategy.name: unknown strategy 'x' (known: %1)")
                                       .arg(known.join(QStringLiteral(", ")));
  QTest::newRow("ssp") << QStringLiteral("ssp")
                       << QStringLiteral("strategy.ssp.staleness: must be >= 0 (got -1)");
  QTest::newRow("dssp") << QStringLiteral("dssp")
                        << QStringLiteral("strategy.dssp: needs 0 <= s_low <= s_high (got 5, 2)");
  QTest::newRow("backup") << QStringLiteral("backup")
                          << QStringLiteral(
                                 "strategy.backup.backup_workers: must be >= 0 (got -2)");
  QTest::newRow("kappa") << QStringLiteral("kappa")
                         << QStringLiteral("strategy.dasp.kappa: must be >= 1 (got 0.5)");
  QTest::newRow("hysteresis") << QStringLiteral("hysteresis")
                              << QStringLiteral("strategy.dasp.hysteresis: must be >= 1 (got 0)");
  QTest::newRow("timeout") << QStringLiteral("timeout")
                           << QStringLiteral("strategy.barrier_timeout_s: must be > 0 (got 0)");
}

void TestSyncPolicies::makePolicyErrors() {
  QFETCH(QString, field);
  QFETCH(QString, message);
  dasp::v1::StrategySpec s;
  if (field == QLatin1String("name")) {
    s.set_name("x");
  } else if (field == QLatin1String("ssp")) {
    s.set_name("ssp");
    s.mutable_ssp()->set_staleness(-1);
  } else if (field == QLatin1String("dssp")) {
    s.set_name("dssp");
    s.mutable_dssp()->set_s_low(5);
    s.mutable_dssp()->set_s_high(2);
  } else if (field == QLatin1String("backup")) {
    s.set_name("backup");
    s.mutable_backup()->set_backup_workers(-2);
  } else if (field == QLatin1String("kappa")) {
    s.set_name("dasp");
    s.mutable_dasp()->set_kappa(0.5);
  } else if (field == QLatin1String("hysteresis")) {
    s.set_name("dasp");
    s.mutable_dasp()->set_hysteresis(0);
  } else {
    s.set_name("bsp");
    s.set_barrier_timeout_s(0);
  }
  auto made = dasp::makePolicy(s, 64);
  QVERIFY(!made.isOk());
  QCOMPARE(QString::fromStdString(made.message()), message);
}

// ---- ClusterState, names ----------------------------------------------------------------

void TestSyncPolicies::clusterStateTracksMinClock() {
  dasp::ClusterState cs(0.5);
  cs.reset(4, 0, ParallelState::Async);
  QCOMPARE(cs.cMin(), std::int64_t{0});
  QCOMPARE(cs.cMax(), std::int64_t{0});
  for (int r = 0; r < 4; ++r) cs.recordPullRelease(r, 0, 0);
  QVERIFY(!cs.recordPush(0, 1));
  QVERIFY(!cs.recordPush(0, 2));
  QVERIFY(!cs.recordPush(1, 2));
  QCOMPARE(cs.cMax(), std::int64_t{2});
  QCOMPARE(cs.cMin(), std::int64_t{0});
  QVERIFY(!cs.recordPush(2, 3));
  QVERIFY(cs.recordPush(3, 4));  // the last rank at 0 moves: c_min rises
  QCOMPARE(cs.cMin(), std::int64_t{1});
  QCOMPARE(cs.slowestRank(), 1);  // reached clock 1 first among those at 1
  QCOMPARE(cs.lead(0), std::int64_t{1});
  // Compute-time EMA: first sample as is, then α·x + (1−α)·Δ; only pull→push counts.
  QCOMPARE(cs.computeTime(0), 1.0);  // pull at 0, push at 1; second push had no pull
  cs.recordPullRelease(0, 2, 5);
  cs.recordPush(0, 8);
  QCOMPARE(cs.computeTime(0), 0.5 * 3 + 0.5 * 1);
  QCOMPARE(cs.pushInterval(0), 6.0);
  // Down removes from c_min at once; Up re-enters at c_min.
  QVERIFY(cs.markDown(1) == false);  // ranks 2, 3 still at 1
  cs.markDown(2);
  QVERIFY(cs.markDown(3));  // now only rank 0 (clock 3) is live
  QCOMPARE(cs.cMin(), std::int64_t{3});
  QCOMPARE(cs.liveCount(), 1);
  cs.markUp(2, 9, ParallelState::Sync);
  QCOMPARE(cs.clock(2), std::int64_t{3});
  QCOMPARE(cs.state(2), ParallelState::Sync);
  // Silence list: oldest pull release without a push first.
  QCOMPARE(cs.oldestSilent(), 2);  // re-added at 9; rank 0 pushed after its pull
  cs.recordPullRelease(0, 3, 10);
  QCOMPARE(cs.oldestSilent(), 2);
  cs.recordPush(2, 11);
  QCOMPARE(cs.oldestSilent(), 0);
  QCOMPARE(cs.silentSince(0), 10.0);
  // Many pushes move buckets along without growing anything: c_min follows.
  for (int i = 0; i < 10000; ++i) {
    cs.recordPush(0, 12 + i);
    cs.recordPush(2, 12 + i);
  }
  // Rank 0 had 3 pushes; rank 2 entered at 3 and pushed once.
  QCOMPARE(cs.cMin(), std::int64_t{10003});
  QCOMPARE(cs.cMax(), std::int64_t{10004});
}

void TestSyncPolicies::toStringNames() {
  QCOMPARE(QString::fromLatin1(dasp::toString(ParallelState::Sync)), QStringLiteral("SYNC"));
  QCOMPARE(QString::fromLatin1(dasp::toString(ParallelState::Async)), QStringLiteral("ASYNC"));
  QCOMPARE(QString::fromLatin1(dasp::toString(ParallelState::Down)), QStringLiteral("DOWN"));
  QCOMPARE(QString::fromLatin1(dasp::toString(DecisionKind::BarrierTimeout)),
           QStringLiteral("barrier_timeout"));
  QCOMPARE(QString::fromLatin1(dasp::toString(DecisionKind::Repartition)),
           QStringLiteral("repartition"));
  QCOMPARE(QString::fromLatin1(dasp::toString(dasp::PushOutcome::Held)), QStringLiteral("held"));
}

QTEST_GUILESS_MAIN(TestSyncPolicies)
#include "tst_sync_policies.moc"
