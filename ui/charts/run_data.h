// SPDX-License-Identifier: MIT
#pragma once
// RunData: everything the workbench draws about one run, in plain arrays — the node lanes
// (state intervals with the parallel state), per-node wait/staleness/loss series, policy
// decisions, events, evaluations, the summary and the fault drills' recovery metrics. It
// is filled either from the store (a finished run, for replay, compare and reports:
// loadRunData) or incrementally from the live event stream (LiveRunFeed,
// ui/live/live_run_feed.h; no fault metrics there, the runner writes them at the end). Charts
// read it; nothing in it talks to the network or the disk.
// Threading: a RunData is owned and read by the GUI thread (or the report tool's thread).

#include "core/results/recovery_metrics.h"
#include "core/common/result.h"
#include "core/policy/decision_kind.h"
#include "core/store/run_store.h"

#include <QString>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace dasp {
namespace v1 {
class ExperimentSpec;
}
}  // namespace dasp

namespace dasp::ui {

// Offline: a worker computing while no server answers it (STATELESS's backlog, LOCAL's
// local steps), from the progress it reports through the outage.
enum class NodeState : std::uint8_t { Compute, Push, Wait, Pull, Down, Idle, Offline };
inline constexpr std::array<NodeState, 7> kNodeStates{NodeState::Compute, NodeState::Push, NodeState::Wait,
                                                      NodeState::Pull,    NodeState::Down, NodeState::Idle,
                                                      NodeState::Offline};
const char* toString(NodeState state);
std::optional<NodeState> nodeStateFromString(const QString& text);

enum class Parallel : std::uint8_t { None, Sync, Async, Down };
Parallel parallelFromString(const QString& text);
const char* toString(Parallel p);

struct Interval {
  double t0 = 0, t1 = 0;  // seconds of run time
  NodeState state = NodeState::Compute;
  Parallel parallel = Parallel::None;
};

struct Point {
  double t = 0;            // seconds of run time
  std::int64_t version = 0;
  double value = 0;
};

struct Decision {
  double t = 0;
  QString node;            // "cluster" for cluster-wide decisions
  QString decision;        // for people: "state_change SYNC->ASYNC", "drop 9", "barrier_timeout"
  QString reason;
  std::optional<DecisionKind> kind;  // what views decide on (nullopt: unknown, an old row)
};

// A run event (core/events/run_events.h): views decide on `kind`, `code` and `target`; `detail`
// is shown to people, never parsed.
struct Event {
  double t = 0;
  EventKind kind = v1::RunEvent::KIND_UNSPECIFIED;
  QString node;
  QString detail;
  EventCode code = v1::RunEvent::CODE_UNSPECIFIED;
  QString target;  // the node acted on (killed, restarted, promoted, ...); "" when none
  // "node", "fault", ... as the store and the event lists name the kind.
  QString kindName() const { return QLatin1String(dasp::kindName(kind)); }
  // The node the event is about: `target` when it names one, else `node`.
  const QString& subject() const { return target.isEmpty() ? node : target; }
};
// The GUI's event of a store row, and back (for core's NodeStatusTracker).
Event eventFromRow(const EventRow& row);
EventRow rowFromEvent(const Event& e);

struct Evaluation {
  double t = 0;            // server time at which the evaluated version was made
  std::int64_t version = 0;
  std::int64_t samples = 0;
  double loss = 0;
  double accuracy = 0;
};

struct NodeData {
  QString name;                   // "worker-0", ...
  QString host;                   // the spec's host it ran on ("" for one machine without hosts)
  QString slurmStep;              // "JOB.STEP" under the SLURM launcher, else ""
  std::vector<Interval> intervals;
  std::vector<Point> wait;        // wait_s per iteration
  std::vector<Point> staleness;   // per applied gradient
  std::vector<Point> trainLoss;   // per iteration
  std::vector<Point> compute;     // real compute seconds per iteration
  std::vector<Point> batch;       // its batch size, at each change (the first iteration's too)
  // Through a server outage: its work so far (backlog gradients or local steps), about each
  // second (OFFLINE_WORK)
  std::vector<Point> offlineSteps;
  std::int64_t iterations = 0;
  double lastT = 0;               // latest time seen for this node
};

// One period of a sharded server's shard (SHARD_LOAD): seconds of it spent applying
// updates to its range and serving the nodes' calls.
struct ShardLoad {
  double t0 = 0, t1 = 0;  // seconds of run time
  double applyS = 0, serveS = 0;
};

struct ShardData {
  QString name;  // "server" (shard 0, which decides), "shard-1", ...
  QString host;  // as NodeData's
  std::vector<ShardLoad> load;
};

struct RunData {
  std::int64_t runId = 0;
  QString name, kind, model, dataset, strategy, recovery, engine, status;
  QString divergence;  // status diverged: what was seen, at which version and time (core Divergence)
  std::int64_t seed = 0;
  QString specJson;
  QString lrConvention;
  // spec.reference_of: the experiment this run is the homogeneous-equivalent reference of
  // (empty for every other run).
  QString referenceOf;
  // The strategy as the results tables name it (core strategyLabel(): ssp(3), dasp-r, …;
  // "reference" for a reference run); empty when the spec cannot be read.
  QString label;
  std::int64_t batchSize = 0;  // spec.batch_size: a node's batch where its batch series is missing
  // What every view calls the run's strategy: `label`, else the spec's strategy name
  // (one name in the bars, the legends, the tables, the sweep and the titles).
  const QString& displayStrategy() const { return label.isEmpty() ? strategy : label; }
  std::vector<Evaluation> evaluations;
  std::vector<NodeData> nodes;    // workers in rank order (the server is not a lane of its own)
  std::vector<ShardData> shards;  // a sharded server's shards, shard 0 first (none: one server)
  std::vector<Decision> decisions;
  std::vector<Event> events;
  std::map<QString, double> summary;      // numeric summary figures
  std::map<QString, QString> summaryText; // text figures (stop_reason, lr_convention)
  std::vector<RecoveryMetrics> faults;    // fault drills with their recovery metrics, by index
  double endT = 0;                        // latest time of anything in the run

  NodeData& node(const QString& nodeName);    // finds or appends (keeps worker-N order)
  ShardData& shard(const QString& shardName);  // finds or appends (keeps shard order)
  // A SHARD_LOAD figure as the store keeps it (series shard_period_s, shard_apply_s,
  // shard_serve_s of one period share its end `t`); false for another series.
  bool addShardSample(const QString& shardName, const std::string& series, double t, double value);
  const NodeData* findNode(const QString& nodeName) const;
  // The first evaluation at or above `target`, if any.
  std::optional<double> timeToTarget(double target) const;
};

// A run's label in the charts, the tables and the runs list: "reference" for a
// homogeneous-equivalent reference, else its strategy's label (ssp(3), dasp-r, dasp).
QString runLabel(const v1::ExperimentSpec& spec);

// Sets `run.referenceOf` (spec.reference_of) and `run.label`: "reference" for a
// homogeneous-equivalent reference run, else the strategy's table label (core
// strategyLabel()).
void setSpecIdentity(RunData& run, const v1::ExperimentSpec& spec);
// The same from `run.specJson`; both stay empty when it cannot be read as a spec.
void setSpecIdentity(RunData& run);

// Where a node ran, for people: "dasp-b, Slurm step 5.3", "dasp-b", or "".
QString placementText(const QString& host, const QString& slurmStep);

// Reads a whole run from the store.
Result<RunData> loadRunData(RunStore& store, std::int64_t runId);

}  // namespace dasp::ui
