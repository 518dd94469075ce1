// SPDX-License-Identifier: MIT
#include "core/policy/dasp_adaptive.h"
#include "core/policy/policy_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dasp {

using namespace policy_internal;

namespace {
// Anytime batches: a node that turns out much faster than measured still computes at most
// this many times the spec's batch in one round.
constexpr int kAnytimeMaxFactor = 4;
}  // namespace

DaspAdaptivePolicy::DaspAdaptivePolicy(const DaspParamsResolved& params, int batchSize)
    : PolicyBase(ParallelState::Sync, params.barrierTimeoutS),
      m_p(params),
      m_nominalBatch(std::max(1, batchSize)),
      m_nominal(static_cast<double>(std::max(1, batchSize))) {}

void DaspAdaptivePolicy::resetRule(int workers, double /*now*/) {
  const std::size_t n = workers > 0 ? static_cast<std::size_t>(workers) : 0;
  m_barrier.reset(workers);
  for (int r = 0; r < workers; ++r) m_barrier.addMember(r);
  m_roundDeadline = -kInf;
  m_roundSeconds = 0;
  m_roundEnd = -kInf;
  m_roundAnchorPending = false;
  m_budget.assign(n, 0.0);
  m_perSample.assign(n, -1.0);
  m_releasedAt.assign(n, -1.0);
  m_releaseRound.assign(n, 0);
  m_rounds = 0;
  m_batch.assign(n, m_nominalBatch);
  m_share.assign(n, m_nominalBatch);
  m_reportedShare.assign(n, m_nominalBatch);
  m_outOfBand.assign(n, 0);
  m_bandSum.assign(n, 0.0);
  m_sorted.clear();
  m_sorted.reserve(n);
  m_remainder.assign(n, 0.0);
}

int DaspAdaptivePolicy::batchFor(int rank) const {
  return m_cluster.valid(rank) ? m_batch[ix(rank)] : 0;
}

ComputeBudget DaspAdaptivePolicy::computeBudgetFor(int rank) const {
  if (!m_cluster.valid(rank) || !(m_budget[ix(rank)] > 0)) return {};
  return ComputeBudget{m_budget[ix(rank)], m_p.minBatch, kAnytimeMaxFactor * m_nominalBatch};
}

void DaspAdaptivePolicy::onPushedBatch(int rank, int samples) {
  if (m_cluster.valid(rank) && samples > 0) m_batch[ix(rank)] = samples;
}

void DaspAdaptivePolicy::onPullReleased(int rank, std::int64_t version, double now) {
  PolicyBase::onPullReleased(rank, version, now);
  if (!m_cluster.valid(rank)) return;
  const std::size_t r = ix(rank);
  m_batch[r] = m_share[r];
  m_budget[r] = 0.0;
  m_releasedAt[r] = now;
  m_releaseRound[r] = m_rounds;
  if (m_roundAnchorPending) {
    // The round's time counts from the server's first answer after the close, not from
    // the close: the apply of a large round (256 gradients) would otherwise eat into it.
    m_roundAnchorPending = false;
    m_roundEnd = now + m_roundSeconds;
  }
  if (m_cluster.isLive(rank) && m_barrier.isMember(rank) && !m_barrier.hasPushed(rank)) {
    // Anytime: every member computes until the round's end, whatever its draw this time.
    if (m_p.anytime && std::isfinite(m_roundEnd) && m_perSample[r] > 0) {
      m_budget[r] = std::max(m_roundEnd - now, m_p.minBatch * m_perSample[r]);
    }
    // The round waits for this member at most kappa × its expected compute time.
    const double expected = m_budget[r] > 0 ? m_budget[r] : m_perSample[r] >= 0 ? m_perSample[r] * m_batch[r] : -1.0;
    const double deadline = now + (expected > 0 ? m_p.kappa * expected : m_barrierTimeout);
    m_roundDeadline = std::max(m_roundDeadline, deadline);
  }
}

PushOutcome DaspAdaptivePolicy::onPush(int rank, std::int64_t baseVersion, double now,
                                       PolicyOutput& out) {
  if (!m_cluster.valid(rank)) return PushOutcome::Dropped;
  if (!m_cluster.isLive(rank)) bringUp(rank, now, kReasonPushedWhileDown, out);
  if (m_cluster.recordPush(rank, now)) out.recheckPulls = true;
  observe(rank, now, out);
  if (m_barrier.isMember(rank) && !m_barrier.hasPushed(rank)) {
    // A member's gradient enters the round when it is fresh or one round late (it missed
    // the previous round's deadline). One staler still is dropped, not applied on its own:
    // an update in mid-round would make every other member's gradient stale in turn, and a
    // long stall never turns into a burst of stale work. The member computes a fresh one.
    const std::int64_t roundsLate = m_rounds - m_releaseRound[ix(rank)];
    if (roundsLate > 1) {
      out.dropped.push_back(rank);
      decide(out, now, rank, DecisionKind::Drop, ParallelState::Sync, ParallelState::Sync, roundsLate,
             "SYNC gradient more than one round late (value: rounds)");
      return PushOutcome::Dropped;
    }
    m_barrier.hold(rank, now);
    if (m_barrier.complete()) {
      closeRound(now, out);
      return PushOutcome::Applied;
    }
    return PushOutcome::Held;
  }
  return pushAsync(rank, baseVersion, now, out);
}

PushOutcome DaspAdaptivePolicy::pushAsync(int rank, std::int64_t baseVersion, double now,
                                          PolicyOutput& out) {
  return applyAsync(rank, baseVersion, now, m_p.sMax, m_p.stalenessScaling, weight(rank), "gradient staler than s_max",
                    out);
}

void DaspAdaptivePolicy::observe(int rank, double now, PolicyOutput& out) {
  const std::size_t r = ix(rank);
  if (m_releasedAt[r] < 0) return;
  const double sample = (now - m_releasedAt[r]) / static_cast<double>(std::max(1, m_batch[r]));
  m_releasedAt[r] = -1.0;
  double& estimate = m_perSample[r];
  if (estimate <= 0) {
    estimate = sample;
    return;
  }
  const double ratio = sample / estimate;
  estimate = m_p.alpha * sample + (1.0 - m_p.alpha) * estimate;
  const double band = m_p.changeBand;
  const int direction = ratio > 1.0 + band ? 1 : ratio < 1.0 - band ? -1 : 0;
  const bool jump = ratio > 1.0 + 2.0 * band || ratio < (1.0 - band) / 2.0;
  int& streak = m_outOfBand[r];
  if (direction == 0) {
    streak = 0;
    return;
  }
  if (streak * direction > 0) {
    streak += direction;
    m_bandSum[r] += sample;
  } else {
    streak = direction;
    m_bandSum[r] = sample;
  }
  if (!jump && std::abs(streak) < 2) return;
  // A speed change: the estimate restarts from the new samples, and the next round
  // boundary re-shares the batches.
  estimate = m_bandSum[r] / std::abs(streak);
  streak = 0;
  decide(out, now, rank, DecisionKind::Repartition, m_cluster.state(rank), m_cluster.state(rank),
         static_cast<std::int64_t>(std::lround(ratio * 100.0)),
         "speed change detected (value: the sample in % of the estimate): estimate reset, "
         "batches re-shared at the next round boundary");
}

bool DaspAdaptivePolicy::mayProceed(int rank, double /*now*/) const {
  return daspMayProceed(m_barrier, m_p.leadCap, m_p.sHigh, rank);
}

void DaspAdaptivePolicy::onTick(double now, PolicyOutput& out) {
  if (m_barrier.open() && m_barrier.waiting() > 0 && now >= m_roundDeadline) {
    // The missing members stay SYNC: their gradients join the next round.
    decide(out, now, -1, DecisionKind::BarrierTimeout, ParallelState::Sync, ParallelState::Sync,
           m_barrier.waiting(),
           "SYNC round closed at kappa x a member's expected compute time; late gradients "
           "join the next round");
    closeRound(now, out);
  }
  expireSilent(now, out);
}

double DaspAdaptivePolicy::nextDeadline() const {
  const double round = m_barrier.open() && m_barrier.waiting() > 0 ? m_roundDeadline : kInf;
  return std::min(round, silentDeadline());
}

void DaspAdaptivePolicy::afterDown(int rank, double now, PolicyOutput& out) {
  m_barrier.leave(rank);
  m_releasedAt[ix(rank)] = -1.0;
  if (m_barrier.complete()) closeRound(now, out);
}

void DaspAdaptivePolicy::afterUp(int rank, double /*now*/, PolicyOutput& /*out*/) {
  // Back as SYNC with an unknown speed: the spec's batch until it is measured.
  const std::size_t r = ix(rank);
  m_perSample[r] = -1.0;
  m_outOfBand[r] = 0;
  m_share[r] = m_nominalBatch;
  m_barrier.join(rank);
}

void DaspAdaptivePolicy::closeRound(double now, PolicyOutput& out) {
  beginUpdate(out);
  for (int r : m_barrier.held()) out.gradients.push_back(GradientRef{r, weight(r)});
  endUpdate();
  m_barrier.close();
  ++m_rounds;
  m_roundDeadline = -kInf;
  rebalance(now, out);
  // The next round's end is set at the first release (onPullReleased), none until then.
  m_roundEnd = -kInf;
  m_roundAnchorPending = m_roundSeconds > 0;
  out.recheckPulls = true;
}

int DaspAdaptivePolicy::chooseSyncCount() const {
  const int n = static_cast<int>(m_sorted.size());
  auto rate = [this](int i) { return 1.0 / m_perSample[ix(m_sorted[static_cast<std::size_t>(i)])]; };
  if (!m_p.balanceBatches) {
    // Equal batches: the barrier's sample rate over the k fastest is k × rate of the k-th.
    int best = n;
    double bestRate = 0;
    for (int k = 1; k <= n; ++k) {
      const double r = k * rate(k - 1);
      if (r >= bestRate * (1.0 + 1e-9)) {
        bestRate = r;
        best = k;
      }
    }
    return best;
  }
  // Balanced: the slowest member of the k fastest has the smallest share (budget ×
  // rate_k / Σ_{i<k} rate_i, see shareOut); drop the slowest while its share is too small
  // (a SYNC node below min_batch, an ASYNC one below twice that: hysteresis).
  double total = 0;
  for (int i = 0; i < n; ++i) total += rate(i);
  for (int k = n; k > 1; --k) {
    const int slowest = m_sorted[static_cast<std::size_t>(k - 1)];
    const double shareOfSlowest = roundBudget(k, total) * rate(k - 1) / total;
    const double floor = m_cluster.state(slowest) == ParallelState::Sync ? m_p.minBatch : 2.0 * m_p.minBatch;
    if (shareOfSlowest >= floor) return k;
    total -= rate(k - 1);
  }
  return std::min(n, 1);
}

void DaspAdaptivePolicy::assignShares(int syncCount, double now, PolicyOutput& out) {
  shareOut(syncCount);
  // Change-only record: a share that moved by more than 20 % since the last one reported
  // (the first balancing, a speed change), not every round's small corrections.
  for (int r : m_sorted) {
    const int share = m_share[ix(r)];
    const int reported = m_reportedShare[ix(r)];
    if (std::abs(share - reported) * 5 <= reported) continue;
    m_reportedShare[ix(r)] = share;
    decide(out, now, r, DecisionKind::Repartition, m_cluster.state(r), m_cluster.state(r), share,
           "batch re-shared in proportion to the measured speed (value: the new batch)");
  }
}

double DaspAdaptivePolicy::roundBudget(int syncCount, double totalRate) const {
  if (!m_p.fastestAtNominal) return m_nominal * syncCount;
  // The fastest member (m_sorted[0]) at the nominal batch: the round lasts its nominal
  // iteration, and every other member computes what it can in that time.
  return m_nominal * totalRate * m_perSample[ix(m_sorted[0])];
}

void DaspAdaptivePolicy::shareOut(int syncCount) {
  for (std::size_t i = static_cast<std::size_t>(syncCount); i < m_sorted.size(); ++i) {
    m_share[ix(m_sorted[i])] = m_nominalBatch;
  }
  if (!m_p.balanceBatches || syncCount <= 0) {
    m_roundSeconds = 0;  // equal batches: counts, not time
    for (int i = 0; i < syncCount; ++i) m_share[ix(m_sorted[static_cast<std::size_t>(i)])] = m_nominalBatch;
    return;
  }
  double totalRate = 0;
  for (int i = 0; i < syncCount; ++i) totalRate += 1.0 / m_perSample[ix(m_sorted[static_cast<std::size_t>(i)])];
  m_roundSeconds = roundBudget(syncCount, totalRate) / totalRate;
  const long total = std::max<long>(syncCount, std::lround(roundBudget(syncCount, totalRate)));
  long given = 0;
  for (int i = 0; i < syncCount; ++i) {
    const int r = m_sorted[static_cast<std::size_t>(i)];
    const double exact = static_cast<double>(total) * (1.0 / m_perSample[ix(r)]) / totalRate;
    const long whole = std::max(1L, static_cast<long>(std::floor(exact)));
    m_share[ix(r)] = static_cast<int>(whole);
    m_remainder[ix(r)] = exact - static_cast<double>(whole);
    given += whole;
  }
  // Largest remainders get the samples left, so the shares sum to the total exactly (ties
  // by rank: deterministic). At most one pass over a sorted copy of the SYNC ranks.
  if (given < total) {
    std::vector<int>& order = m_sorted;  // SYNC ranks occupy [0, syncCount): re-sort them
    std::sort(order.begin(), order.begin() + syncCount, [this](int a, int b) {
      const double ra = m_remainder[ix(a)], rb = m_remainder[ix(b)];
      return ra > rb || (ra == rb && a < b);
    });
    for (int i = 0; given < total; i = (i + 1) % syncCount, ++given) ++m_share[ix(order[static_cast<std::size_t>(i)])];
  }
}

void DaspAdaptivePolicy::rebalance(double now, PolicyOutput& out) {
  // O(N log N) once per round, i.e. O(log N) amortized per push.
  m_sorted.clear();
  const int n = m_cluster.workers();
  for (int r = 0; r < n; ++r) {
    if (m_cluster.isLive(r) && m_perSample[ix(r)] > 0) m_sorted.push_back(r);
  }
  if (m_sorted.empty()) return;
  std::sort(m_sorted.begin(), m_sorted.end(), [this](int a, int b) {
    const double sa = m_perSample[ix(a)], sb = m_perSample[ix(b)];
    return sa < sb || (sa == sb && a < b);
  });
  const int syncCount = chooseSyncCount();
  for (std::size_t i = 0; i < m_sorted.size(); ++i) {
    const int r = m_sorted[i];
    const bool wantSync = static_cast<int>(i) < syncCount;
    const bool isSync = m_cluster.state(r) == ParallelState::Sync;
    if (wantSync == isSync) continue;
    if (wantSync) {
      stateChange(out, now, r, ParallelState::Sync,
                  "promoted: its balanced batch reaches 2 x min_batch; joins the SYNC round at "
                  "its boundary");
      m_barrier.join(r);
    } else {
      stateChange(out, now, r, ParallelState::Async,
                  m_p.balanceBatches ? "demoted: its balanced batch would fall below min_batch"
                                     : "demoted: the SYNC barrier gathers more samples per second "
                                       "without it");
      m_barrier.leave(r);
    }
  }
  assignShares(syncCount, now, out);
}

}  // namespace dasp
