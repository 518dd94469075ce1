// SPDX-License-Identifier: MIT
#pragma once
// The virtual-cluster engine (engine "sim"): runs a whole experiment — parameter server,
// workers, evaluator, fault drills, speed changes — as a discrete-event simulation on a
// virtual clock, in one thread, with the same SyncPolicy objects and the same
// ParameterStore as the gRPC server.
//
// What is real and what is modelled:
//  - real: every gradient (a GradientSource per worker: the spec's LibTorch model on the
//    worker's shard, or the plain-C++ softmax model in policy-only mode), every update
//    (ParameterStore::apply, the server's own arithmetic), every policy decision, every
//    evaluation;
//  - modelled: time. A worker's iteration takes slowdown × base_iteration_ms (or
//    × sim.compute_ms) × jitter; a pull or a push takes latency + bytes / bandwidth of the
//    worker's link; the server spends push_overhead_ms per push plus apply_ns_per_param per
//    gradient and parameter, and serves pushes one at a time in arrival order; a restarted
//    node is back after restart_ms; a chain promotes after failover_ms.
// Events at equal times are ordered by the order they were scheduled in, and every
// random draw comes from a generator seeded by the spec's seed and the rank, so the same
// spec and seed give bitwise the same run (on the same build and machine: floating-point
// kernels differ between CPUs).
//
// Runs go into the store like real runs (kind "sim", engine "sim"): the same evaluation,
// sample, state-interval, decision, event, fault and summary rows, in virtual seconds.
//
// Threading: runSimulation() runs on the caller's thread; the sources and evaluators are
// used on that thread only. The cancel flag may be set from any thread.

#include "core/common/gradient_source.h"
#include "core/common/result.h"
#include "core/store/run_store.h"
#include "core/results/run_summary.h"
#include "core/spec/spec.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dasp {

// The computation the engine drives: what `dasp` wires in (LibTorch or the softmax model).
struct SimCompute {
  std::vector<float> initialParameters;
  // Worker `rank` of `workers`: its gradients on its shard. Called once per rank before
  // the run (and once more for rank 0 when sim.compute_ms must be measured).
  std::function<Result<std::unique_ptr<GradientSource>>(int rank, int workers)> makeSource;
  // Periodic evaluations (evaluation.test_subset) and the final one (the whole test set;
  // null = the periodic one). Not owned.
  ParameterEvaluator* evaluator = nullptr;
  ParameterEvaluator* finalEvaluator = nullptr;
  std::int64_t trainCount = 0;  // training samples, for stop.epochs and the epoch count
};

struct SimOptions {
  std::string dbPath;  // run store; empty = nothing is recorded
  std::string tags;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> log;           // progress lines
  std::function<void(std::int64_t runId)> onRunCreated;  // once the run is in the store
  // Every evaluation as it is made (tests compare series bitwise through it).
  std::function<void(const EvaluationRow&)> onEvaluation;
};

// Runs one experiment (a planned run: resolved, validated, engine "sim"). When
// sim.compute_ms is needed and 0, it is measured first (on a source of its own, so the
// run's batches do not depend on it) and written into the stored spec.
Result<RunSummary> runSimulation(ExperimentSpec spec, SimCompute& compute, const SimOptions& options);

// Mean wall time of one computeGradient() of `source` in ms (3 warm-up calls, then
// `calls`); the engine's measured compute cost.
Result<double> measureComputeMs(GradientSource& source, const std::vector<float>& parameters, int calls = 10);

}  // namespace dasp
