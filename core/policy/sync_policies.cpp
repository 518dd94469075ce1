// SPDX-License-Identifier: MIT
// The sync policies: BSP, ASP, SSP, DSSP and backup workers.
#include "core/policy/policy_internal.h"
#include "core/policy/sync_policies.h"

#include <algorithm>
#include <cmath>

namespace dasp {

using namespace policy_internal;

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

}  // namespace dasp
