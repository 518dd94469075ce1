// SPDX-License-Identifier: MIT
#include "ui/live/live_run_feed.h"

#include "net/runner/event_recording.h"

#include <QSet>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

namespace dasp::ui {

namespace pb = dasp::ps::v1;

namespace {

template <typename T>
void append(std::vector<T>& into, std::vector<T>&& from) {
  if (into.empty()) {
    into = std::move(from);
  } else {
    into.insert(into.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
}

}  // namespace

void LiveRunFeed::beginRun(const ExperimentSpec& spec) {
  RunData meta;
  meta.kind = QStringLiteral("distributed");
  meta.name = QString::fromStdString(spec.name().empty() ? std::string("run") : spec.name());
  meta.model = QString::fromStdString(spec.model().name());
  meta.dataset = QString::fromStdString(spec.dataset().name());
  meta.strategy = QString::fromStdString(spec.strategy().name());
  meta.recovery = QString::fromStdString(v1::RecoverySpec::Mode_Name(spec.recovery().mode()));
  meta.engine = QStringLiteral("real");
  meta.status = QStringLiteral("running");
  meta.seed = static_cast<std::int64_t>(spec.seed());
  meta.specJson = QString::fromStdString(specToJson(spec, false));
  setSpecIdentity(meta, spec);
  meta.lrConvention = QString::fromStdString(v1::OptimizerSpec::LrConvention_Name(spec.optimizer().lr_convention()));
  QStringList names;
  for (const auto& w : expandWorkers(spec)) {
    names << QString::fromStdString(w.name());
    meta.node(names.back());  // lanes in rank order before the first event
  }
  std::lock_guard<std::mutex> lock(m_mu);
  m_names = std::move(names);
  m_meta = std::move(meta);
}

void LiveRunFeed::runCreated(std::int64_t runId) {
  std::lock_guard<std::mutex> lock(m_mu);
  chunkFor(runId);
  m_hasPending.store(true, std::memory_order_release);
}

LiveRunFeed::Chunk& LiveRunFeed::chunkFor(std::int64_t runId) {
  if (!m_pending.empty() && m_pending.back().runId == runId) return m_pending.back();
  Chunk chunk;
  chunk.runId = runId;
  if (runId != m_lastRunId) {
    // A new run: its chunk carries the metadata and the lanes, and replaces the GUI's data.
    chunk.fresh = true;
    chunk.data = m_meta;
    chunk.data.runId = runId;
    m_lastRunId = runId;
    m_samples = 0;
  }
  m_pending.push_back(std::move(chunk));
  return m_pending.back();
}

QString LiveRunFeed::nodeName(int rank) const {
  if (rank < 0) return QStringLiteral("server");
  if (rank < m_names.size()) return m_names[rank];
  return QStringLiteral("worker-%1").arg(rank);
}

void LiveRunFeed::push(std::int64_t runId, const pb::EventBatch& batch) {
  if (batch.events_size() == 0) return;
  std::lock_guard<std::mutex> lock(m_mu);
  RunData& d = chunkFor(runId).data;
  for (const auto& e : batch.events()) {
    d.endT = std::max(d.endT, e.t_s());
    const Parallel parallel = parallelFromString(QString::fromStdString(e.parallel_state()));
    switch (e.kind()) {
      case pb::ClusterEvent::ITERATION: {
        NodeData& n = d.node(nodeName(e.rank()));
        const auto tl = net::iterationTimeline(e);  // the same segments the store gets
        auto interval = [&](NodeState state, double t0, double t1) {
          if (t1 > t0) n.intervals.push_back({t0, t1, state, parallel});
        };
        interval(NodeState::Wait, tl.waitStart, tl.release);
        interval(NodeState::Pull, tl.release, tl.pullEnd);
        interval(NodeState::Compute, tl.pullEnd, tl.computeEnd);
        interval(NodeState::Push, tl.computeEnd, tl.pushEnd);
        n.wait.push_back({e.t_s(), e.version(), e.wait_s()});
        n.trainLoss.push_back({e.t_s(), e.version(), e.loss()});
        n.compute.push_back({e.t_s(), e.version(), e.compute_s()});
        if (n.batch.empty() || n.batch.back().value != static_cast<double>(e.batch_size())) {
          n.batch.push_back({e.t_s(), e.version(), static_cast<double>(e.batch_size())});
        }
        ++n.iterations;
        n.lastT = std::max(n.lastT, e.t_s());
        m_samples += e.batch_size();  // training samples consumed, for the evaluations
        break;
      }
      case pb::ClusterEvent::APPLY: {
        NodeData& n = d.node(nodeName(e.rank()));
        n.staleness.push_back({e.t_s(), e.version(), static_cast<double>(e.staleness())});
        n.lastT = std::max(n.lastT, e.t_s());
        double& updates = d.summary[QStringLiteral("updates")];
        updates = std::max(updates, static_cast<double>(e.version()));
        break;
      }
      case pb::ClusterEvent::DECISION:  // in the decisions table's words
        d.decisions.push_back({e.t_s(), e.rank() < 0 ? QStringLiteral("cluster") : nodeName(e.rank()),
                               QString::fromStdString(net::decisionText(e)), QString::fromStdString(e.detail()),
                               net::decisionKindOf(e)});
        break;
      case pb::ClusterEvent::OFFLINE_WORK: {  // as the store gets it (net/runner/event_recording.cpp)
        NodeData& n = d.node(nodeName(e.rank()));
        if (e.period_s() > 0) n.intervals.push_back({e.t_s() - e.period_s(), e.t_s(), NodeState::Offline, Parallel::None});
        n.offlineSteps.push_back({e.t_s(), e.version(), static_cast<double>(e.count())});
        n.lastT = std::max(n.lastT, e.t_s());
        break;
      }
      case pb::ClusterEvent::SHARD_LOAD: {
        const QString shard = QString::fromStdString(net::shardLoadNode(e));
        (void)d.addShardSample(shard, "shard_period_s", e.t_s(), e.period_s());
        (void)d.addShardSample(shard, "shard_apply_s", e.t_s(), e.apply_s());
        (void)d.addShardSample(shard, "shard_serve_s", e.t_s(), e.serve_s());
        break;
      }
      case pb::ClusterEvent::EVALUATION: {
        Evaluation ev;
        ev.t = e.version_t_s();  // time to target uses when the version was made
        ev.version = e.version();
        ev.loss = e.loss();
        ev.accuracy = e.accuracy();
        ev.samples = m_samples;
        d.evaluations.push_back(ev);
        d.endT = std::max(d.endT, ev.t);
        break;
      }
      default:  // node, reject, control and recovery events: as net/runner/event_recording.cpp stores them
        if (auto row = net::eventRowOf(e, runId, nodeName(e.rank()).toStdString())) d.events.push_back(eventFromRow(*row));
        break;
    }
  }
  m_hasPending.store(true, std::memory_order_release);
}

void LiveRunFeed::merge(RunData& into, RunData&& from) {
  append(into.evaluations, std::move(from.evaluations));
  for (auto& n : from.nodes) {
    NodeData& target = into.node(n.name);
    append(target.intervals, std::move(n.intervals));
    append(target.wait, std::move(n.wait));
    append(target.staleness, std::move(n.staleness));
    append(target.trainLoss, std::move(n.trainLoss));
    append(target.compute, std::move(n.compute));
    append(target.offlineSteps, std::move(n.offlineSteps));
    for (const Point& b : n.batch) {  // each chunk starts its node's batch anew: changes only
      if (target.batch.empty() || target.batch.back().value != b.value) target.batch.push_back(b);
    }
    target.iterations += n.iterations;
    target.lastT = std::max(target.lastT, n.lastT);
  }
  for (auto& shard : from.shards) append(into.shard(shard.name).load, std::move(shard.load));
  append(into.decisions, std::move(from.decisions));
  append(into.events, std::move(from.events));
  for (const auto& [key, value] : from.summary) {
    double& figure = into.summary[key];
    figure = std::max(figure, value);  // live figures only grow (updates)
  }
  into.endT = std::max(into.endT, from.endT);
}

RunData LiveRunFeed::startOf(const RunData& chunkData) {
  RunData d;
  d.runId = chunkData.runId;
  d.name = chunkData.name;
  d.kind = chunkData.kind;
  d.model = chunkData.model;
  d.dataset = chunkData.dataset;
  d.strategy = chunkData.strategy;
  d.recovery = chunkData.recovery;
  d.engine = chunkData.engine;
  d.status = chunkData.status;
  d.seed = chunkData.seed;
  d.specJson = chunkData.specJson;
  d.lrConvention = chunkData.lrConvention;
  d.referenceOf = chunkData.referenceOf;
  d.label = chunkData.label;
  d.batchSize = chunkData.batchSize;
  for (const auto& n : chunkData.nodes) d.node(n.name);
  return d;
}

bool LiveRunFeed::drainInto(RunData& data) {
  std::vector<Chunk> chunks;
  {
    std::lock_guard<std::mutex> lock(m_mu);
    chunks.swap(m_pending);
    m_hasPending.store(false, std::memory_order_release);
  }
  for (auto& chunk : chunks) {
    if (chunk.fresh) {
      data = startOf(chunk.data);
    } else if (chunk.runId != data.runId) {
      // The run began before the GUI's data was cleared: start it without metadata.
      data = RunData{};
      data.runId = chunk.runId;
    }
    merge(data, std::move(chunk.data));
  }
  return !chunks.empty();
}

int LiveRunFeed::mergeStoreEvents(RunData& data, const std::vector<Event>& storeEvents) {
  // The runner's rows: drills, exits, live actions, chain changes (LEFT_CHAIN). The
  // server's recovery rows (periodic checkpoints among them) come through the stream: not
  // even looked at.
  auto runnerRow = [](const Event& e) {
    if (e.kind == v1::RunEvent::FAULT || e.kind == v1::RunEvent::EXIT || e.kind == v1::RunEvent::CONTROL) return true;
    return e.kind == v1::RunEvent::RECOVERY && e.code == v1::RunEvent::LEFT_CHAIN;
  };
  auto key = [](const Event& e) {
    return QStringLiteral("%1|%2|%3|%4").arg(e.kindName(), e.node, e.detail).arg(e.t, 0, 'g', 17);
  };
  QSet<QString> held;
  for (const Event& e : data.events) {
    if (runnerRow(e)) held.insert(key(e));
  }
  int added = 0;
  for (const Event& e : storeEvents) {
    if (!runnerRow(e)) continue;
    QString k = key(e);
    if (held.contains(k)) continue;
    held.insert(std::move(k));
    data.events.push_back(e);
    if (std::isfinite(e.t)) data.endT = std::max(data.endT, e.t);
    ++added;
  }
  return added;
}

void LiveRunFeed::clear() {
  std::lock_guard<std::mutex> lock(m_mu);
  m_pending.clear();
  m_hasPending.store(false, std::memory_order_release);
}

}  // namespace dasp::ui
