// SPDX-License-Identifier: MIT
// DASP-R: the reconstruction of the paper's rule (strategy.dasp.rule PAPER).
#include "core/policy/policy_internal.h"
#include "core/policy/sync_policies.h"

#include <algorithm>
#include <cmath>

namespace dasp {

using namespace policy_internal;

// ---------------------------------------------------------------------------------------
// DASP-R

DaspPolicy::DaspPolicy(const DaspParamsResolved& params)
    : PolicyBase(ParallelState::Sync, params.barrierTimeoutS), m_p(params) {
  m_cluster.setAlpha(params.alpha);
}

void DaspPolicy::resetRule(int workers, double /*now*/) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_barrier.reset(workers);
  for (int r = 0; r < workers; ++r) m_barrier.addMember(r);
  m_pushedSince.assign(n, 0);
  m_pushedSinceCount = 0;
  m_agree.assign(n, 0);
  m_partition.assign(n, 1);  // every node starts SYNC: the partition before the first
  m_roundDeadline = kInf;
}

PushOutcome DaspPolicy::onPush(int rank, std::int64_t baseVersion, double now,
                               PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  if (m_cluster.recordPush(rank, now)) out.recheckPulls = true;
  PushOutcome result;
  if (m_barrier.isMember(rank) && !m_barrier.hasPushed(rank)) {
    if (!m_barrier.open()) startRoundClock(now);
    m_barrier.hold(rank, now);
    result = PushOutcome::Held;
    if (m_barrier.complete()) {
      closeRound(out);
      result = PushOutcome::Applied;
    }
  } else {
    // ASYNC nodes, a promoted node before its round boundary, and a demoted member's late
    // push all take the ASYNC rule.
    result = pushAsync(rank, baseVersion, now, out);
  }
  markPushed(rank);
  maybeRepartition(now, out);
  return result;
}

PushOutcome DaspPolicy::pushAsync(int rank, std::int64_t baseVersion, double now,
                                  PolicyOutput& out) {
  return applyAsync(rank, baseVersion, now, m_p.sMax, m_p.stalenessScaling, 1.0, "ASYNC gradient staler than s_max",
                    out);
}

bool DaspPolicy::mayProceed(int rank, double /*now*/) const {
  return daspMayProceed(m_barrier, m_p.leadCap, m_p.sHigh, rank);
}

void DaspPolicy::onTick(double now, PolicyOutput& out) {
  if (m_barrier.open() && m_barrier.waiting() > 0 && now >= m_roundDeadline) {
    decide(out, now, -1, DecisionKind::BarrierTimeout, ParallelState::Sync, ParallelState::Sync,
           m_barrier.waiting(), "SYNC round closed at kappa x the slowest member's compute time");
    const auto& listed = m_barrier.listed();
    for (std::size_t i = 0; i < listed.size(); ++i) {
      const int r = listed[i];
      if (!m_barrier.isMember(r) || m_barrier.hasPushed(r)) continue;
      // Missed the timeout: ASYNC at once, so its late push is applied as an ASYNC push.
      stateChange(out, now, r, ParallelState::Async, "missed the SYNC barrier timeout");
      m_barrier.leave(r);
      m_agree[ix(r)] = 0;
    }
    if (m_barrier.complete()) closeRound(out);
    out.recheckPulls = true;
  }
  expireSilent(now, out);
}

double DaspPolicy::nextDeadline() const {
  const double round = m_barrier.open() && m_barrier.waiting() > 0 ? m_roundDeadline : kInf;
  return std::min(round, silentDeadline());
}

void DaspPolicy::afterDown(int rank, double now, PolicyOutput& out) {
  m_barrier.leave(rank);
  m_agree[ix(rank)] = 0;
  if (m_pushedSince[ix(rank)]) {
    m_pushedSince[ix(rank)] = 0;
    --m_pushedSinceCount;
  }
  if (m_barrier.complete()) closeRound(out);
  maybeRepartition(now, out);
}

void DaspPolicy::afterUp(int rank, double /*now*/, PolicyOutput& /*out*/) {
  // Back as SYNC: a member at once when the round is empty, else at its boundary.
  m_agree[ix(rank)] = 0;
  m_barrier.join(rank);
}

void DaspPolicy::startRoundClock(double now) {
  // T_out = kappa · max Δ over the SYNC members. A member not measured yet (the first
  // round, a node back from Down without a sample) has no speed to be late against, so the
  // round falls back to barrier_timeout_s.
  double slowest = 0;
  bool allMeasured = true;
  for (int r : m_barrier.listed()) {
    if (!m_barrier.isMember(r)) continue;
    if (!m_cluster.hasComputeTime(r)) {
      allMeasured = false;
      break;
    }
    slowest = std::max(slowest, m_cluster.computeTime(r));
  }
  m_roundDeadline = now + (allMeasured && slowest > 0 ? m_p.kappa * slowest : m_barrierTimeout);
}

void DaspPolicy::closeRound(PolicyOutput& out) {
  beginUpdate(out);
  for (int r : m_barrier.held()) out.gradients.push_back(GradientRef{r, 1.0});
  endUpdate();
  m_barrier.close();
  m_roundDeadline = kInf;
  out.recheckPulls = true;
}

void DaspPolicy::markPushed(int rank) {
  if (m_pushedSince[ix(rank)]) return;
  m_pushedSince[ix(rank)] = 1;
  ++m_pushedSinceCount;
}

void DaspPolicy::maybeRepartition(double now, PolicyOutput& out) {
  if (m_cluster.liveCount() > 0 && m_pushedSinceCount >= m_cluster.liveCount()) {
    repartition(now, out);
  }
}

void DaspPolicy::repartition(double now, PolicyOutput& out) {
  // Runs once per global round (every live worker pushed), so this O(workers) pass is O(1)
  // amortized per push.
  std::fill(m_pushedSince.begin(), m_pushedSince.end(), std::uint8_t{0});
  m_pushedSinceCount = 0;
  const int n = m_cluster.workers();
  double fastest = kInf;
  for (int r = 0; r < n; ++r) {
    if (m_cluster.isLive(r) && m_cluster.hasComputeTime(r)) {
      fastest = std::min(fastest, m_cluster.computeTime(r));
    }
  }
  if (fastest == kInf) return;
  const double threshold = (1.0 + m_p.delta) * fastest;
  int candidates = 0;
  for (int r = 0; r < n; ++r) {
    if (m_cluster.isLive(r) && m_cluster.hasComputeTime(r) &&
        m_cluster.computeTime(r) <= threshold) {
      ++candidates;
    }
  }
  // Change-only record: the re-partition runs every global round (about a dozen times a
  // second), and one whose SYNC set equals the previous one's changed nothing worth a row.
  // A node not measured (or not live) keeps its previous place in the partition.
  bool partitionChanged = false;
  for (int r = 0; r < n; ++r) {
    if (!m_cluster.isLive(r) || !m_cluster.hasComputeTime(r)) continue;
    const std::uint8_t want = candidates > 1 && m_cluster.computeTime(r) <= threshold ? 1 : 0;
    if (m_partition[ix(r)] != want) partitionChanged = true;
    m_partition[ix(r)] = want;
  }
  if (partitionChanged) {
    decide(out, now, -1, DecisionKind::Repartition, ParallelState::Sync, ParallelState::Sync, candidates,
           "re-partitioned by compute time: SYNC = within (1+delta) of the fastest (recorded when the SYNC set "
           "changes)");
  }
  for (int r = 0; r < n; ++r) {
    if (!m_cluster.isLive(r) || !m_cluster.hasComputeTime(r)) continue;
    // A lone candidate has nobody to synchronize with: it runs ASYNC.
    const bool wantSync = m_partition[ix(r)] != 0;
    const bool isSync = m_cluster.state(r) == ParallelState::Sync;
    int& agree = m_agree[ix(r)];
    if (wantSync == isSync) {
      agree = 0;
      continue;
    }
    if (++agree < m_p.hysteresis) continue;
    agree = 0;
    if (wantSync) {
      stateChange(out, now, r, ParallelState::Sync,
                  "promoted: compute time within (1+delta) of the fastest; joins the SYNC "
                  "group at its next round boundary");
      m_barrier.join(r);
    } else {
      stateChange(out, now, r, ParallelState::Async,
                  "demoted: compute time above (1+delta) x the fastest");
      m_barrier.leave(r);
    }
  }
  if (m_barrier.complete()) closeRound(out);
  out.recheckPulls = true;
}

}  // namespace dasp
