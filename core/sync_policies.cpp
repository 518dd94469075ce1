// SPDX-License-Identifier: MIT
// The sync policies: BSP, ASP, SSP, DSSP, backup workers, DASP-R, and makePolicy().
#include "core/sync_policies.h"

#include "core/dasp_adaptive.h"
#include "core/spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace dasp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Static reasons: a decision allocates nothing.
constexpr const char* kReasonReportedDown = "reported down by the server";
constexpr const char* kReasonReportedUp = "reported up by the server";
constexpr const char* kReasonPushedWhileDown = "pushed while Down: back up";
constexpr const char* kReasonSilent = "no push for barrier_timeout_s after its pull";
constexpr const char* kReasonMissedBarrier = "missed the barrier timeout";

std::size_t ix(int rank) { return static_cast<std::size_t>(rank); }

}  // namespace

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

const char* toString(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::StateChange: return "state_change";
    case DecisionKind::Drop: return "drop";
    case DecisionKind::BarrierTimeout: return "barrier_timeout";
    case DecisionKind::Repartition: return "repartition";
    case DecisionKind::Grant: return "grant";
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

// ---------------------------------------------------------------------------------------
// BSP

BspPolicy::BspPolicy(double barrierTimeoutS) : PolicyBase(ParallelState::Sync, barrierTimeoutS) {}

void BspPolicy::resetRule(int workers, double /*now*/) {
  m_barrier.reset(workers);
  for (int r = 0; r < workers; ++r) m_barrier.addMember(r);
}

PushOutcome BspPolicy::onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  m_cluster.recordPush(rank, now);
  if (m_barrier.isMember(rank) && !m_barrier.hasPushed(rank) && baseVersion == m_version) {
    m_barrier.hold(rank, now);
    if (m_barrier.complete()) {
      closeRound(out);
      return PushOutcome::Applied;
    }
    return PushOutcome::Held;
  }
  // Computed on an older version (it missed its round, or is rejoining) or a second push in
  // one round: BSP applies only gradients of the current round, so staleness stays 0.
  out.dropped.push_back(rank);
  decide(out, now, rank, DecisionKind::Drop, m_cluster.state(rank), m_cluster.state(rank),
         m_version - baseVersion, "not computed on the current BSP round's version");
  return PushOutcome::Dropped;
}

bool BspPolicy::mayProceed(int rank, double /*now*/) const {
  if (!m_cluster.valid(rank)) return false;
  if (!m_cluster.isLive(rank)) return true;
  return !m_barrier.waitsForBoundary(rank);
}

void BspPolicy::onTick(double now, PolicyOutput& out) {
  if (!(m_barrier.open() && m_barrier.waiting() > 0 &&
        now >= m_barrier.firstPushTime() + m_barrierTimeout)) {
    return;
  }
  decide(out, now, -1, DecisionKind::BarrierTimeout, ParallelState::Sync, ParallelState::Sync,
         m_barrier.waiting(), "round closed at barrier_timeout_s without every member");
  // Index loop: leave() only changes flags, and closing waits until every missing member
  // is out (afterDown() does not close while the round's member list is walked).
  m_timingOut = true;
  const auto& listed = m_barrier.listed();
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const int r = listed[i];
    if (m_barrier.isMember(r) && !m_barrier.hasPushed(r) && m_cluster.isLive(r)) {
      takeDown(r, now, kReasonMissedBarrier, out);
    }
  }
  m_timingOut = false;
  if (m_barrier.complete()) closeRound(out);
}

double BspPolicy::nextDeadline() const {
  return m_barrier.open() && m_barrier.waiting() > 0 ? m_barrier.firstPushTime() + m_barrierTimeout
                                                      : kInf;
}

void BspPolicy::afterDown(int rank, double /*now*/, PolicyOutput& out) {
  m_barrier.leave(rank);
  if (!m_timingOut && m_barrier.complete()) closeRound(out);
}

void BspPolicy::afterUp(int rank, double /*now*/, PolicyOutput& /*out*/) { m_barrier.join(rank); }

void BspPolicy::closeRound(PolicyOutput& out) {
  beginUpdate(out);
  for (int r : m_barrier.held()) out.gradients.push_back(GradientRef{r, 1.0});
  endUpdate();
  m_barrier.close();
  out.recheckPulls = true;
}

// ---------------------------------------------------------------------------------------
// ASP

AspPolicy::AspPolicy() : PolicyBase(ParallelState::Async, kInf) {}

PushOutcome AspPolicy::onPush(int rank, std::int64_t /*baseVersion*/, double now,
                              PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  m_cluster.recordPush(rank, now);
  emitSingle(out, rank, 1.0);
  return PushOutcome::Applied;
}

bool AspPolicy::mayProceed(int rank, double /*now*/) const { return m_cluster.valid(rank); }

void AspPolicy::onTick(double /*now*/, PolicyOutput& /*out*/) {}

// ---------------------------------------------------------------------------------------
// SSP

SspPolicy::SspPolicy(int staleness, double barrierTimeoutS)
    : PolicyBase(ParallelState::Async, barrierTimeoutS), m_s(staleness) {}

PushOutcome SspPolicy::onPush(int rank, std::int64_t /*baseVersion*/, double now,
                              PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  if (m_cluster.recordPush(rank, now)) out.recheckPulls = true;
  emitSingle(out, rank, 1.0);
  return PushOutcome::Applied;
}

bool SspPolicy::mayProceed(int rank, double /*now*/) const {
  if (!m_cluster.valid(rank)) return false;
  if (!m_cluster.isLive(rank)) return true;
  return m_cluster.lead(rank) <= m_s;
}

void SspPolicy::onTick(double now, PolicyOutput& out) {
  // Only while the bound can block someone is a silent worker worth declaring Down.
  while (m_cluster.cMax() - m_cluster.cMin() > m_s && silentDeadline() <= now) {
    takeDown(m_cluster.oldestSilent(), now, kReasonSilent, out);
  }
}

double SspPolicy::nextDeadline() const {
  return m_cluster.cMax() - m_cluster.cMin() > m_s ? silentDeadline() : kInf;
}

// ---------------------------------------------------------------------------------------
// DSSP

DsspPolicy::DsspPolicy(int sLow, int sHigh, double barrierTimeoutS)
    : PolicyBase(ParallelState::Async, barrierTimeoutS), m_sLow(sLow), m_sHigh(sHigh) {}

void DsspPolicy::resetRule(int workers, double /*now*/) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_extra.assign(n, 0);
  m_pass.assign(n, 0);
}

PushOutcome DsspPolicy::onPush(int p, std::int64_t /*baseVersion*/, double now,
                               PolicyOutput& out) {
  if (!m_cluster.valid(p)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(p)) bringUp(p, now, kReasonPushedWhileDown, out);
  // Rule 1: c_p++ and apply.
  if (m_cluster.recordPush(p, now)) out.recheckPulls = true;  // rule 5's re-check
  emitSingle(out, p, 1.0);
  m_pass[ix(p)] = 0;
  const std::int64_t lead = m_cluster.lead(p);
  if (m_extra[ix(p)] > 0 && lead <= m_sHigh) {
    // Rule 2: a granted iteration left.
    --m_extra[ix(p)];
    m_pass[ix(p)] = 1;
  } else if (lead <= m_sLow) {
    // Rule 3: within s_L; mayProceed() sees it from the clocks.
    m_extra[ix(p)] = 0;
  } else if (m_cluster.clock(p) == m_cluster.cMax()) {
    // Rule 4: the fastest worker asks the controller. The release now is the first granted
    // iteration, so r iterations reach a lead of at most lead + r − 1: clamp r to keep that
    // within s_H (the bound DSSP promises).
    m_extra[ix(p)] = 0;
    int r = controller(p, now);
    r = static_cast<int>(std::min<std::int64_t>(r, m_sHigh - lead + 1));
    if (r > 0) {
      m_pass[ix(p)] = 1;
      m_extra[ix(p)] = r - 1;
      decide(out, now, p, DecisionKind::Grant, ParallelState::Async, ParallelState::Async, r,
             "fastest worker granted iterations beyond s_low");
    }
  } else {
    m_extra[ix(p)] = 0;  // rule 5: blocked until c_p − c_min ≤ s_L
  }
  return PushOutcome::Applied;
}

bool DsspPolicy::mayProceed(int rank, double /*now*/) const {
  if (!m_cluster.valid(rank)) return false;
  if (!m_cluster.isLive(rank)) return true;
  return m_pass[ix(rank)] != 0 || m_cluster.lead(rank) <= m_sLow;
}

void DsspPolicy::onPullReleased(int rank, std::int64_t version, double now) {
  PolicyBase::onPullReleased(rank, version, now);
  if (m_cluster.valid(rank)) m_pass[ix(rank)] = 0;  // a pass is good for one pull
}

int DsspPolicy::controller(int fastest, double now) const {
  const int range = m_sHigh - m_sLow;
  if (range <= 0) return 0;
  const int q = m_cluster.slowestRank();
  if (q < 0 || q == fastest) return 0;
  const double intervalF = m_cluster.pushInterval(fastest);
  const double intervalQ = m_cluster.pushInterval(q);
  if (!(intervalF > 0) || !(intervalQ > 0)) return 0;  // no prediction yet: wait
  const double tF = now;
  const double tQ = m_cluster.lastPushTime(q);
  // r* = argmin_k min_j |F_k − Q_j|, F_k = t_f + k·I_f (k = 0..R), Q_j = t_q + j·I_q
  // (j = 1..R). Q is an arithmetic sequence, so the nearest Q_j to F_k is the rounded
  // index clamped to [1, R]: O(R) in all.
  double best = kInf;
  int bestK = 0;
  for (int k = 0; k <= range; ++k) {
    const double f = tF + k * intervalF;
    const double jr = (f - tQ) / intervalQ;
    int j;
    if (jr <= 1.0) {
      j = 1;
    } else if (jr >= range) {
      j = range;
    } else {
      j = static_cast<int>(std::lround(jr));
    }
    const double d = std::fabs(f - (tQ + j * intervalQ));
    if (d < best) {
      best = d;
      bestK = k;
    }
  }
  return bestK;
}

void DsspPolicy::onTick(double now, PolicyOutput& out) {
  while (m_cluster.cMax() - m_cluster.cMin() > m_sLow && silentDeadline() <= now) {
    takeDown(m_cluster.oldestSilent(), now, kReasonSilent, out);
  }
}

double DsspPolicy::nextDeadline() const {
  return m_cluster.cMax() - m_cluster.cMin() > m_sLow ? silentDeadline() : kInf;
}

void DsspPolicy::afterUp(int rank, double /*now*/, PolicyOutput& /*out*/) {
  m_extra[ix(rank)] = 0;
  m_pass[ix(rank)] = 0;
}

// ---------------------------------------------------------------------------------------
// Backup workers

BackupPolicy::BackupPolicy(int backupWorkers, double barrierTimeoutS)
    : PolicyBase(ParallelState::Sync, barrierTimeoutS), m_backup(backupWorkers) {}

void BackupPolicy::resetRule(int workers, double /*now*/) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_pushed.assign(n, 0);
  m_held.clear();
  m_held.reserve(n);
  m_firstPush = 0;
}

int BackupPolicy::quorum() const { return std::max(1, m_cluster.liveCount() - m_backup); }

PushOutcome BackupPolicy::onPush(int rank, std::int64_t baseVersion, double now,
                                 PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  m_cluster.recordPush(rank, now);
  if (baseVersion != m_version || m_pushed[ix(rank)]) {
    out.dropped.push_back(rank);
    decide(out, now, rank, DecisionKind::Drop, ParallelState::Sync, ParallelState::Sync,
           m_version - baseVersion, "late: its round closed with the first W-b gradients");
    return PushOutcome::Dropped;
  }
  m_pushed[ix(rank)] = 1;
  if (m_held.empty()) m_firstPush = now;
  m_held.push_back(rank);
  if (static_cast<int>(m_held.size()) >= quorum()) {
    closeRound(out);
    return PushOutcome::Applied;
  }
  return PushOutcome::Held;
}

bool BackupPolicy::mayProceed(int rank, double /*now*/) const {
  if (!m_cluster.valid(rank)) return false;
  if (!m_cluster.isLive(rank)) return true;
  return m_pushed[ix(rank)] == 0;
}

void BackupPolicy::onTick(double now, PolicyOutput& out) {
  if (!m_held.empty() && now >= m_firstPush + m_barrierTimeout) {
    decide(out, now, -1, DecisionKind::BarrierTimeout, ParallelState::Sync, ParallelState::Sync,
           quorum() - static_cast<std::int64_t>(m_held.size()),
           "round closed at barrier_timeout_s with fewer than W-b gradients");
    // A timeout is rare (a vanished worker), so this one scan of the ranks is fine.
    m_timingOut = true;
    for (int r = 0; r < m_cluster.workers(); ++r) {
      if (m_cluster.isLive(r) && !m_pushed[ix(r)]) takeDown(r, now, kReasonMissedBarrier, out);
    }
    m_timingOut = false;
    closeRound(out);
  }
  // Rounds close without a vanished worker while b ≥ 1, so silence is what reveals it.
  expireSilent(now, out);
}

double BackupPolicy::nextDeadline() const {
  const double round = m_held.empty() ? kInf : m_firstPush + m_barrierTimeout;
  return std::min(round, silentDeadline());
}

void BackupPolicy::afterDown(int /*rank*/, double /*now*/, PolicyOutput& out) {
  // The quorum shrank with the live count; a held gradient of the rank stays in the round.
  if (!m_timingOut && !m_held.empty() && static_cast<int>(m_held.size()) >= quorum()) {
    closeRound(out);
  }
}

void BackupPolicy::closeRound(PolicyOutput& out) {
  if (m_held.empty()) return;
  beginUpdate(out);
  for (int r : m_held) {
    out.gradients.push_back(GradientRef{r, 1.0});
    m_pushed[ix(r)] = 0;
  }
  endUpdate();
  m_held.clear();
  out.recheckPulls = true;
}

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
  decide(out, now, -1, DecisionKind::Repartition, ParallelState::Sync, ParallelState::Sync,
         candidates, "re-partitioned by compute time: SYNC = within (1+delta) of the fastest");
  for (int r = 0; r < n; ++r) {
    if (!m_cluster.isLive(r) || !m_cluster.hasComputeTime(r)) continue;
    // A lone candidate has nobody to synchronize with: it runs ASYNC.
    const bool wantSync = candidates > 1 && m_cluster.computeTime(r) <= threshold;
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

// ---------------------------------------------------------------------------------------
// makePolicy

namespace {

Status badField(const std::string& field, const std::string& message) {
  return Status::error("strategy." + field + ": " + message);
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Result<std::unique_ptr<SyncPolicy>> makePolicy(const v1::StrategySpec& strategy, int batchSize) {
  // Defaults as withDefaults() writes them, so an unresolved spec builds the same policy.
  const std::string name = strategy.name().empty() ? std::string("bsp") : strategy.name();
  const double timeout = strategy.has_barrier_timeout_s() ? strategy.barrier_timeout_s() : 10.0;
  if (!(timeout > 0)) {
    return badField("barrier_timeout_s", "must be > 0 (got " + num(timeout) + ")");
  }

  std::unique_ptr<SyncPolicy> policy;
  if (name == "bsp") {
    policy = std::make_unique<BspPolicy>(timeout);
  } else if (name == "asp") {
    policy = std::make_unique<AspPolicy>();
  } else if (name == "ssp") {
    const int s = strategy.ssp().has_staleness() ? strategy.ssp().staleness() : 3;
    if (s < 0) return badField("ssp.staleness", "must be >= 0 (got " + std::to_string(s) + ")");
    policy = std::make_unique<SspPolicy>(s, timeout);
  } else if (name == "dssp") {
    const int lo = strategy.dssp().has_s_low() ? strategy.dssp().s_low() : 3;
    const int hi = strategy.dssp().has_s_high() ? strategy.dssp().s_high() : 15;
    if (lo < 0 || hi < lo) {
      return badField("dssp", "needs 0 <= s_low <= s_high (got " + std::to_string(lo) + ", " +
                                  std::to_string(hi) + ")");
    }
    policy = std::make_unique<DsspPolicy>(lo, hi, timeout);
  } else if (name == "backup") {
    const int b = strategy.backup().has_backup_workers() ? strategy.backup().backup_workers() : 1;
    if (b < 0) {
      return badField("backup.backup_workers", "must be >= 0 (got " + std::to_string(b) + ")");
    }
    policy = std::make_unique<BackupPolicy>(b, timeout);
  } else if (name == "dasp") {
    const auto& d = strategy.dasp();
    DaspParamsResolved p;
    if (d.has_alpha()) p.alpha = d.alpha();
    if (d.has_delta()) p.delta = d.delta();
    if (d.has_kappa()) p.kappa = d.kappa();
    if (d.has_s_max()) p.sMax = d.s_max();
    if (d.has_s_high()) p.sHigh = d.s_high();
    if (d.has_staleness_scaling()) p.stalenessScaling = d.staleness_scaling();
    if (d.has_lead_cap()) p.leadCap = d.lead_cap();
    if (d.has_hysteresis()) p.hysteresis = d.hysteresis();
    p.barrierTimeoutS = timeout;
    if (!(p.alpha > 0 && p.alpha <= 1)) {
      return badField("dasp.alpha", "must be in (0, 1] (got " + num(p.alpha) + ")");
    }
    if (!(p.delta >= 0)) return badField("dasp.delta", "must be >= 0 (got " + num(p.delta) + ")");
    if (!(p.kappa >= 1)) return badField("dasp.kappa", "must be >= 1 (got " + num(p.kappa) + ")");
    if (p.sMax < 0) {
      return badField("dasp.s_max", "must be >= 0 (got " + std::to_string(p.sMax) + ")");
    }
    if (p.sHigh < 0) {
      return badField("dasp.s_high", "must be >= 0 (got " + std::to_string(p.sHigh) + ")");
    }
    if (p.hysteresis < 1) {
      return badField("dasp.hysteresis",
                      "must be >= 1 (got " + std::to_string(p.hysteresis) + ")");
    }
    if (d.has_balance_batches()) p.balanceBatches = d.balance_batches();
    p.minBatch = d.has_min_batch() ? d.min_batch() : defaultDaspMinBatch(batchSize);
    if (d.has_change_band()) p.changeBand = d.change_band();
    p.fastestAtNominal = d.batch_budget() != v1::DaspParams::CLUSTER_TOTAL;
    if (p.minBatch < 1) {
      return badField("dasp.min_batch", "must be >= 1 (got " + std::to_string(p.minBatch) + ")");
    }
    if (!(p.changeBand > 0 && p.changeBand < 1)) {
      return badField("dasp.change_band", "must be in (0, 1) (got " + num(p.changeBand) + ")");
    }
    if (batchSize < 1) {
      return Status::error("batch_size: must be >= 1 (got " + std::to_string(batchSize) + ")");
    }
    if (d.rule() == v1::DaspParams::PAPER) {
      policy = std::make_unique<DaspPolicy>(p);
    } else {
      policy = std::make_unique<DaspAdaptivePolicy>(p, batchSize);
    }
  } else {
    std::string known;
    for (const auto& k : knownStrategies()) known += (known.empty() ? "" : ", ") + k;
    return badField("name", "unknown strategy '" + name + "' (known: " + known + ")");
  }
  return Result<std::unique_ptr<SyncPolicy>>(std::move(policy));
}

}  // namespace dasp
