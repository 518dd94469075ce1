// SPDX-License-Identifier: MIT
#pragma once
// A cluster profile measured from a stored run (`dasp profile`, issue 34): for each worker
// its compute time per training sample, as segments between the speed changes found in
// its recorded iteration times (a real cluster declares no speeds), and its mean pull and
// push times. profileCluster() turns it into the cluster of a spec, which the
// virtual-cluster engine runs: the measured cluster, every strategy on it.
//
// A change is found where the median cost per sample of a block of iterations (at least
// kMinBlock, or a 40th of the node's) moves more than kSpeedChangeRatio from the segment's
// and the next block agrees; it is placed at the first of three iterations in a row
// nearer the new speed than the old. A flapping faster than two blocks reads as one mean
// speed.
// Threading: pure functions; any thread.

#include "core/common/result.h"
#include "core/store/run_store.h"
#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dasp {

inline constexpr double kSpeedChangeRatio = 0.25;
inline constexpr int kMinBlock = 5;
inline constexpr int kMinProfileIterations = 20;  // per worker
inline constexpr double kUnboundedMbit = 1e9;      // a measured link's bandwidth: the bytes are in its latency

struct SpeedSegment {
  // Run time it holds from (a later segment: the end of the iteration before its first,
  // the last at the old speed) to the end of its last iteration.
  double fromS = 0, toS = 0;
  double secondsPerSample = 0;   // the median of its iterations' (compute + emulated) / batch
  std::int64_t iterations = 0;
};

struct NodeProfile {
  std::string name;
  std::vector<SpeedSegment> segments;  // in time order; a speed change between two
  double pullS = 0, pushS = 0;         // mean seconds of its PULL and PUSH intervals (0: none)
  std::int64_t iterations = 0;
};

struct ClusterProfile {
  std::int64_t runId = 0;
  std::vector<NodeProfile> workers;  // in the order of their first iteration's record
};

// The profile of run `runId` from its samples (compute_s, emulated_s, batch_size) and
// state intervals. `specBatch`: a worker's batch where the run has no batch_size series.
// Errors name the run and the problem: no iterations recorded, a worker with fewer than
// kMinProfileIterations.
Result<ClusterProfile> measureProfile(std::int64_t runId, const std::vector<SampleRow>& samples,
                                      const std::vector<StateIntervalRow>& intervals, std::int64_t specBatch);

// One JSON document: {"run_id":…, "workers":[{"name", "iterations", "pull_s", "push_s",
// "segments":[{"from_s", "to_s", "seconds_per_sample", "iterations"}]}]}.
std::string profileJson(const ClusterProfile& profile);

// `spec`'s cluster as measured: one worker per profiled node, its base iteration time its
// first segment's cost × spec.batch_size, a scheduled speed change at the start of each
// later segment (slowdown: that segment's cost over the first's). From a real run, each
// node's link too: the mean of its pull and push times as the latency of each, the
// bandwidth unbounded.
v1::ClusterSpec profileCluster(const ClusterProfile& profile, const v1::ExperimentSpec& spec);

// A stored run with its profile: what `dasp profile` and `dasp predict` and the
// workbench's prediction read.
struct MeasuredRun {
  RunRow row;
  v1::ExperimentSpec spec;
  ClusterProfile profile;
  std::vector<SummaryRow> summary;  // its result, for a prediction to be read against
};
// Run `runId` of `store`, profiled. Errors: the run is missing, its spec does not parse,
// or measureProfile's.
Result<MeasuredRun> measureStoredRun(RunStore& store, std::int64_t runId);

// `spec` (the measured run's) on its measured cluster, for the virtual-cluster engine:
// engine "sim", named after the run, no longer a reference of another experiment.
v1::ExperimentSpec measuredSpec(const ClusterProfile& profile, const v1::ExperimentSpec& spec);

}  // namespace dasp
