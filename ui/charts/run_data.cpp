// SPDX-License-Identifier: MIT
#include "ui/charts/run_data.h"

#include "core/store/run_store.h"
#include "core/spec/spec.h"

#include <algorithm>

namespace dasp::ui {

QString runLabel(const v1::ExperimentSpec& spec) {
  return spec.reference_of().empty() ? QString::fromStdString(strategyLabel(spec.strategy())) : QStringLiteral("reference");
}

void setSpecIdentity(RunData& run, const v1::ExperimentSpec& spec) {
  run.referenceOf = QString::fromStdString(spec.reference_of());
  run.label = runLabel(spec);
  run.batchSize = spec.batch_size();
}

void setSpecIdentity(RunData& run) {
  auto spec = parseSpecJson(run.specJson.toStdString(), "run spec");
  if (!spec) return;
  setSpecIdentity(run, spec.value());
}

const char* toString(NodeState state) {
  switch (state) {
    case NodeState::Compute: return "COMPUTE";
    case NodeState::Push: return "PUSH";
    case NodeState::Wait: return "WAIT";
    case NodeState::Pull: return "PULL";
    case NodeState::Down: return "DOWN";
    case NodeState::Idle: return "IDLE";
    case NodeState::Offline: return "OFFLINE";
  }
  return "?";
}

std::optional<NodeState> nodeStateFromString(const QString& text) {
  for (auto s : kNodeStates) {
    if (text.compare(QLatin1String(toString(s)), Qt::CaseInsensitive) == 0) return s;
  }
  return std::nullopt;
}

Parallel parallelFromString(const QString& text) {
  if (text.compare(QLatin1String("SYNC"), Qt::CaseInsensitive) == 0) return Parallel::Sync;
  if (text.compare(QLatin1String("ASYNC"), Qt::CaseInsensitive) == 0) return Parallel::Async;
  if (text.compare(QLatin1String("DOWN"), Qt::CaseInsensitive) == 0) return Parallel::Down;
  return Parallel::None;
}

const char* toString(Parallel p) {
  switch (p) {
    case Parallel::Sync: return "SYNC";
    case Parallel::Async: return "ASYNC";
    case Parallel::Down: return "DOWN";
    case Parallel::None: return "";
  }
  return "";
}

namespace {

// worker-10 sorts after worker-9: compare the trailing number when the prefixes match.
bool nodeBefore(const QString& a, const QString& b) {
  const int da = a.lastIndexOf('-'), db = b.lastIndexOf('-');
  if (da > 0 && db > 0 && a.left(da) == b.left(db)) {
    bool okA = false, okB = false;
    const int na = a.mid(da + 1).toInt(&okA), nb = b.mid(db + 1).toInt(&okB);
    if (okA && okB) return na < nb;
  }
  return a < b;
}

// The item named `name` of `items` (kept in nodeBefore order), appended if new.
template <typename Item>
Item& namedItem(std::vector<Item>& items, const QString& name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const Item& n) { return n.name == name; });
  if (it != items.end()) return *it;
  auto pos = std::find_if(items.begin(), items.end(), [&](const Item& n) { return nodeBefore(name, n.name); });
  Item fresh;
  fresh.name = name;
  return *items.insert(pos, std::move(fresh));
}

}  // namespace

NodeData& RunData::node(const QString& nodeName) { return namedItem(nodes, nodeName); }

ShardData& RunData::shard(const QString& shardName) { return namedItem(shards, shardName); }

bool RunData::addShardSample(const QString& shardName, const std::string& series, double t, double value) {
  if (series != "shard_period_s" && series != "shard_apply_s" && series != "shard_serve_s") return false;
  auto& load = shard(shardName).load;
  auto it = std::find_if(load.rbegin(), load.rend(), [t](const ShardLoad& l) { return l.t1 == t; });
  ShardLoad* period = nullptr;
  if (it != load.rend()) {
    period = &*it;
  } else {
    // Periods follow each other: one ending before the last stays in order.
    auto pos = std::find_if(load.begin(), load.end(), [t](const ShardLoad& l) { return l.t1 > t; });
    period = &*load.insert(pos, ShardLoad{t, t, 0, 0});
  }
  if (series == "shard_period_s") period->t0 = t - value;
  if (series == "shard_apply_s") period->applyS = value;
  if (series == "shard_serve_s") period->serveS = value;
  endT = std::max(endT, t);
  return true;
}

const NodeData* RunData::findNode(const QString& nodeName) const {
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeData& n) { return n.name == nodeName; });
  return it == nodes.end() ? nullptr : &*it;
}

std::optional<double> RunData::timeToTarget(double target) const {
  for (const auto& e : evaluations) {
    if (e.accuracy >= target) return e.t;
  }
  return std::nullopt;
}

Event eventFromRow(const EventRow& row) {
  return {row.tS, row.kind, QString::fromStdString(row.node), QString::fromStdString(row.detail), row.code,
          QString::fromStdString(row.target)};
}

EventRow rowFromEvent(const Event& e) {
  return {0, e.t, e.kind, e.node.toStdString(), e.detail.toStdString(), e.code, e.target.toStdString()};
}

QString placementText(const QString& host, const QString& slurmStep) {
  if (slurmStep.isEmpty()) return host;
  return QStringLiteral("%1, Slurm step %2").arg(host, slurmStep);
}

Result<RunData> loadRunData(RunStore& store, std::int64_t runId) {
  auto row = store.run(runId);
  if (!row) return row.status();
  RunData d;
  d.runId = runId;
  d.name = QString::fromStdString(row->name);
  d.kind = QString::fromStdString(row->kind);
  d.model = QString::fromStdString(row->model);
  d.dataset = QString::fromStdString(row->dataset);
  d.strategy = QString::fromStdString(row->strategy);
  d.recovery = QString::fromStdString(row->recovery);
  d.engine = QString::fromStdString(row->engine);
  d.status = QString::fromLatin1(toString(row->status));
  if (row->divergence) d.divergence = QString::fromStdString(row->divergence->describe());
  d.seed = row->seed;
  d.specJson = QString::fromStdString(row->specJson);
  setSpecIdentity(d);
  auto bump = [&](double t) { d.endT = std::max(d.endT, t); };

  auto evals = store.evaluations(runId);
  if (!evals) return evals.status();
  for (const auto& e : evals.value()) {
    d.evaluations.push_back({e.tS, e.version, e.samples, e.loss, e.accuracy});
    bump(e.tS);
  }
  // Worker lanes first, so they exist in rank order even before any interval.
  auto nodes = store.nodes(runId);
  if (!nodes) return nodes.status();
  // A sharded server's shards are lanes of their own (the servers of a chain are not).
  const auto parsedSpec = parseSpecJson(d.specJson.toStdString(), "run spec");
  const int shards = parsedSpec ? parsedSpec.value().ps().shards() : 1;
  for (const auto& n : nodes.value()) {
    if (n.role == "server" && shards > 1) d.shard(QString::fromStdString(n.node)).host = QString::fromStdString(n.host);
    if (n.role != "worker" && n.role != "trainer") continue;
    NodeData& lane = d.node(QString::fromStdString(n.node));
    lane.host = QString::fromStdString(n.host);
    lane.slurmStep = QString::fromStdString(n.slurmStep);
  }
  auto intervals = store.stateIntervals(runId);
  if (!intervals) return intervals.status();
  for (const auto& i : intervals.value()) {
    auto state = nodeStateFromString(QString::fromStdString(i.state));
    if (!state) continue;
    auto& n = d.node(QString::fromStdString(i.node));
    n.intervals.push_back({i.t0S, i.t1S, *state, parallelFromString(QString::fromStdString(i.parallelState))});
    n.lastT = std::max(n.lastT, i.t1S);
    bump(i.t1S);
  }
  auto samples = store.samples(runId);
  if (!samples) return samples.status();
  for (const auto& s : samples.value()) {
    if (d.addShardSample(QString::fromStdString(s.node), s.series, s.tS, s.value)) continue;
    auto& n = d.node(QString::fromStdString(s.node));
    const Point p{s.tS, s.version, s.value};
    if (s.series == "wait_s") {
      n.wait.push_back(p);
      ++n.iterations;
    } else if (s.series == "staleness") {
      n.staleness.push_back(p);
    } else if (s.series == "train_loss") {
      n.trainLoss.push_back(p);
    } else if (s.series == "compute_s") {
      n.compute.push_back(p);
    } else if (s.series == "batch_size") {
      n.batch.push_back(p);
    } else if (s.series == "offline_steps") {
      n.offlineSteps.push_back(p);
    }
    n.lastT = std::max(n.lastT, s.tS);
    bump(s.tS);
  }
  auto decisions = store.decisions(runId);
  if (!decisions) return decisions.status();
  for (const auto& x : decisions.value()) {
    d.decisions.push_back({x.tS, QString::fromStdString(x.node), QString::fromStdString(x.decision),
                           QString::fromStdString(x.reason), x.kind});
  }
  auto events = store.events(runId);
  if (!events) return events.status();
  for (const auto& e : events.value()) d.events.push_back(eventFromRow(e));
  auto summary = store.summary(runId);
  if (!summary) return summary.status();
  for (const auto& s : summary.value()) {
    if (s.value) {
      d.summary[QString::fromStdString(s.key)] = *s.value;
    } else {
      d.summaryText[QString::fromStdString(s.key)] = QString::fromStdString(s.text);
    }
  }
  auto faults = store.faults(runId);
  if (!faults) return faults.status();
  d.faults = std::move(faults).value();
  d.lrConvention = d.summaryText.count("lr_convention") ? d.summaryText["lr_convention"] : QString();
  // Single-node runs have no wait series: count their iterations from the loss series.
  for (auto& n : d.nodes) {
    if (n.iterations == 0) n.iterations = static_cast<std::int64_t>(n.trainLoss.size());
  }
  return d;
}

}  // namespace dasp::ui
