// SPDX-License-Identifier: MIT
// The policies' common part: names of the enums, the round barrier, PolicyBase.
#include "core/policy/policy_internal.h"
#include "core/policy/sync_policies.h"

#include <algorithm>
#include <cmath>

namespace dasp {

using namespace policy_internal;

// ---------------------------------------------------------------------------------------
// toString

const char* toString(ParallelState state) {
  switch (state) {
    case ParallelState::Sync: return "SYNC";
    case ParallelState::Async: return "ASYNC";
    case ParallelState::Down: return "DOWN";
  }
  return "?";
}

const char* toString(PushOutcome outcome) {
  switch (outcome) {
    case PushOutcome::Applied: return "applied";
    case PushOutcome::Held: return "held";
    case PushOutcome::Dropped: return "dropped";
  }
  return "?";
}

int anytimeBatch(const ComputeBudget& budget, double perSampleS) {
  const int cap = std::max(1, budget.maxBatch);
  const int micro = std::clamp(budget.granularity, 1, cap);
  if (!(budget.seconds > 0) || !(perSampleS > 0)) return micro;
  const double microS = perSampleS * micro;
  // The micro-batches that end within the budget: a round's members then all push by its
  // end, and none holds it up by a micro-batch begun late.
  const double fit = std::floor(budget.seconds / microS + 1e-9);
  const double whole = std::min(std::max(1.0, fit), static_cast<double>(cap / micro));
  return static_cast<int>(whole) * micro;
}

// ---------------------------------------------------------------------------------------
// RoundBarrier

void RoundBarrier::reset(int workers) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_flags.assign(n, 0);
  m_list.clear();
  m_list.reserve(n);
  m_joiners.clear();
  m_joiners.reserve(n);
  m_held.clear();
  m_held.reserve(n);
  m_scratch.clear();
  m_scratch.reserve(n);
  m_waiting = 0;
  m_memberCount = 0;
  m_firstPush = 0;
}

void RoundBarrier::addMember(int rank) {
  std::uint8_t& f = m_flags[idx(rank)];
  if (f & kMember) return;
  f = static_cast<std::uint8_t>((f | kMember) & ~(kJoining | kLeaving));
  if (!(f & kListed)) {
    f |= kListed;
    m_list.push_back(rank);
  }
  ++m_memberCount;
  if (!(f & kPushed)) ++m_waiting;
}

bool RoundBarrier::join(int rank) {
  std::uint8_t& f = m_flags[idx(rank)];
  if (f & kMember) {
    // A member that was leaving (its gradient is in this round) simply stays.
    f = static_cast<std::uint8_t>(f & ~kLeaving);
    return true;
  }
  if (f & kJoining) return false;
  if (m_held.empty()) {
    addMember(rank);
    return true;
  }
  f |= kJoining;
  m_joiners.push_back(rank);
  return false;
}

void RoundBarrier::leave(int rank) {
  std::uint8_t& f = m_flags[idx(rank)];
  if (f & kJoining) {
    f = static_cast<std::uint8_t>(f & ~kJoining);  // its m_joiners entry is skipped at close
    return;
  }
  if (!(f & kMember)) return;
  if (f & kPushed) {
    f |= kLeaving;
    return;
  }
  f = static_cast<std::uint8_t>(f & ~kMember);
  --m_memberCount;
  --m_waiting;
}

void RoundBarrier::hold(int rank, double now) {
  std::uint8_t& f = m_flags[idx(rank)];
  f |= kPushed;
  if (m_held.empty()) m_firstPush = now;
  m_held.push_back(rank);
  --m_waiting;
}

void RoundBarrier::close(std::vector<int>* joined) {
  for (int r : m_held) m_flags[idx(r)] = static_cast<std::uint8_t>(m_flags[idx(r)] & ~kPushed);
  m_held.clear();
  m_scratch.clear();
  for (int r : m_list) {
    std::uint8_t& f = m_flags[idx(r)];
    if ((f & kMember) && !(f & kLeaving)) {
      m_scratch.push_back(r);
    } else {
      f = static_cast<std::uint8_t>(f & ~(kMember | kLeaving | kListed));
    }
  }
  m_list.swap(m_scratch);
  m_memberCount = static_cast<int>(m_list.size());
  m_waiting = m_memberCount;
  for (int r : m_joiners) {
    if (!(m_flags[idx(r)] & kJoining)) continue;
    addMember(r);
    if (joined) joined->push_back(r);
  }
  m_joiners.clear();
}

// ---------------------------------------------------------------------------------------
// PolicyBase

PolicyBase::PolicyBase(ParallelState liveState, double barrierTimeoutS)
    : m_liveState(liveState), m_barrierTimeout(barrierTimeoutS) {}

void PolicyBase::reset(int workers, double now) {
  m_version = 0;
  m_cluster.reset(workers, now, m_liveState);
  resetRule(workers, now);
}

void PolicyBase::onPullReleased(int rank, std::int64_t version, double now) {
  if (!m_cluster.valid(rank)) return;
  m_cluster.recordPullRelease(rank, version, now);
}

void PolicyBase::onWorkerDown(int rank, double now, PolicyOutput& out) {
  if (!m_cluster.valid(rank) || !m_cluster.isLive(rank)) return;
  takeDown(rank, now, kReasonReportedDown, out);
}

void PolicyBase::onWorkerUp(int rank, double now, PolicyOutput& out) {
  if (!m_cluster.valid(rank) || m_cluster.isLive(rank)) return;
  bringUp(rank, now, kReasonReportedUp, out);
}

ParallelState PolicyBase::state(int rank) const {
  return m_cluster.valid(rank) ? m_cluster.state(rank) : ParallelState::Down;
}

std::int64_t PolicyBase::clock(int rank) const {
  return m_cluster.valid(rank) ? m_cluster.clock(rank) : 0;
}

PushOutcome PolicyBase::applyAsync(int rank, std::int64_t baseVersion, double now, int sMax, bool stalenessScaling,
                                   double weight, const char* dropReason, PolicyOutput& out) {
  const std::int64_t tau = std::max<std::int64_t>(0, m_version - baseVersion);
  if (tau > sMax) {
    out.dropped.push_back(rank);
    decide(out, now, rank, DecisionKind::Drop, m_cluster.state(rank), m_cluster.state(rank), tau, dropReason);
    return PushOutcome::Dropped;
  }
  const double scale = stalenessScaling ? weight / static_cast<double>(std::max<std::int64_t>(1, tau)) : weight;
  emitSingle(out, rank, scale);
  return PushOutcome::Applied;
}

bool PolicyBase::daspMayProceed(const RoundBarrier& barrier, bool leadCap, int sHigh, int rank) const {
  if (!m_cluster.valid(rank)) return false;
  if (!m_cluster.isLive(rank)) return true;
  if (barrier.waitsForBoundary(rank)) return false;
  return !(leadCap && m_cluster.state(rank) == ParallelState::Async && m_cluster.lead(rank) > sHigh);
}

void PolicyBase::emitSingle(PolicyOutput& out, int rank, double scale) {
  beginUpdate(out);
  out.gradients.push_back(GradientRef{rank, scale});
  endUpdate();
}

void PolicyBase::beginUpdate(PolicyOutput& out) {
  out.updateBegin.push_back(static_cast<std::uint32_t>(out.gradients.size()));
}

void PolicyBase::decide(PolicyOutput& out, double t, int rank, DecisionKind kind,
                        ParallelState from, ParallelState to, std::int64_t value,
                        const char* reason) {
  PolicyDecision d;
  d.t = t;
  d.rank = rank;
  d.kind = kind;
  d.from = from;
  d.to = to;
  d.value = value;
  d.reason = reason;
  out.decisions.push_back(d);
}

void PolicyBase::stateChange(PolicyOutput& out, double t, int rank, ParallelState to,
                             const char* reason) {
  const ParallelState from = m_cluster.state(rank);
  m_cluster.setState(rank, to);
  decide(out, t, rank, DecisionKind::StateChange, from, to, 0, reason);
}

void PolicyBase::takeDown(int rank, double now, const char* reason, PolicyOutput& out) {
  const ParallelState from = m_cluster.state(rank);
  m_cluster.markDown(rank);
  // c_min may have risen, and a Down rank's own parked pull is now released.
  out.recheckPulls = true;
  decide(out, now, rank, DecisionKind::StateChange, from, ParallelState::Down, 0, reason);
  afterDown(rank, now, out);
}

void PolicyBase::bringUp(int rank, double now, const char* reason, PolicyOutput& out) {
  m_cluster.markUp(rank, now, m_liveState);
  decide(out, now, rank, DecisionKind::StateChange, ParallelState::Down, m_liveState, 0, reason);
  afterUp(rank, now, out);
}

void PolicyBase::expireSilent(double now, PolicyOutput& out) {
  for (int r = m_cluster.oldestSilent();
       r >= 0 && m_cluster.silentSince(r) + m_barrierTimeout <= now; r = m_cluster.oldestSilent()) {
    takeDown(r, now, kReasonSilent, out);
  }
}

double PolicyBase::silentDeadline() const {
  const int r = m_cluster.oldestSilent();
  return r >= 0 ? m_cluster.silentSince(r) + m_barrierTimeout : kInf;
}

}  // namespace dasp
