// SPDX-License-Identifier: MIT
#pragma once
// The concrete sync policies behind makePolicy(): BSP, ASP, SSP(s), DSSP(s_L, s_H), sync SGD
// with backup workers, and DASP-R (reference/strategies.md §1 and §3 of the design docs). They
// are declared here so tests and the simulator can build one with explicit parameters; the
// server goes through makePolicy(StrategySpec).
//
// Rules every policy here follows:
//  - version() counts emitted updates; staleness of a gradient = version at apply −
//    baseVersion.
//  - clock(rank) counts every push received from the rank, dropped ones included: the clock
//    measures iterations for the lead bounds, and a worker whose gradients are dropped must
//    not hold the others back for ever.
//  - onWorkerDown() takes a rank out of every barrier and out of c_min at once; onWorkerUp()
//    re-adds it with c_i = c_min; a push from a Down rank brings it up first. A pull from a
//    Down rank is released (it takes part in no bound until it is up again).
//  - No parked pull waits for ever: synchronous rounds time out, and where a bound can
//    block others a rank silent for barrier_timeout_s after its pull is marked Down.
//
// Threading: not thread-safe; the server calls a policy under its own lock.

#include "core/policy/cluster_state.h"
#include "core/policy/sync_policy.h"

#include <cstdint>
#include <vector>

namespace dasp {

// The barrier of one synchronous group (BSP's whole cluster, DASP's SYNC set): who must
// push for the current round, who already has (their gradients are held), and who joins
// at the next round boundary. Membership changes never wait: a member that leaves is no
// longer awaited, and one that joins while a round has gradients waits for the boundary.
// Threading: part of its policy; same rule.
class RoundBarrier {
 public:
  // `workers` ranks, none a member.
  void reset(int workers);
  // Makes `rank` a member of the current round (reset time: the round is empty).
  void addMember(int rank);
  // A rank joining mid-run: a member at once when the round holds no gradient yet,
  // otherwise at the next boundary. Returns true when it is a member now.
  bool join(int rank);
  // Stops waiting on `rank`: an unpushed member leaves at once, a pushed one leaves at the
  // boundary (its gradient stays in the round), a joiner is forgotten.
  void leave(int rank);
  // Holds the gradient of a member that has not pushed in this round.
  void hold(int rank, double now);
  // Ends the round: the held gradients are the caller's to apply before this call;
  // leavers drop out and joiners become members. Ranks that joined go to `joined` when
  // given.
  void close(std::vector<int>* joined = nullptr);

  bool isMember(int rank) const { return (m_flags[idx(rank)] & kMember) != 0; }
  bool hasPushed(int rank) const { return (m_flags[idx(rank)] & kPushed) != 0; }
  bool isJoining(int rank) const { return (m_flags[idx(rank)] & kJoining) != 0; }
  // The rank's pull waits for the end of the round (its gradient is in it, or it joins).
  bool waitsForBoundary(int rank) const {
    return (m_flags[idx(rank)] & (kPushed | kJoining)) != 0;
  }
  bool open() const { return !m_held.empty(); }
  bool complete() const { return !m_held.empty() && m_waiting == 0; }
  int waiting() const { return m_waiting; }
  int memberCount() const { return m_memberCount; }
  double firstPushTime() const { return m_firstPush; }
  const std::vector<int>& held() const { return m_held; }
  // Ranks listed as members; a listed rank is a member only while isMember() says so.
  const std::vector<int>& listed() const { return m_list; }

 private:
  static constexpr std::uint8_t kMember = 1;
  static constexpr std::uint8_t kPushed = 2;
  static constexpr std::uint8_t kJoining = 4;
  static constexpr std::uint8_t kLeaving = 8;
  static constexpr std::uint8_t kListed = 16;
  static std::size_t idx(int rank) { return static_cast<std::size_t>(rank); }

  std::vector<std::uint8_t> m_flags;
  std::vector<int> m_list;  // members, possibly with stale entries (flag says)
  std::vector<int> m_joiners;
  std::vector<int> m_held;
  std::vector<int> m_scratch;
  int m_waiting = 0;  // members that have not pushed
  int m_memberCount = 0;
  double m_firstPush = 0;
};

// Shared plumbing: the cluster table, the version counter, update and decision emission,
// and the Down/Up bookkeeping with hooks for each rule's barriers.
// Threading: see the file comment.
class PolicyBase : public SyncPolicy {
 public:
  PolicyBase(ParallelState liveState, double barrierTimeoutS);

  void reset(int workers, double now) override;
  void onPullReleased(int rank, std::int64_t version, double now) override;
  void onWorkerDown(int rank, double now, PolicyOutput& out) override;
  void onWorkerUp(int rank, double now, PolicyOutput& out) override;

  std::int64_t version() const override { return m_version; }
  void setVersion(std::int64_t version) override { m_version = version; }
  ParallelState state(int rank) const override;
  std::int64_t clock(int rank) const override;
  int workers() const override { return m_cluster.workers(); }

  const ClusterState& cluster() const { return m_cluster; }
  double barrierTimeout() const { return m_barrierTimeout; }

 protected:
  // Rule-specific state for `workers` ranks (after the cluster table is reset).
  virtual void resetRule(int workers, double now) = 0;
  // Called after `rank` went Down / came Up (cluster table already updated).
  virtual void afterDown(int rank, double now, PolicyOutput& out) = 0;
  virtual void afterUp(int rank, double now, PolicyOutput& out) = 0;

  void emitSingle(PolicyOutput& out, int rank, double scale);  // one update of one gradient
  void beginUpdate(PolicyOutput& out);
  void endUpdate() { ++m_version; }
  static void decide(PolicyOutput& out, double t, int rank, DecisionKind kind,
                     ParallelState from, ParallelState to, std::int64_t value,
                     const char* reason);
  void stateChange(PolicyOutput& out, double t, int rank, ParallelState to, const char* reason);
  void takeDown(int rank, double now, const char* reason, PolicyOutput& out);
  void bringUp(int rank, double now, const char* reason, PolicyOutput& out);
  // Marks Down every live rank silent for barrier_timeout_s by `now`.
  void expireSilent(double now, PolicyOutput& out);
  double silentDeadline() const;
  // DASP's ASYNC rule (both DASP rules): a gradient staler than sMax versions is dropped
  // (a Drop decision with dropReason), else applied at once as its own update, scaled by
  // weight ÷ max(1, τ) with staleness scaling, by weight without.
  PushOutcome applyAsync(int rank, std::int64_t baseVersion, double now, int sMax, bool stalenessScaling,
                         double weight, const char* dropReason, PolicyOutput& out);
  // DASP's admission (both rules): a SYNC member waits for its round boundary, an ASYNC
  // node (with leadCap) while it leads the slowest by more than sHigh clocks.
  bool daspMayProceed(const RoundBarrier& barrier, bool leadCap, int sHigh, int rank) const;

  ClusterState m_cluster;
  std::int64_t m_version = 0;
  ParallelState m_liveState;
  double m_barrierTimeout;
};

// BSP: one barrier over all live workers; a round's gradients make one update (staleness 0).
// A round closes barrier_timeout_s after its first push at the latest; members still missing
// are marked Down. Threading: the server's lock (see the file comment).
class BspPolicy final : public PolicyBase {
 public:
  explicit BspPolicy(double barrierTimeoutS = 10.0);
  const char* name() const override { return "bsp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;

 private:
  void resetRule(int workers, double now) override;
  void afterDown(int rank, double now, PolicyOutput& out) override;
  void afterUp(int rank, double now, PolicyOutput& out) override;
  void closeRound(PolicyOutput& out);
  RoundBarrier m_barrier;
  bool m_timingOut = false;  // a timeout is taking members out: close once, after
};

// ASP: every push is applied at once, every pull answered at once.
// Threading: the server's lock (see the file comment).
class AspPolicy final : public PolicyBase {
 public:
  AspPolicy();
  const char* name() const override { return "asp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onTick(double now, PolicyOutput& out) override;

 private:
  void resetRule(int, double) override {}
  void afterDown(int, double, PolicyOutput&) override {}
  void afterUp(int, double, PolicyOutput&) override {}
};

// SSP(s): pushes applied at once; a pull waits while c_i − c_min > s. While the bound blocks
// someone, a rank silent for barrier_timeout_s is marked Down so the others go on.
// Threading: the server's lock (see the file comment).
class SspPolicy final : public PolicyBase {
 public:
  explicit SspPolicy(int staleness, double barrierTimeoutS = 10.0);
  const char* name() const override { return "ssp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;

 private:
  void resetRule(int, double) override {}
  void afterDown(int, double, PolicyOutput& out) override { out.recheckPulls = true; }
  void afterUp(int, double, PolicyOutput&) override {}
  int m_s;
};

// DSSP(s_L, s_H): SSP with bound s_L, and the fastest worker may be granted up to
// R = s_H − s_L extra iterations by the F_k/Q_j controller (strategies.md §1 rules 1–5).
// Grants are clamped so that no release ever leads c_min by more than s_H.
// Threading: the server's lock (see the file comment).
class DsspPolicy final : public PolicyBase {
 public:
  DsspPolicy(int sLow, int sHigh, double barrierTimeoutS = 10.0);
  const char* name() const override { return "dssp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onPullReleased(int rank, std::int64_t version, double now) override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;

  // The controller: extra iterations r ∈ [0, R] for fastest worker `fastest` whose push
  // arrived at `now` (public for tests).
  int controller(int fastest, double now) const;

 private:
  void resetRule(int workers, double now) override;
  void afterDown(int, double, PolicyOutput& out) override { out.recheckPulls = true; }
  void afterUp(int rank, double now, PolicyOutput& out) override;
  int m_sLow;
  int m_sHigh;
  std::vector<int> m_extra;         // r_p: granted iterations left
  std::vector<std::uint8_t> m_pass;  // the next pull is released whatever the lead
};

// Sync SGD with backup workers: a round aggregates the first W−b gradients computed on the
// current version (W = live workers); later gradients of that round are dropped, so
// staleness is 0. Since rounds close without a vanished worker while b ≥ 1, a rank silent for
// barrier_timeout_s is marked Down (W shrinks). Threading: the server's lock.
class BackupPolicy final : public PolicyBase {
 public:
  explicit BackupPolicy(int backupWorkers, double barrierTimeoutS = 10.0);
  const char* name() const override { return "backup"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;

 private:
  void resetRule(int workers, double now) override;
  void afterDown(int rank, double now, PolicyOutput& out) override;
  void afterUp(int, double, PolicyOutput&) override {}
  int quorum() const;
  void closeRound(PolicyOutput& out);
  int m_backup;
  std::vector<std::uint8_t> m_pushed;  // has a held gradient in the current round
  std::vector<int> m_held;
  double m_firstPush = 0;
  bool m_timingOut = false;  // a timeout is taking ranks out: close once, after
};

// DaspParams with every default filled in (experiment.proto), plus the strategy's
// barrier_timeout_s: DASP's fallback round timeout and its silence limit.
struct DaspParamsResolved {
  double alpha = 0.2;
  double delta = 0.3;
  double kappa = 1.5;
  int sMax = 8;
  int sHigh = 15;
  bool stalenessScaling = true;
  bool leadCap = false;  // measured default: see docs/EXPERIMENTS.md
  int hysteresis = 2;
  double barrierTimeoutS = 10.0;
  // ADAPTIVE only (DaspAdaptivePolicy, core/policy/dasp_adaptive.h).
  bool balanceBatches = true;
  int minBatch = 4;  // makePolicy() sets defaultDaspMinBatch(batch_size) (core/spec/spec.h)
  double changeBand = 0.5;
  // true: FASTEST_AT_NOMINAL (the fastest SYNC node keeps the spec's batch); false:
  // CLUSTER_TOTAL (the shares sum to the spec's batch × the SYNC nodes).
  bool fastestAtNominal = true;
  // Anytime batches: a SYNC node computes for the round's time, not a count (ComputeBudget).
  bool anytime = false;
};

// DASP-R (strategies.md §3): a SYNC group with a barrier over its current members (timeout
// kappa × the slowest member's compute time after the round's first push; a member that
// misses it is demoted to ASYNC), ASYNC nodes applied at once with 1/max(1,τ) scaling,
// dropped when τ > s_max, and held to c_i − c_min ≤ s_high; groups re-partitioned by
// compute time once every live worker has pushed since the last re-partition, with
// hysteresis; a re-partition is recorded as a decision only when its SYNC set differs from
// the previous one's (change-only). All nodes start SYNC. A rank silent for
// barrier_timeout_s is marked Down.
// Threading: the server's lock (see the file comment).
class DaspPolicy final : public PolicyBase {
 public:
  explicit DaspPolicy(const DaspParamsResolved& params);
  const char* name() const override { return "dasp"; }
  PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) override;
  bool mayProceed(int rank, double now) const override;
  void onTick(double now, PolicyOutput& out) override;
  double nextDeadline() const override;

  const DaspParamsResolved& params() const { return m_p; }

 private:
  void resetRule(int workers, double now) override;
  void afterDown(int rank, double now, PolicyOutput& out) override;
  void afterUp(int rank, double now, PolicyOutput& out) override;
  PushOutcome pushAsync(int rank, std::int64_t baseVersion, double now, PolicyOutput& out);
  void closeRound(PolicyOutput& out);
  void startRoundClock(double now);
  void markPushed(int rank);
  void maybeRepartition(double now, PolicyOutput& out);
  void repartition(double now, PolicyOutput& out);

  DaspParamsResolved m_p;
  RoundBarrier m_barrier;
  double m_roundDeadline = 0;
  std::vector<std::uint8_t> m_pushedSince;  // pushed since the last re-partition
  int m_pushedSinceCount = 0;
  std::vector<int> m_agree;  // h_i: consecutive re-partitions that want a change
  // The SYNC set of the last re-partition (1: wants SYNC), so that only a changed one is
  // recorded as a decision.
  std::vector<std::uint8_t> m_partition;
};

}  // namespace dasp
