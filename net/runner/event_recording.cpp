// SPDX-License-Identifier: MIT
#include "net/runner/event_recording.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dasp::net {

namespace pb = dasp::ps::v1;

IterationTimeline iterationTimeline(const pb::ClusterEvent& e) {
  IterationTimeline t;
  t.release = e.release_t_s();
  t.waitStart = t.release - e.wait_s();
  t.pullEnd = t.release + e.pull_s();
  t.computeEnd = std::min(e.t_s(), t.pullEnd + e.compute_s() + e.emulated_s());
  t.pushEnd = e.t_s();
  return t;
}

std::string shardLoadNode(const pb::ClusterEvent& e) {
  if (!e.node().empty()) return e.node();
  // The shard's node as the runner names it (net/launch/placement.cpp).
  return e.shard() == 0 ? "server" : "shard-" + std::to_string(e.shard());
}

std::string decisionText(const pb::ClusterEvent& e) {
  std::string what = e.decision();
  if (e.decision_kind() == pb::ClusterEvent::STATE_CHANGE) what += " " + e.parallel_state() + "->" + e.state();
  if (e.decision_kind() == pb::ClusterEvent::DROP || e.decision_kind() == pb::ClusterEvent::GRANT) {
    what += " " + std::to_string(e.staleness());
  }
  return what;
}

std::optional<DecisionKind> decisionKindOf(const pb::ClusterEvent& e) {
  switch (e.decision_kind()) {
    case pb::ClusterEvent::STATE_CHANGE: return DecisionKind::StateChange;
    case pb::ClusterEvent::DROP: return DecisionKind::Drop;
    case pb::ClusterEvent::BARRIER_TIMEOUT: return DecisionKind::BarrierTimeout;
    case pb::ClusterEvent::REPARTITION: return DecisionKind::Repartition;
    case pb::ClusterEvent::GRANT: return DecisionKind::Grant;
    default: return std::nullopt;
  }
}

std::optional<EventRow> eventRowOf(const pb::ClusterEvent& e, std::int64_t runId, const std::string& node) {
  using RE = v1::RunEvent;
  switch (e.kind()) {
    case pb::ClusterEvent::NODE:
      return EventRow{runId, e.t_s(), RE::NODE, node, e.state() + ": " + e.detail(), e.code(), {}};
    case pb::ClusterEvent::REJECT:
      // GRADIENT_REFUSED / GRADIENT_CLIPPED from the gradient guard (the norm is in the
      // detail text too), else unset.
      return EventRow{runId, e.t_s(), RE::REJECT, node, e.detail(), e.code(), {}};
    case pb::ClusterEvent::CONTROL:
      return EventRow{runId, e.t_s(), RE::CONTROL, e.rank() < 0 ? "cluster" : node, e.detail(), RE::CODE_UNSPECIFIED, {}};
    case pb::ClusterEvent::RECOVERY:
      return EventRow{runId, e.t_s(), RE::RECOVERY, e.rank() < 0 ? "server" : node, e.decision() + ": " + e.detail(),
                      e.code(), e.target()};
    default:
      return std::nullopt;
  }
}

EventRecording::EventRecording(RunRecorder& recorder, std::vector<std::string> nodeNames,
                               const v1::StopCondition& stop)
    : m_recorder(recorder),
      m_names(std::move(nodeNames)),
      m_target(stop.target_accuracy()),
      m_divergence(stop.divergence()) {}

std::string EventRecording::nodeName(int rank) const {
  if (rank < 0) return "server";
  if (rank < static_cast<int>(m_names.size())) return m_names[static_cast<std::size_t>(rank)];
  return "worker-" + std::to_string(rank);
}

RunFigures EventRecording::figures() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_figures;
}

void EventRecording::record(const pb::EventBatch& batch) {
  const std::int64_t runId = m_recorder.runId();
  std::lock_guard<std::mutex> lock(m_mu);
  auto& f = m_figures;
  for (const auto& e : batch.events()) {
    f.lastT = std::max(f.lastT, e.t_s());
    const std::string node = e.kind() == pb::ClusterEvent::EVALUATION ? "evaluator" : nodeName(e.rank());
    switch (e.kind()) {
      case pb::ClusterEvent::ITERATION: {
        ++f.gradients;
        f.samples += e.batch_size();
        f.waitSum += e.wait_s();
        f.computeSum += e.compute_s() + e.emulated_s();
        const auto tl = iterationTimeline(e);
        auto interval = [&](const char* state, double t0, double t1) {
          if (t1 <= t0) return;
          m_recorder.record(StateIntervalRow{runId, node, state, e.parallel_state(), t0, t1});
        };
        interval("WAIT", tl.waitStart, tl.release);
        interval("PULL", tl.release, tl.pullEnd);
        interval("COMPUTE", tl.pullEnd, tl.computeEnd);
        interval("PUSH", tl.computeEnd, tl.pushEnd);
        m_recorder.record(SampleRow{runId, node, "wait_s", e.t_s(), e.version(), e.wait_s()});
        m_recorder.record(SampleRow{runId, node, "train_loss", e.t_s(), e.version(), e.loss()});
        m_divergence.onTrainLoss(e.t_s(), e.version(), e.loss());
        m_recorder.record(SampleRow{runId, node, "compute_s", e.t_s(), e.version(), e.compute_s()});
        if (e.emulated_s() > 0) {
          m_recorder.record(SampleRow{runId, node, "emulated_s", e.t_s(), e.version(), e.emulated_s()});
        }
        if (auto [last, first] = m_lastBatch.try_emplace(node, e.batch_size()); first || last->second != e.batch_size()) {
          last->second = e.batch_size();
          m_recorder.record(SampleRow{runId, node, "batch_size", e.t_s(), e.version(), static_cast<double>(e.batch_size())});
        }
        break;
      }
      case pb::ClusterEvent::APPLY:
        ++f.applied;
        f.version = std::max(f.version, e.version());
        f.stalenessSum += static_cast<double>(e.staleness());
        f.maxStaleness = std::max(f.maxStaleness, e.staleness());
        m_recorder.record(SampleRow{runId, node, "staleness", e.t_s(), e.version(), static_cast<double>(e.staleness())});
        break;
      case pb::ClusterEvent::DECISION:
        if (e.decision_kind() == pb::ClusterEvent::DROP) ++f.dropped;
        m_recorder.record(
            DecisionRow{runId, e.t_s(), e.rank() < 0 ? "cluster" : node, decisionText(e), e.detail(), decisionKindOf(e)});
        break;
      case pb::ClusterEvent::EVALUATION: {
        EvaluationRow row;
        row.runId = runId;
        row.tS = e.version_t_s();
        row.version = e.version();
        row.updates = e.version();
        row.samples = f.samples;
        row.loss = e.loss();
        row.accuracy = e.accuracy();
        m_recorder.record(row);
        f.haveEvaluation = true;
        f.lastAccuracy = e.accuracy();
        f.lastLoss = e.loss();
        f.lastEvaluatedVersion = e.version();
        if (m_target > 0 && e.accuracy() >= m_target && !f.targetT) f.targetT = e.version_t_s();
        m_divergence.onTestLoss(e.version_t_s(), e.version(), e.loss());
        break;
      }
      case pb::ClusterEvent::SHARD_LOAD: {
        const std::string shard = shardLoadNode(e);
        m_recorder.record(SampleRow{runId, shard, "shard_period_s", e.t_s(), e.version(), e.period_s()});
        m_recorder.record(SampleRow{runId, shard, "shard_apply_s", e.t_s(), e.version(), e.apply_s()});
        m_recorder.record(SampleRow{runId, shard, "shard_serve_s", e.t_s(), e.version(), e.serve_s()});
        break;
      }
      case pb::ClusterEvent::OFFLINE_WORK:
        if (e.period_s() > 0) {
          m_recorder.record(StateIntervalRow{runId, node, "OFFLINE", "", e.t_s() - e.period_s(), e.t_s()});
        }
        m_recorder.record(SampleRow{runId, node, "offline_steps", e.t_s(), e.version(), static_cast<double>(e.count())});
        break;
      case pb::ClusterEvent::REJECT:
        // A refused push comes with its loss: a model whose gradients the guard refuses as
        // they explode has left training (a clipped one was applied: its ITERATION has it).
        if (e.rank() >= 0 && e.code() != v1::RunEvent::GRADIENT_CLIPPED) {
          m_divergence.onRefusedTrainLoss(e.t_s(), e.version(), e.loss());
        }
        if (auto row = eventRowOf(e, runId, node)) m_recorder.record(std::move(*row));
        break;
      default:
        if (auto row = eventRowOf(e, runId, node)) m_recorder.record(std::move(*row));
        break;
    }
  }
  if (!f.divergence && m_divergence.divergence()) f.divergence = m_divergence.divergence();
}

}  // namespace dasp::net
