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

// The server's cost as the run measured it: the load periods the server (shard 0) reported
// (SHARD_LOAD, stored as its shard_period_s, shard_apply_s and shard_serve_s samples),
// divided by the gradients applied (staleness samples) and the pushes taken in (wait_s
// samples) within those periods. All 0 when the run recorded none (an engine run).
struct ServerLoad {
  double applySPerGradient = 0;  // seconds folding one gradient into its parameters
  double serveSPerPush = 0;      // seconds taking in one push and answering its pull, less applies
  double coveredS = 0;           // the run time the periods cover
  std::int64_t gradients = 0, pushes = 0;
};

// The evaluator's cost as the run measured it: its process's CPU-seconds over the
// evaluations it reported. The engine charges nothing for evaluations (they take no virtual
// time): on a real host the evaluator's share of the CPU is already in the workers'
// measured compute times, so this says what that share was.
struct EvaluationCost {
  std::int64_t evaluations = 0;
  double cpuSPerEvaluation = 0;  // 0: not measured (no evaluator process, or no evaluation)
  double cpuS = 0;               // the evaluator's CPU-seconds in all
};

// A host's link as its workers' transfers measured it (a NIC shared by the workers placed
// on the host), each way apart: pulls in, pushes out. Its transfers that overlap form busy
// periods. Where two or more overlap, a link that passes one transfer at a time makes the
// n-th of them to end take n link-times longer than the first (which had its own call and
// one link-time), while a link that is not their cost leaves them as long as the first.
// That excess per place is the link's time per transfer, its bytes over the link's rate:
// two transfers at once are the second message size that one alone cannot give. (Not the
// spacing of their ends: transfers that only overlapped, started apart, have that too.)
inline constexpr int kMinHostLinkQueues = 10;  // busy periods of 2+ transfers a fit needs
// The share of the first transfer's time that the link-time must reach for the way to be
// modelled as shared: below it the transfers' time was their calls', not a link's.
inline constexpr double kSharedLinkShare = 0.25;
struct HostLinkWay {
  std::int64_t transfers = 0;  // the host's workers' transfers this way
  std::int64_t queues = 0;     // busy periods in which two or more of them overlapped
  double firstS = 0;           // the mean time of the first of such a period to end
  double linkS = 0;            // the mean excess per place in such a period (0: no such period)
  bool shared() const { return queues >= kMinHostLinkQueues && firstS > 0 && linkS >= kSharedLinkShare * firstS; }
};
struct HostLinkProfile {
  std::string host;
  std::vector<std::string> workers;
  HostLinkWay down, up;  // pulls in, pushes out
  // Per worker (in `workers` order): the mean seconds its pull and its push of an iteration
  // waited behind the host's other transfers on the shared ways (the n-th to end in a busy
  // period: n − 1 link-times).
  std::vector<double> queuedS;
};

struct ClusterProfile {
  std::int64_t runId = 0;
  std::vector<NodeProfile> workers;  // in the order of their first iteration's record
  ServerLoad server;
  EvaluationCost evaluation;
  std::vector<HostLinkProfile> hostLinks;  // hosts with two or more profiled workers
};

// The links of the hosts of `nodes` (the run's node rows: their host) that hold two or
// more of `profile`'s workers, from their PULL and PUSH `intervals` (HostLinkProfile).
std::vector<HostLinkProfile> measureHostLinks(const ClusterProfile& profile, const std::vector<NodeRow>& nodes,
                                              const std::vector<StateIntervalRow>& intervals);

// The server's load in `samples` (ServerLoad); a run without load periods gives all 0.
ServerLoad measureServerLoad(const std::vector<SampleRow>& samples);

// The profile of run `runId` from its samples (compute_s, emulated_s, batch_size) and
// state intervals. `specBatch`: a worker's batch where the run has no batch_size series.
// Errors name the run and the problem: no iterations recorded, a worker with fewer than
// kMinProfileIterations.
Result<ClusterProfile> measureProfile(std::int64_t runId, const std::vector<SampleRow>& samples,
                                      const std::vector<StateIntervalRow>& intervals, std::int64_t specBatch);

// The evaluator's cost from the run's node rows (the "evaluator" node's CPU time) and
// the count of its evaluations; all 0 when either is missing (an engine run has neither).
EvaluationCost measureEvaluationCost(const std::vector<NodeRow>& nodes, std::int64_t evaluations);

// One JSON document: {"run_id":…, "workers":[{"name", "iterations", "pull_s", "push_s",
// "segments":[{"from_s", "to_s", "seconds_per_sample", "iterations"}]}], "server":
// {"apply_s_per_gradient", "serve_s_per_push", "covered_s", "gradients", "pushes"},
// "evaluation": {"evaluations", "cpu_s", "cpu_s_per_evaluation"}, "host_links": [{"host",
// "workers", "queued_s", "down": WAY, "up": WAY}]}, WAY {"transfers", "queues", "first_s",
// "link_s"}.
std::string profileJson(const ClusterProfile& profile);
// The profile of such a document (a field it lacks reads 0); an error for text that is not
// one, or a worker without a segment.
Result<ClusterProfile> parseProfileJson(const std::string& json);

// The summary key under which a real run stores its profile, measured when it ended
// (text: profileJson). An older run, or one too short to profile, has none.
inline constexpr const char* kProfileSummaryKey = "cluster_profile";

// `spec`'s cluster as measured: one worker per profiled node (in the spec's rank order, so
// that its placement holds), its base iteration time its
// first segment's cost × spec.batch_size, a scheduled speed change at the start of each
// later segment (slowdown: that segment's cost over the first's). From a real run, each
// node's link too: the mean of its pull and push times as the latency of each, the
// bandwidth unbounded (on a host whose link is shared, measuredSpec refines it).
v1::ClusterSpec profileCluster(const ClusterProfile& profile, const v1::ExperimentSpec& spec);

// Run `runId`'s profile measured from its records now (measureProfile, the server's load,
// the evaluation's cost), whatever the run stored: what a run stores when it ends.
Result<ClusterProfile> measureRecordedProfile(RunStore& store, std::int64_t runId, std::int64_t specBatch);

// A stored run with its profile: what `dasp profile` and `dasp predict` and the
// workbench's prediction read.
struct MeasuredRun {
  RunRow row;
  v1::ExperimentSpec spec;
  ClusterProfile profile;
  bool stored = false;              // the profile is the one stored with the run
  std::vector<SummaryRow> summary;  // its result, for a prediction to be read against
};
// Run `runId` of `store` with its profile: the one stored with it (kProfileSummaryKey),
// else measured now from its records (the evaluation's cost too). Errors: the run is
// missing, its spec does not parse, or measureProfile's.
Result<MeasuredRun> measureStoredRun(RunStore& store, std::int64_t runId);

// `spec` (the measured run's) on its measured cluster, for the virtual-cluster engine:
// engine "sim", named after the run, no longer a reference of another experiment.
// With `parameters` (the model's parameter count, 0 = unknown) and a measured server load,
// the engine's server model is the measured one too (sim.apply_ns_per_param from the
// apply time per gradient over each shard's share of the parameters, sim.push_overhead_ms
// from the serve time per push). A host of spec.launch.hosts with a way of its link that the
// profile found shared (HostLinkWay::shared) gets that way (downlink, uplink), its rate the
// model's bytes per linkS, and its workers' own links keep the rest of their transfers: a
// latency of (pull + push − queued − the shared ways' linkS) / 2 each way.
v1::ExperimentSpec measuredSpec(const ClusterProfile& profile, const v1::ExperimentSpec& spec,
                                std::int64_t parameters = 0);

}  // namespace dasp
