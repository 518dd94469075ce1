// SPDX-License-Identifier: MIT
#pragma once
// EventRecording: turns the server's event stream into run-store rows (state intervals,
// waits, staleness, losses, decisions, evaluations, node events) and keeps the running
// figures the runner's stop condition and summary need.
// Threading: fed by the runner's watch thread; figures() may be read from another thread
// (it takes the lock).

#include "core/results/divergence.h"
#include "core/store/run_store.h"
#include "dasp/ps/v1/parameter_server.pb.h"

#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace dasp::net {

// An ITERATION event's timeline from the server's times: WAIT ends at the release, then
// the pull transfer, the compute (real + emulated), and the push up to its arrival. The
// recorder and the live view draw the same segments from it.
struct IterationTimeline {
  double waitStart = 0, release = 0, pullEnd = 0, computeEnd = 0, pushEnd = 0;
};
IterationTimeline iterationTimeline(const dasp::ps::v1::ClusterEvent& iteration);

// A DECISION event as the decisions table and the GUI show it: "state_change SYNC->ASYNC",
// "drop 9", "barrier_timeout".
std::string decisionText(const dasp::ps::v1::ClusterEvent& decision);
// The node whose load a SHARD_LOAD event reports ("server", "shard-2", "shard-2-r1").
std::string shardLoadNode(const dasp::ps::v1::ClusterEvent& load);
// A DECISION event's kind (nullopt when the event names none).
std::optional<DecisionKind> decisionKindOf(const dasp::ps::v1::ClusterEvent& decision);

// The run event of a NODE, REJECT, CONTROL or RECOVERY event (nullopt for the other
// kinds), `node` being the name of its rank: the one translation of the server's events
// into typed run events, for the store and the GUI's live feed alike. The detail text is
// the store's wording ("UP: joined", "restored: …").
std::optional<EventRow> eventRowOf(const dasp::ps::v1::ClusterEvent& e, std::int64_t runId, const std::string& node);

struct RunFigures {
  std::int64_t version = 0;
  std::int64_t gradients = 0;   // iterations pushed
  std::int64_t samples = 0;     // training samples consumed (pushed)
  std::int64_t applied = 0;
  std::int64_t dropped = 0;
  double waitSum = 0, computeSum = 0;
  double stalenessSum = 0;
  std::int64_t maxStaleness = 0;
  double lastT = 0;              // latest server time seen
  std::optional<double> targetT; // version time of the first evaluation at/above target
  bool haveEvaluation = false;
  double lastAccuracy = 0, lastLoss = 0;
  std::int64_t lastEvaluatedVersion = -1;
  std::optional<Divergence> divergence;  // the first sign that the model left training
};

class EventRecording {
 public:
  // `stop`: the spec's stop condition with its defaults (target, divergence rule).
  EventRecording(RunRecorder& recorder, std::vector<std::string> nodeNames, const v1::StopCondition& stop);
  void record(const dasp::ps::v1::EventBatch& batch);
  RunFigures figures() const;
  std::string nodeName(int rank) const;

 private:
  RunRecorder& m_recorder;
  std::vector<std::string> m_names;
  double m_target;
  mutable std::mutex m_mu;
  DivergenceMonitor m_divergence;  // guarded by m_mu
  RunFigures m_figures;
  // Each node's batch size as last recorded: the batch_size series has a row per change
  // (DASP's batch shares), not per iteration. Guarded by m_mu.
  std::map<std::string, std::int64_t> m_lastBatch;
};

}  // namespace dasp::net
