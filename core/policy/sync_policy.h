// SPDX-License-Identifier: MIT
#pragma once
// SyncPolicy: the synchronization strategy of the parameter server (BSP, ASP, SSP, DSSP,
// backup workers, DASP). A policy is a deterministic object driven by events: it never
// sleeps, never does I/O and never reads a clock — time is passed in, in seconds — so the
// same objects run inside the gRPC server (wall clock) and the simulator (virtual clock).
//
// The server holds the gradients; the policy decides what happens to them:
//  - onPush():   a gradient from `rank`, computed on `baseVersion`, has arrived. The policy
//                answers through PolicyOutput: apply it now (one update), hold it for a
//                round, or drop it; closing a round emits one update made of the held
//                gradients.
//  - mayProceed(): may `rank`'s parked pull be answered now?
//  - onTick():   time-driven decisions (barrier timeouts); call it no later than
//                nextDeadline().
//  - onPullReleased(): the server answered `rank`'s pull with `version`; a node's speed is
//                measured from here to its next push (pull→push compute time, EMA).
//  - onWorkerDown()/onWorkerUp(): membership changes (a vanished or restarted worker).
// The policy counts the model version: every update it emits increments it by one, so
// version() always equals the server's version.
//
// Every change of a node's parallel state, every drop and every barrier timeout is
// reported in PolicyOutput::decisions with a reason, so the GUI can draw it and a report
// can explain it.
//
// Threading: not thread-safe; the server calls a policy under its own lock.

#include "core/common/result.h"
#include "core/policy/decision_kind.h"
#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace dasp {

enum class ParallelState : std::uint8_t { Sync, Async, Down };
const char* toString(ParallelState state);

// One gradient of an update and the weight the policy gives it (staleness scaling etc.).
// The server multiplies by the learning-rate convention on top (PER_GRADIENT: 1;
// MEAN: 1/m for an update of m gradients).
struct GradientRef {
  int rank = 0;
  double scale = 1.0;
};


struct PolicyDecision {
  double t = 0;
  int rank = -1;  // -1 = the whole cluster
  DecisionKind kind = DecisionKind::StateChange;
  ParallelState from = ParallelState::Sync;
  ParallelState to = ParallelState::Sync;
  std::int64_t value = 0;  // staleness of a dropped gradient, granted iterations, ...
  const char* reason = "";  // static text: no allocation on the hot path
};

// What the server must do after an event. Reused between calls: clear() keeps capacity,
// so a decision allocates nothing in the steady state.
struct PolicyOutput {
  // Updates to apply, in order: update u consists of
  // gradients[updateBegin[u] .. updateBegin[u+1]) (the last one ends at gradients.size()).
  // Each update increments the version by one.
  std::vector<GradientRef> gradients;
  std::vector<std::uint32_t> updateBegin;
  // Ranks whose held or just-pushed gradient is discarded.
  std::vector<int> dropped;
  std::vector<PolicyDecision> decisions;
  // True when parked pulls may have become releasable: the server re-checks mayProceed().
  bool recheckPulls = false;

  void clear() {
    gradients.clear();
    updateBegin.clear();
    dropped.clear();
    decisions.clear();
    recheckPulls = false;
  }
  std::size_t updateCount() const { return updateBegin.size(); }
};

// How long a rank may compute its next gradient, instead of a batch count (DASP's ADAPTIVE
// rule with anytime batches): the node computes the micro-batches of `granularity` samples
// that end within `seconds` and pushes the gradient of all it computed with their count
// (Anytime Minibatch, Ferdinand et al., ICLR 2019). seconds 0: no budget, the node computes
// batchFor()'s samples.
struct ComputeBudget {
  double seconds = 0;
  int granularity = 1;
  int maxBatch = 1;  // the most samples, whatever the node's speed
};

// The samples a node computes under `budget` at `perSampleS` seconds a sample: the whole
// micro-batches that fit; at least one micro-batch, at most budget.maxBatch.
int anytimeBatch(const ComputeBudget& budget, double perSampleS);

// What the server learns about a push outcome for the pushing rank (for its reply).
enum class PushOutcome : std::uint8_t { Applied, Held, Dropped };
const char* toString(PushOutcome outcome);

class SyncPolicy {
 public:
  virtual ~SyncPolicy() = default;

  virtual const char* name() const = 0;
  // Starts a run with `workers` ranks (0..workers-1), all live, version 0.
  virtual void reset(int workers, double now) = 0;

  virtual PushOutcome onPush(int rank, std::int64_t baseVersion, double now, PolicyOutput& out) = 0;
  virtual bool mayProceed(int rank, double now) const = 0;
  virtual void onPullReleased(int rank, std::int64_t version, double now) = 0;
  virtual void onTick(double now, PolicyOutput& out) = 0;
  virtual void onWorkerDown(int rank, double now, PolicyOutput& out) = 0;
  virtual void onWorkerUp(int rank, double now, PolicyOutput& out) = 0;

  // Earliest time at which onTick() has something to do (+inf when nothing is pending).
  virtual double nextDeadline() const { return std::numeric_limits<double>::infinity(); }

  // Samples `rank` computes its next gradient on, fixed when its pull is released
  // (onPullReleased); 0 = the spec's batch_size. Only DASP's ADAPTIVE rule sizes batches.
  virtual int batchFor(int /*rank*/) const { return 0; }
  // The compute budget of `rank`'s next gradient, fixed with its batch (onPullReleased);
  // seconds 0 = none. Only DASP's ADAPTIVE rule with anytime batches gives one.
  virtual ComputeBudget computeBudgetFor(int /*rank*/) const { return {}; }
  // The samples `rank`'s gradient about to be pushed (onPush, next) was computed on, as its
  // push says: under a compute budget the node, not the policy, knows the count.
  virtual void onPushedBatch(int /*rank*/, int /*samples*/) {}

  virtual std::int64_t version() const = 0;
  // The version the server's parameters have after they changed without an update of this
  // policy (a restore, an adoption, a backlog applied in one step): the policy counts on
  // from it, so that a gradient computed on it is current (BSP's round) and staleness is
  // measured from it.
  virtual void setVersion(std::int64_t version) = 0;
  virtual ParallelState state(int rank) const = 0;
  virtual std::int64_t clock(int rank) const = 0;  // pushes accepted from `rank`
  virtual int workers() const = 0;
};

// Builds the policy a StrategySpec names (resolved with withDefaults); `batchSize` is the
// spec's batch_size (the nominal batch that DASP's ADAPTIVE rule shares out). Errors name
// the field ("strategy.name: unknown strategy 'x'").
Result<std::unique_ptr<SyncPolicy>> makePolicy(const v1::StrategySpec& strategy, int batchSize);

}  // namespace dasp
