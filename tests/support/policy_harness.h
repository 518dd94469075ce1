// SPDX-License-Identifier: MIT
#pragma once
// The sync policies' test harness (tests/core/tst_sync_policies.cpp, tst_dasp_policies.cpp):
// sequences: a small discrete-event simulator runs N workers of given iteration times on a
// virtual clock (pull → mayProceed? → compute → push → pull ...; onTick at nextDeadline())
// and records every applied gradient's staleness, every release's lead and every parked
// time, so each rule's invariants can be checked. Pure logic: no sleeps, no threads.
#include "core/policy/cluster_state.h"
#include "core/policy/dasp_adaptive.h"
#include "core/policy/sync_policies.h"
#include "core/policy/sync_policy.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>


namespace policy_harness {

using dasp::anytimeBatch;
using dasp::ComputeBudget;
using dasp::DecisionKind;
using dasp::ParallelState;
using dasp::PolicyDecision;
using dasp::PolicyOutput;
using dasp::SyncPolicy;


inline constexpr double kInf = std::numeric_limits<double>::infinity();

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
  // The server is busy this long after each update (applying it): pulls wait until then.
  double applySeconds = 0;
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
  std::vector<int> pushedBatches;              // the samples of each of `pushes`
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
    m_batch.assign(static_cast<std::size_t>(n), 64);
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
      if (ev.kind == kServerDone) {
        recheckParked();
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
      m_result.pushedBatches.push_back(m_batch[ix(ev.rank)]);
      m_out.clear();
      m_policy.onPushedBatch(ev.rank, m_batch[ix(ev.rank)]);
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
  enum Kind { kPush, kUp, kDown, kServerDone };
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
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    t *= 1.0 + m_cfg.jitter * u(m_rng);
    // A batch the policy sized (DASP ADAPTIVE) takes proportionally long, as real compute;
    // under a compute budget the node computes what fits at this iteration's speed.
    const ComputeBudget budget = m_policy.computeBudgetFor(r);
    const int batch = budget.seconds > 0 ? anytimeBatch(budget, t / 64.0) : m_policy.batchFor(r);
    m_batch[ix(r)] = batch > 0 ? batch : 64;
    return t * static_cast<double>(m_batch[ix(r)]) / 64.0;
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
    if (m_now >= m_busyUntil && m_policy.mayProceed(r, m_now)) {
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
    if (!m_out.updateBegin.empty() && m_cfg.applySeconds > 0) {
      m_busyUntil = m_now + m_cfg.applySeconds;
      m_events.push(Event{m_busyUntil, m_seq++, kServerDone, -1});
      return;
    }
    if (m_out.recheckPulls) recheckParked();
  }

  void recheckParked() {
    if (m_now < m_busyUntil) return;
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
  std::vector<int> m_batch;  // per rank: the samples of its iteration in flight
  std::vector<bool> m_vanished;
  std::vector<Park> m_parked;
  std::mt19937_64 m_rng;
  std::int64_t m_version = 0;
  double m_now = 0;
  double m_busyUntil = 0;
};

// ---- helpers --------------------------------------------------------------------------

inline dasp::v1::StrategySpec strategy(const QString& name) {
  dasp::v1::StrategySpec s;
  s.set_name(name.toStdString());
  return s;
}

// DASP-R, the paper reconstruction (rule PAPER): the DASP tests below pin its rules.
inline dasp::v1::StrategySpec paperDasp() {
  auto s = strategy("dasp");
  s.mutable_dasp()->set_rule(dasp::v1::DaspParams::PAPER);
  return s;
}

inline std::unique_ptr<SyncPolicy> make(const dasp::v1::StrategySpec& s) {
  auto made = dasp::makePolicy(s, 64);
  if (!made.isOk()) qFatal("makePolicy: %s", made.message().c_str());
  return std::move(made).value();
}

inline std::vector<double> toStd(const QList<double>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline SimResult simulate(SyncPolicy& policy, SimConfig cfg) {
  return Simulator(policy, std::move(cfg)).run();
}

// State changes of `rank` in order.
inline std::vector<PolicyDecision> stateChanges(const SimResult& r, int rank) {
  std::vector<PolicyDecision> out;
  for (const auto& d : r.decisions) {
    if (d.kind == DecisionKind::StateChange && d.rank == rank) out.push_back(d);
  }
  return out;
}

inline int countKind(const SimResult& r, DecisionKind kind, double before = kInf) {
  return static_cast<int>(std::count_if(r.decisions.begin(), r.decisions.end(), [&](const auto& d) {
    return d.kind == kind && d.t < before;
  }));
}

inline std::vector<PolicyDecision> decisionsOf(const SimResult& r, DecisionKind kind) {
  std::vector<PolicyDecision> out;
  std::copy_if(r.decisions.begin(), r.decisions.end(), std::back_inserter(out),
               [&](const auto& d) { return d.kind == kind; });
  return out;
}

inline std::int64_t maxStaleness(const SimResult& r) {
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

}  // namespace policy_harness
