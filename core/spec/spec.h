// SPDX-License-Identifier: MIT
#pragma once
// Reading, defaulting, overriding and validating an ExperimentSpec.
//
// experiments/*.json are parsed with Protobuf's JSON utilities, so an unknown field or a
// value of the wrong type is an error naming the field; a syntax error also gets the
// line. `--set path.to.field=value` overrides go through the message's descriptors, the
// same syntax for the CLI, the GUI and sweeps. withDefaults() writes every default into
// the message, so a stored spec says exactly what ran.
// Threading: free functions over values; safe from any thread.

#include "core/common/result.h"
#include "dasp/v1/experiment.pb.h"

#include <string>
#include <vector>

namespace dasp {

using v1::ExperimentSpec;

// The most workers a cluster (or a suite entry, or `dasp bench sim`) may have.
inline constexpr int kMaxWorkers = 100000;

// Parses JSON text; `source` names the text in messages (a file name).
Result<ExperimentSpec> parseSpecJson(const std::string& json, const std::string& source);
// A strategy as the tables name it: bsp, asp, ssp(S), dssp(L,H), backup(B), and dasp with
// its variant (dasp-r: the paper rule; dasp-eq: equal batches; dasp-ct: the CLUSTER_TOTAL
// budget). Reads the knobs as given (withDefaults() fills the defaults they stand for).
std::string strategyLabel(const v1::StrategySpec& strategy);
// strategy.dasp.min_batch when the spec does not set it: batch_size / 16, at least 1.
int defaultDaspMinBatch(int batchSize);
// Reads and parses a file; errors name the file.
Result<ExperimentSpec> loadSpecFile(const std::string& path);
// The spec as JSON with the proto field names, pretty-printed.
std::string specToJson(const ExperimentSpec& spec, bool pretty = true);

// Fills every unset field with its documented default (see experiment.proto).
ExperimentSpec withDefaults(ExperimentSpec spec);

// Checks values (ranges, names). The message names the field path and the value.
Status validateSpec(const ExperimentSpec& spec);
// What a valid spec does other than it says, one line each naming the field: a batch_size
// larger than a worker's IID shard is clamped to the shard (as the gradient sources do).
std::vector<std::string> specWarnings(const ExperimentSpec& spec);

// Applies one `path.to.field=value` override. Repeated scalar fields take a
// comma-separated list; enums take their names (case-insensitive).
Status applyOverride(ExperimentSpec& spec, const std::string& assignment);

// Names known to this build, for validation messages and the GUI's choices.
const std::vector<std::string>& knownModels();
const std::vector<std::string>& knownDatasets();
const std::vector<std::string>& knownStrategies();

// Learning rate at update `step` under the optimizer's decay.
double learningRateAt(const v1::OptimizerSpec& optimizer, std::int64_t step);

// One concrete run of an experiment: a resolved, validated spec (no suite, one seed) and
// its label for comparison tables ("ssp(3)", "dasp strategy.dasp.delta=0.5").
struct PlannedRun {
  ExperimentSpec spec;
  std::string label;
};
// Expands `--grid path=v1,v2` values × suite entries × seeds, in that order, as `dasp run`
// and the workbench run them, and with spec.with_reference the reference runs after them
// (withReferenceRuns). Errors name the grid argument or the field.
Result<std::vector<PlannedRun>> planRuns(const ExperimentSpec& spec, const std::vector<std::string>& grids = {});

// The worker speed profiles the cluster describes (workers, or count + slowdowns).
std::vector<v1::NodeSpec> expandWorkers(const ExperimentSpec& spec);

// The slowdown of a speed profile at run time `t`, its scheduled changes applied (the
// worker and the simulator both read it).
double slowdownAt(const v1::SpeedProfile& speed, double t);

// A worker's link: its own LinkSpec fields over the cluster's, field by field. Unset fields
// stay unset (not emulated / not limited).
v1::LinkSpec effectiveLink(const v1::NodeSpec& node, const ExperimentSpec& spec);

// The launch.hosts index of the host that worker `rank` is placed on: launch.placement.
// workers in rank order, cycled, else the hosts themselves in turn. -1 when the spec has no
// hosts (every node on this machine) or names a host it does not have.
int workerHostIndex(const ExperimentSpec& spec, std::size_t rank);

// "none", "checkpoint", "chain", "stateless", "local".
std::string recoveryName(v1::RecoverySpec::Mode mode);
// Whether workers train their own copies through an outage: recovery LOCAL, or CHAIN with
// local_copies.
bool trainsLocalCopies(const v1::RecoverySpec& recovery);
// The field that asks for local copies (trainsLocalCopies): "recovery.mode",
// "suite[1].recovery.local_copies", ...; "" when none does.
std::string localCopiesField(const v1::ExperimentSpec& spec);
// "kill", "pause", "disconnect": a drill's action as the fault records and tables name it.
std::string faultActionName(v1::FaultSpec::Action action);
// The deadline of a worker's pull and push (recovery.call_timeout_s; default
// max(30, 3 × strategy.barrier_timeout_s)).
double callTimeoutS(const ExperimentSpec& spec);

}  // namespace dasp
