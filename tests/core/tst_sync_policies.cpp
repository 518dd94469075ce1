// SPDX-License-Identifier: MIT
// Sync policies (BSP, ASP, SSP, DSSP, backup workers, DASP-R) driven over scripted event
// sequences: a small discrete-event simulator runs N workers of given iteration times on a
// virtual clock (pull → mayProceed? → compute → push → pull ...; onTick at nextDeadline())
// and records every applied gradient's staleness, every release's lead and every parked
// time, so each rule's invariants can be checked. Pure logic: no sleeps, no threads.
#include "core/cluster_state.h"
#include "core/dasp_adaptive.h"
#include "core/sync_policies.h"
#include "core/sync_policy.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

using dasp::DecisionKind;
using dasp::ParallelState;
using dasp::PolicyDecision;
using dasp::PolicyOutput;
using dasp::SyncPolicy;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- the simulator --------------------------------------------------------------------

struct SpeedChange {
  int rank = 0;
  double from = 0;  // iterations starting in [from, to) take `factor` times longer
  double to = kInf;
  double factor = 1;
};

struct SimConfig {
  std::vector<double> times;  // iteration time per rank
  double jitter = 0;          // each iteration × (1 + jitter·U(−1, 1))
  std::uint64_t seed = 1;
  double endTime = 100;
  std::vector<SpeedChange> changes;
  int vanishRank = -1;     // stops pushing after its first pull released at/after vanishAt
  double vanishAt = kInf;
  double upAt = kInf;      // then the server reports it up and it pulls again
  // The server reports these ranks Down at these times although they keep working (a
  // network blip): their next push must bring them back.
  std::vector<std::pair<double, int>> downReports;
};

struct Applied {
  int rank;
  std::int64_t staleness;
  double scale;
  double t;
  ParallelState stateAtApply;
};

struct Release {
  int rank;
  double t;
  std::int64_t lead;  // clock − min clock over live ranks, computed by scanning
  ParallelState state;
};

struct Drop {
  int rank;
  std::int64_t base;
  double t;
};

struct Park {
  int rank;
  double since;
  double waited;
};

struct SimResult {
  std::vector<Applied> applied;
  std::vector<std::size_t> updateSizes;
  std::vector<double> updateTimes;
  std::vector<PolicyDecision> decisions;
  std::vector<Drop> drops;
  std::vector<Release> releases;
  std::vector<Park> parks;
  std::vector<std::pair<int, double>> pushes;  // (rank, time)
  std::int64_t updates = 0;
  bool versionMismatch = false;
  bool emptyReason = false;
  bool deadlock = false;
  bool stuckDeadline = false;
  std::vector<ParallelState> finalStates;
};

class Simulator {
 public:
  Simulator(SyncPolicy& policy, SimConfig cfg) : m_policy(policy), m_cfg(std::move(cfg)) {}

  SimResult run() {
    const int n = static_cast<int>(m_cfg.times.size());
    m_base.assign(static_cast<std::size_t>(n), 0);
    m_vanished.assign(static_cast<std::size_t>(n), false);
    m_rng.seed(m_cfg.seed);
    m_policy.reset(n, 0.0);
    if (m_cfg.upAt < kInf) m_events.push(Event{m_cfg.upAt, m_seq++, kUp, m_cfg.vanishRank});
    for (const auto& d : m_cfg.downReports) m_events.push(Event{d.first, m_seq++, kDown, d.second});
    for (int r = 0; r < n; ++r) tryPull(r);
    int ticksAtSameTime = 0;
    for (;;) {
      const double te = m_events.empty() ? kInf : m_events.top().t;
      const double td = m_policy.nextDeadline();
      if (std::min(te, td) > m_cfg.endTime) break;
      if (td <= te) {
        ticksAtSameTime = td <= m_now ? ticksAtSameTime + 1 : 0;
        if (ticksAtSameTime > 1000) {
          m_result.stuckDeadline = true;  // onTick() did not move the deadline on
          break;
        }
        m_now = std::max(m_now, td);
        m_out.clear();
        m_policy.onTick(m_now, m_out);
        process();
        continue;
      }
      const Event ev = m_events.top();
      m_events.pop();
      m_now = ev.t;
      if (ev.kind == kDown) {
        m_out.clear();
        m_policy.onWorkerDown(ev.rank, m_now, m_out);
        process();
        continue;
      }
      if (ev.kind == kUp) {
        m_vanished[ix(ev.rank)] = false;
        m_out.clear();
        m_policy.onWorkerUp(ev.rank, m_now, m_out);
        process();
        tryPull(ev.rank);
        continue;
      }
      m_result.pushes.emplace_back(ev.rank, m_now);
      m_out.clear();
      m_policy.onPush(ev.rank, m_base[ix(ev.rank)], m_now, m_out);
      process();
      tryPull(ev.rank);
    }
    // Everyone parked or gone with nothing scheduled and nothing to time out: stuck.
    m_result.deadlock = m_events.empty() && m_policy.nextDeadline() == kInf;
    for (int r = 0; r < n; ++r) m_result.finalStates.push_back(m_policy.state(r));
    return m_result;
  }

 private:
  enum Kind { kPush, kUp, kDown };
  struct Event {
    double t;
    std::uint64_t seq;
    Kind kind;
    int rank;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  static std::size_t ix(int r) { return static_cast<std::size_t>(r); }

  double iterationTime(int r) {
    double t = m_cfg.times[ix(r)];
    for (const auto& c : m_cfg.changes) {
      if (c.rank == r && m_now >= c.from && m_now < c.to) t *= c.factor;
    }
    // A batch the policy sized (DASP ADAPTIVE) takes proportionally long, as real compute.
    const int batch = m_policy.batchFor(r);
    if (batch > 0) t *= static_cast<double>(batch) / 64.0;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    return t * (1.0 + m_cfg.jitter * u(m_rng));
  }

  std::int64_t leadOf(int r) const {
    std::int64_t minClock = std::numeric_limits<std::int64_t>::max();
    for (int i = 0; i < static_cast<int>(m_cfg.times.size()); ++i) {
      if (m_policy.state(i) != ParallelState::Down) {
        minClock = std::min(minClock, m_policy.clock(i));
      }
    }
    return m_policy.clock(r) - minClock;
  }

  void tryPull(int r) {
    if (m_policy.mayProceed(r, m_now)) {
      release(r, m_now);
    } else {
      m_parked.push_back(Park{r, m_now, 0});
    }
  }

  void release(int r, double since) {
    if (m_now > since) m_result.parks.push_back(Park{r, since, m_now - since});
    m_result.releases.push_back(Release{r, m_now, leadOf(r), m_policy.state(r)});
    m_base[ix(r)] = m_policy.version();
    m_policy.onPullReleased(r, m_base[ix(r)], m_now);
    if (r == m_cfg.vanishRank && m_now >= m_cfg.vanishAt && m_now < m_cfg.upAt) {
      m_vanished[ix(r)] = true;  // computes for ever: never pushes again
      return;
    }
    m_events.push(Event{m_now + iterationTime(r), m_seq++, kPush, r});
  }

  void process() {
    for (std::size_t u = 0; u < m_out.updateBegin.size(); ++u) {
      const std::size_t b = m_out.updateBegin[u];
      const std::size_t e = u + 1 < m_out.updateBegin.size() ? m_out.updateBegin[u + 1]
                                                             : m_out.gradients.size();
      for (std::size_t g = b; g < e; ++g) {
        const auto& ref = m_out.gradients[g];
        m_result.applied.push_back(Applied{ref.rank, m_version - m_base[ix(ref.rank)], ref.scale,
                                           m_now, m_policy.state(ref.rank)});
      }
      m_result.updateSizes.push_back(e - b);
      m_result.updateTimes.push_back(m_now);
      ++m_version;
      ++m_result.updates;
    }
    if (m_policy.version() != m_version) m_result.versionMismatch = true;
    for (int r : m_out.dropped) m_result.drops.push_back(Drop{r, m_base[ix(r)], m_now});
    for (const auto& d : m_out.decisions) {
      if (d.reason == nullptr || d.reason[0] == '\0') m_result.emptyReason = true;
      m_result.decisions.push_back(d);
    }
    if (!m_out.recheckPulls) return;
    for (std::size_t i = 0; i < m_parked.size();) {
      const Park p = m_parked[i];
      if (m_policy.mayProceed(p.rank, m_now)) {
        m_parked.erase(m_parked.begin() + static_cast<std::ptrdiff_t>(i));
        release(p.rank, p.since);
      } else {
        ++i;
      }
    }
  }

  SyncPolicy& m_policy;
  SimConfig m_cfg;
  SimResult m_result;
  PolicyOutput m_out;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> m_events;
  std::uint64_t m_seq = 0;
  std::vector<std::int64_t> m_base;
  std::vector<bool> m_vanished;
  std::vector<Park> m_parked;
  std::mt19937_64 m_rng;
  std::int64_t m_version = 0;
  double m_now = 0;
};

// ---- helpers --------------------------------------------------------------------------

dasp::v1::StrategySpec strategy(const QString& name) {
  dasp::v1::StrategySpec s;
  s.set_name(name.toStdString());
  return s;
}

// DASP-R, the paper reconstruction (rule PAPER): the DASP tests below pin its rules.
dasp::v1::StrategySpec paperDasp() {
  auto s = strategy("dasp");
  s.mutable_dasp()->set_rule(dasp::v1::DaspParams::PAPER);
  return s;
}

std::unique_ptr<SyncPolicy> make(const dasp::v1::StrategySpec& s) {
  auto made = dasp::makePolicy(s, 64);
  if (!made.isOk()) qFatal("makePolicy: %s", made.message().c_str());
  return std::move(made).value();
}

std::vector<double> toStd(const QList<double>& v) {
  return std::vector<double>(v.begin(), v.end());
}

SimResult simulate(SyncPolicy& policy, SimConfig cfg) {
  return Simulator(policy, std::move(cfg)).run();
}

// State changes of `rank` in order.
std::vector<PolicyDecision> stateChanges(const SimResult& r, int rank) {
  std::vector<PolicyDecision> out;
  for (const auto& d : r.decisions) {
    if (d.kind == DecisionKind::StateChange && d.rank == rank) out.push_back(d);
  }
  return out;
}

int countKind(const SimResult& r, DecisionKind kind, double before = kInf) {
  return static_cast<int>(std::count_if(r.decisions.begin(), r.decisions.end(), [&](const auto& d) {
    return d.kind == kind && d.t < before;
  }));
}

std::int64_t maxStaleness(const SimResult& r) {
  std::int64_t m = 0;
  for (const auto& a : r.applied) m = std::max(m, a.staleness);
  return m;
}

#define CHECK_SIM_SANE(res)                                                          \
  do {                                                                               \
    QVERIFY2(!(res).versionMismatch, "policy version differs from emitted updates"); \
    QVERIFY2(!(res).emptyReason, "a decision without a reason");                     \
    QVERIFY2(!(res).deadlock, "workers deadlocked");                                 \
    QVERIFY2(!(res).stuckDeadline, "onTick() did not advance nextDeadline()");       \
  } while (0)

}  // namespace

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
  void adaptiveEqualBatchesChooseFastGroup();
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

// ---- DASP -----------------------------------------------------------------------------

void TestSyncPolicies::daspHomogeneousIsBsp_data() {
  QTest::addColumn<int>("workers");
  QTest::addColumn<double>("jitter");
  QTest::addColumn<quint64>("seed");
  QTest::newRow("4 exact") << 4 << 0.0 << quint64{1};
  QTest::newRow("4 jitter 2%") << 4 << 0.02 << quint64{2};
  QTest::newRow("8 jitter 5%") << 8 << 0.05 << quint64{3};
  QTest::newRow("16 jitter 5%") << 16 << 0.05 << quint64{4};
}

void TestSyncPolicies::daspHomogeneousIsBsp() {
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
  QVERIFY(countKind(res, DecisionKind::Repartition) > 10);
  for (auto st : res.finalStates) QCOMPARE(st, ParallelState::Sync);
}

void TestSyncPolicies::daspMovesSlowNodeAsync_data() {
  QTest::addColumn<QList<double>>("times");
  QTest::addColumn<int>("hysteresis");
  QTest::newRow("1,1,1,4 h=2") << QList<double>{1, 1, 1, 4} << 2;
  QTest::newRow("1,1,1,4 h=3") << QList<double>{1, 1, 1, 4} << 3;
  QTest::newRow("1,1,1,4 h=1") << QList<double>{1, 1, 1, 4} << 1;
  QTest::newRow("7 fast, 1 slow") << QList<double>{1, 1, 1, 1, 1, 1, 1, 4} << 2;
}

void TestSyncPolicies::daspMovesSlowNodeAsync() {
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
  // Moved by the re-partition, after `hysteresis` agreeing evaluations (the first global
  // round needs the slow node's first push).
  QVERIFY2(countKind(res, DecisionKind::Repartition, changes[0].t + 1e-9) >= hysteresis,
           qPrintable(QStringLiteral("demoted at t=%1").arg(changes[0].t)));
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

void TestSyncPolicies::daspFollowsSpeedChange_data() {
  QTest::addColumn<int>("hysteresis");
  QTest::addColumn<double>("factor");
  QTest::newRow("x4, h=2") << 2 << 4.0;
  QTest::newRow("x4, h=1") << 1 << 4.0;
  QTest::newRow("x3, h=3") << 3 << 3.0;
}

void TestSyncPolicies::daspFollowsSpeedChange() {
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
  // Back in the group: the last rounds include all four again.
  QCOMPARE(res.updateSizes.back(), std::size_t{4});
  // While it was ASYNC the fast nodes kept going: no round waited for the slow node.
  int updatesWhileSlow = 0;
  for (double t : res.updateTimes) updatesWhileSlow += (t > 80 && t < 160) ? 1 : 0;
  QVERIFY2(updatesWhileSlow > 70, qPrintable(QString::number(updatesWhileSlow)));
}

void TestSyncPolicies::daspAsyncScalingAndDrop_data() {
  QTest::addColumn<bool>("scaling");
  QTest::addColumn<int>("sMax");
  QTest::newRow("scaling, s_max 8") << true << 8;
  QTest::newRow("no scaling, s_max 8") << false << 8;
  QTest::newRow("scaling, s_max 1") << true << 1;
  QTest::newRow("no scaling, s_max 0") << false << 0;
}

void TestSyncPolicies::daspAsyncScalingAndDrop() {
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

void TestSyncPolicies::daspLeadCap_data() {
  QTest::addColumn<bool>("leadCap");
  QTest::addColumn<int>("sHigh");
  QTest::newRow("cap 2") << true << 2;
  QTest::newRow("cap 5") << true << 5;
  QTest::newRow("no cap") << false << 2;
}

void TestSyncPolicies::daspLeadCap() {
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

// ---- membership -----------------------------------------------------------------------

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

void TestSyncPolicies::adaptiveHomogeneousIsBsp_data() {
  QTest::addColumn<int>("workers");
  QTest::newRow("4") << 4;
  QTest::newRow("16") << 16;
}

void TestSyncPolicies::adaptiveHomogeneousIsBsp() {
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

void TestSyncPolicies::adaptiveBalancesBatches_data() {
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

void TestSyncPolicies::adaptiveBalancesBatches() {
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

void TestSyncPolicies::adaptiveFollowsSpeedChange_data() {
  QTest::addColumn<double>("factor");
  QTest::newRow("slows x4") << 4.0;
  QTest::newRow("slows x3") << 3.0;
  QTest::newRow("speeds up x4") << 0.25;
}

void TestSyncPolicies::adaptiveFollowsSpeedChange() {
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

void TestSyncPolicies::adaptiveTooSlowNodeRunsAsync() {
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

void TestSyncPolicies::adaptiveLateGradientJoinsNextRound() {
  // Rank 1 is ×2 for one iteration: the round times out at kappa (1.5) × its expected
  // compute, it stays SYNC, and its late gradient enters the next round with staleness 1:
  // none dropped.
  auto policy = make(adaptiveDasp());
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

void TestSyncPolicies::adaptiveEqualBatchesChooseFastGroup() {
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

void TestSyncPolicies::vanishedWorkerNeverDeadlocks_data() {
  QTest::addColumn<QString>("name");
  QTest::newRow("bsp") << QStringLiteral("bsp");
  QTest::newRow("backup") << QStringLiteral("backup");
  QTest::newRow("dasp") << QStringLiteral("dasp");
  QTest::newRow("ssp") << QStringLiteral("ssp");
  QTest::newRow("dssp") << QStringLiteral("dssp");
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
  for (const char* n : {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}) {
    QTest::newRow(n) << QString::fromLatin1(n);
  }
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
  for (const char* n : {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}) {
    for (quint64 seed : {1ULL, 2ULL, 3ULL}) {
      const QString row = QStringLiteral("%1 seed %2").arg(QLatin1String(n)).arg(seed);
      QTest::newRow(qPrintable(row)) << QString::fromLatin1(n) << seed;
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
  for (const char* n : {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}) {
    QTest::newRow(n) << QString::fromLatin1(n);
  }
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
  for (const char* n : {"bsp", "asp", "ssp", "dssp", "backup", "dasp"}) {
    QTest::newRow(n) << QString::fromLatin1(n) << QString::fromLatin1(n);
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
  QTest::newRow("unknown name")
      << QStringLiteral("name")
      << QStringLiteral(
             "strategy.name: unknown strategy 'x' (known: bsp, asp, ssp, dssp, backup, dasp)");
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
