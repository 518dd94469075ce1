// SPDX-License-Identifier: MIT
#pragma once
// DASP's ADAPTIVE rule (the default; experiment.proto DaspParams.Rule, docs/EXPERIMENTS.md
// "DASP that adapts"). Why it looks like this, in short (the measurements are in the doc):
//  - DASP-R's ASYNC half applies gradients several versions stale, and the server's
//    momentum amplifies each of them: after a speed change, a burst of them costs accuracy,
//    and at scale the ASYNC half runs at the s_max bound.
//  - A synchronous barrier has no staleness but waits for its slowest member. Sizing each
//    node's batch in proportion to its speed removes the wait instead: every SYNC member
//    then finishes at the same time. The fastest keeps the spec's batch (batch_budget
//    FASTEST_AT_NOMINAL), so rounds come at the fastest node's pace and each holds what
//    the whole cluster computed meanwhile: per second, the samples of the homogeneous-
//    equivalent cluster (same N, same total gradient rate) in more, smaller updates.
//
// The rule:
//  - Per node, the server keeps an EMA (alpha) of its per-sample compute time: pull release
//    → push, ÷ the batch it was given. Two samples in a row outside (1 ± change_band) ×
//    the estimate, or one outside (1 ± 2·change_band), mean the speed changed: the estimate
//    is reset to them at once.
//  - At every round boundary the SYNC nodes' batches are shared out: batch_i ∝ speed_i
//    (largest remainders). With batch_budget FASTEST_AT_NOMINAL (the default) the fastest
//    keeps batch_size, so a round lasts the fastest node's nominal iteration; with
//    CLUSTER_TOTAL, Σ batch_i = batch_size × |SYNC|. A node whose share would fall
//    below min_batch runs ASYNC with the spec's batch (and is promoted back when its share
//    reaches 2 × min_batch). With balance_batches off every node keeps batch_size and SYNC
//    is the k fastest nodes with the highest k ÷ (k-th fastest compute time).
//  - SYNC: a BSP barrier over the SYNC nodes; the update is Σ (batch_i ÷ batch_size)·g_i.
//    The round closes at the latest kappa × a member's expected compute time after that
//    member's release; a member that misses it stays SYNC and its gradient joins the next
//    round (staleness 1). A SYNC gradient more than one round late is dropped (an update
//    of its own in mid-round would make the other members' gradients late in turn) and the
//    node computes a fresh one.
//  - Anytime batches (anytime, the default): a SYNC member released at a round boundary
//    gets the round's remaining time as its compute budget (computeBudgetFor) instead of a
//    count (the round's time counts from the server's first answer after the close, so the
//    apply of the closing update does not shorten it), computes the micro-batches of
//    min_batch samples that end within it, and pushes their count (onPushedBatch), which
//    weighs its gradient and feeds its estimate. A slow draw of its speed then costs
//    samples, not a late push: the round does not wait for its slowest draw. The round's
//    time is the shares' (a nominal iteration of the fastest with FASTEST_AT_NOMINAL).
//  - ASYNC: applied at once, × 1/max(1, τ) with staleness_scaling, dropped when τ > s_max,
//    and, with lead_cap, held to c_i − c_min ≤ s_high.
//  - A rank silent for barrier_timeout_s is marked Down; a rank that comes back is SYNC
//    with an unknown speed (the spec's batch) until it is measured.
// On a homogeneous cluster every share is batch_size and no round times out: the rule is
// BSP. (min_batch defaults to batch_size / 16: a 16× slower node stays SYNC.)
//
// Threading: not thread-safe; the server calls a policy under its own lock.

#include "core/policy/sync_policies.h"

#include <cstdint>
#include <vector>

namespace dasp {

class DaspAdaptivePolicy final : public PolicyBase {
 public:
  DaspAdaptivePolicy(const DaspParamsResolved& params, int batchSize);
  const char* name() const override { return "dasp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onPullReleased(int rank, std::int64_t version, double now) override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;
  int batchFor(int rank) const override;
  ComputeBudget computeBudgetFor(int rank) const override;
  void onPushedBatch(int rank, int samples) override;

  // The current per-sample compute-time estimate of `rank` in seconds (< 0: not measured),
  // and the batch its next release gets (for tests and the docs' traces).
  double perSampleSeconds(int rank) const { return m_perSample[ix(rank)]; }
  int share(int rank) const { return m_share[ix(rank)]; }
  const DaspParamsResolved& params() const { return m_p; }

 private:
  static std::size_t ix(int rank) { return static_cast<std::size_t>(rank); }
  void resetRule(int workers, double now) override;
  void afterDown(int rank, double now, PolicyOutput& out) override;
  void afterUp(int rank, double now, PolicyOutput& out) override;
  // Folds the compute-time sample of `rank`'s push at `now` into its estimate.
  void observe(int rank, double now, PolicyOutput& out);
  PushOutcome pushAsync(int rank, std::int64_t baseVersion, double now, PolicyOutput& out);
  void closeRound(double now, PolicyOutput& out);
  // Re-shares the batches and moves nodes between SYNC and ASYNC (every round boundary).
  void rebalance(double now, PolicyOutput& out);
  // The SYNC set by speed: ranks of m_sorted (fastest first) in [0, count).
  int chooseSyncCount() const;
  void assignShares(int syncCount, double now, PolicyOutput& out);
  void shareOut(int syncCount);
  // The total batch of a round over the `syncCount` fastest nodes, whose rates (samples
  // per second) sum to `totalRate`: batch_budget (experiment.proto).
  double roundBudget(int syncCount, double totalRate) const;
  double weight(int rank) const { return static_cast<double>(m_batch[ix(rank)]) / m_nominal; }

  DaspParamsResolved m_p;
  int m_nominalBatch;
  double m_nominal;
  RoundBarrier m_barrier;
  double m_roundDeadline = 0;
  std::vector<double> m_perSample;   // EMA of seconds per sample; < 0 = not measured
  std::vector<double> m_releasedAt;  // release of the iteration in flight; < 0 = none
  std::vector<std::int64_t> m_releaseRound;  // m_rounds at that release
  std::int64_t m_rounds = 0;                 // SYNC rounds closed
  double m_roundSeconds = 0;         // anytime: a round's compute time (0: not yet measured)
  double m_roundEnd = 0;             // anytime: when the open round's members should push
  bool m_roundAnchorPending = false;  // anytime: m_roundEnd moves to the first release after a close
  std::vector<double> m_budget;      // anytime: compute budget of the iteration in flight
  std::vector<int> m_batch;          // batch of the iteration in flight (as pushed, once it is)
  std::vector<int> m_share;          // batch of the next release
  std::vector<int> m_reportedShare;  // the share last reported as a decision
  std::vector<int> m_outOfBand;      // +k: k samples in a row above the band, -k below
  std::vector<double> m_bandSum;     // their sum
  std::vector<int> m_sorted;         // scratch: live measured ranks, fastest first
  std::vector<double> m_remainder;   // scratch: fractional shares
};

}  // namespace dasp
