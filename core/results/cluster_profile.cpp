// SPDX-License-Identifier: MIT
#include "core/results/cluster_profile.h"

#include "core/spec/spec.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace dasp {
namespace {

struct Iteration {
  double t = 0;
  double cost = 0;  // seconds per sample
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

double medianCost(const std::vector<Iteration>& its, std::size_t from, std::size_t to) {
  std::vector<double> costs;
  for (std::size_t i = from; i < to; ++i) costs.push_back(its[i].cost);
  return median(std::move(costs));
}

bool differs(double a, double b) { return b > 0 && std::abs(a / b - 1) > kSpeedChangeRatio; }

// The first iteration of a change found at block `b`: from the block before it, the first
// of three iterations in a row closer to the new level than to the old one (the block's
// start where none is).
std::size_t changeIteration(const std::vector<Iteration>& its, std::size_t from, std::size_t blockStart, std::size_t to,
                            double oldLevel, double newLevel) {
  auto isNew = [&](std::size_t i) { return std::abs(its[i].cost - newLevel) < std::abs(its[i].cost - oldLevel); };
  for (std::size_t i = std::max<std::size_t>(from, 1); i + 2 < to; ++i) {
    if (isNew(i) && isNew(i + 1) && isNew(i + 2)) return i;
  }
  return blockStart;
}

// A node's iterations cut where its block medians move for good (see the header).
std::vector<SpeedSegment> segmentsOf(const std::vector<Iteration>& its) {
  const std::size_t n = its.size();
  const std::size_t block = std::max<std::size_t>(kMinBlock, n / 40);
  const std::size_t blocks = std::max<std::size_t>(1, n / block);
  auto blockBegin = [&](std::size_t b) { return b * block; };
  auto blockEnd = [&](std::size_t b) { return b + 1 == blocks ? n : (b + 1) * block; };
  std::vector<double> medians;
  for (std::size_t b = 0; b < blocks; ++b) medians.push_back(medianCost(its, blockBegin(b), blockEnd(b)));
  std::vector<std::size_t> startBlocks{0}, starts{0};  // each segment's first block and iteration
  for (std::size_t b = 1; b + 1 < blocks; ++b) {
    const double level = median(std::vector<double>(medians.begin() + static_cast<std::ptrdiff_t>(startBlocks.back()),
                                                    medians.begin() + static_cast<std::ptrdiff_t>(b)));
    if (!differs(medians[b], level) || differs(medians[b + 1], medians[b])) continue;
    startBlocks.push_back(b);
    starts.push_back(std::max(starts.back() + 1, changeIteration(its, blockBegin(b - 1), blockBegin(b), blockEnd(b), level, medians[b])));
  }
  std::vector<SpeedSegment> out;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const std::size_t from = starts[s];
    const std::size_t to = s + 1 < starts.size() ? starts[s + 1] : n;
    // A later segment holds from the end of the iteration before its first: that one ran
    // at the old speed, its own first at the new.
    out.push_back({from > 0 ? its[from - 1].t : its[from].t, its[to - 1].t, medianCost(its, from, to),
                   static_cast<std::int64_t>(to - from)});
  }
  return out;
}

// "worker-2" before "worker-10".
bool nodeOrder(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// The profiled workers in the spec's rank order (its expanded workers' names; a name the
// spec lacks after them, in the profile's order): the order a rank's placement
// (launch.placement.workers) and the engine's ranks follow.
std::vector<NodeProfile> inRankOrder(const std::vector<NodeProfile>& workers, const v1::ExperimentSpec& spec) {
  std::map<std::string, std::size_t> rank;
  const auto named = expandWorkers(spec);
  for (std::size_t r = 0; r < named.size(); ++r) rank.emplace(named[r].name(), r);
  std::vector<NodeProfile> out = workers;
  std::stable_sort(out.begin(), out.end(), [&](const NodeProfile& a, const NodeProfile& b) {
    const auto ra = rank.find(a.name), rb = rank.find(b.name);
    return (ra == rank.end() ? named.size() : ra->second) < (rb == rank.end() ? named.size() : rb->second);
  });
  return out;
}

// measuredSpec's host links: each host of the spec with a shared way gets that way at the
// model's bytes per link-time, and its workers' own links the rest of their transfers.
void applySharedHostLinks(const ClusterProfile& profile, std::int64_t parameters, v1::ExperimentSpec& measured) {
  const double bits = 8.0 * sizeof(float) * static_cast<double>(parameters);
  auto& hosts = *measured.mutable_launch()->mutable_hosts();
  auto& specs = *measured.mutable_cluster()->mutable_workers();
  for (const HostLinkProfile& link : profile.hostLinks) {
    const auto host = std::find_if(hosts.begin(), hosts.end(), [&](const v1::HostSpec& h) { return h.name() == link.host; });
    if (host == hosts.end() || !(link.down.shared() || link.up.shared())) continue;
    auto setWay = [&](const HostLinkWay& way, v1::LinkSpec* spec) {
      spec->set_mbit(bits / way.linkS / 1e6);
      spec->set_latency_ms(0);
    };
    if (link.down.shared()) setWay(link.down, host->mutable_downlink());
    if (link.up.shared()) setWay(link.up, host->mutable_uplink());
    const double onLinks = (link.down.shared() ? link.down.linkS : 0) + (link.up.shared() ? link.up.linkS : 0);
    for (std::size_t w = 0; w < link.workers.size(); ++w) {
      const auto node = std::find_if(profile.workers.begin(), profile.workers.end(),
                                     [&](const NodeProfile& n) { return n.name == link.workers[w]; });
      const auto spec = std::find_if(specs.begin(), specs.end(),
                                     [&](const v1::NodeSpec& n) { return n.name() == link.workers[w]; });
      if (node == profile.workers.end() || spec == specs.end()) continue;
      const double own = node->pullS + node->pushS - link.queuedS[w] - onLinks;
      spec->mutable_link()->set_latency_ms(1000 * std::max(0.0, own) / 2);
    }
  }
}

}  // namespace

Result<ClusterProfile> measureProfile(std::int64_t runId, const std::vector<SampleRow>& samples,
                                      const std::vector<StateIntervalRow>& intervals, std::int64_t specBatch) {
  const std::string run = "run " + std::to_string(runId);
  std::map<std::string, std::vector<std::pair<double, double>>> compute, batch;  // node -> (t, value)
  std::map<std::string, std::map<double, double>> emulated;                      // node -> t -> seconds
  for (const SampleRow& s : samples) {
    if (s.series == "compute_s") compute[s.node].emplace_back(s.tS, s.value);
    else if (s.series == "emulated_s") emulated[s.node][s.tS] = s.value;
    else if (s.series == "batch_size") batch[s.node].emplace_back(s.tS, s.value);
  }
  if (compute.empty()) {
    return Status::error(run + " has no iterations recorded (no compute_s samples): there is nothing to measure");
  }
  std::vector<std::string> names;
  for (const auto& [name, rows] : compute) names.push_back(name);
  std::sort(names.begin(), names.end(), nodeOrder);
  ClusterProfile profile;
  profile.runId = runId;
  for (const std::string& name : names) {
    auto rows = compute[name];
    if (static_cast<int>(rows.size()) < kMinProfileIterations) {
      return Status::error(run + ": " + name + " has " + std::to_string(rows.size()) + " iterations recorded; a profile needs at least " +
                           std::to_string(kMinProfileIterations) + " of every worker (a longer run)");
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    auto steps = batch[name];
    std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto& extra = emulated[name];
    std::vector<Iteration> its;
    std::size_t step = 0;
    double size = specBatch > 0 ? static_cast<double>(specBatch) : 1.0;
    if (!steps.empty()) size = steps.front().second;
    for (const auto& [t, seconds] : rows) {
      while (step < steps.size() && steps[step].first <= t) size = steps[step++].second;
      const auto e = extra.find(t);
      its.push_back({t, (seconds + (e != extra.end() ? e->second : 0.0)) / std::max(size, 1.0)});
    }
    NodeProfile node;
    node.name = name;
    node.iterations = static_cast<std::int64_t>(its.size());
    node.segments = segmentsOf(its);
    double pull = 0, push = 0;
    int pulls = 0, pushes = 0;
    for (const StateIntervalRow& i : intervals) {
      if (i.node != name) continue;
      if (i.state == "PULL") pull += i.t1S - i.t0S, ++pulls;
      if (i.state == "PUSH") push += i.t1S - i.t0S, ++pushes;
    }
    node.pullS = pulls > 0 ? pull / pulls : 0;
    node.pushS = pushes > 0 ? push / pushes : 0;
    profile.workers.push_back(std::move(node));
  }
  profile.server = measureServerLoad(samples);
  return profile;
}

ServerLoad measureServerLoad(const std::vector<SampleRow>& samples) {
  // The server's periods (t − period, t], in time order; then what fell in them.
  std::map<double, double> periodEnds;  // t -> period
  double applyS = 0, serveS = 0;
  for (const SampleRow& s : samples) {
    if (s.node != "server") continue;
    if (s.series == "shard_period_s") periodEnds[s.tS] = s.value;
    else if (s.series == "shard_apply_s") applyS += s.value;
    else if (s.series == "shard_serve_s") serveS += s.value;
  }
  ServerLoad load;
  if (periodEnds.empty()) return load;
  auto covered = [&](double t) {
    const auto end = periodEnds.lower_bound(t);
    return end != periodEnds.end() && t > end->first - end->second;
  };
  for (const SampleRow& s : samples) {
    if (s.series == "staleness" && covered(s.tS)) ++load.gradients;
    if (s.series == "wait_s" && covered(s.tS)) ++load.pushes;
  }
  for (const auto& [t, period] : periodEnds) load.coveredS += period;
  if (load.gradients > 0) load.applySPerGradient = applyS / static_cast<double>(load.gradients);
  if (load.pushes > 0) load.serveSPerPush = serveS / static_cast<double>(load.pushes);
  return load;
}

v1::ClusterSpec profileCluster(const ClusterProfile& profile, const v1::ExperimentSpec& spec) {
  v1::ClusterSpec cluster = spec.cluster();
  cluster.clear_workers();
  cluster.clear_count();
  cluster.clear_slowdowns();
  cluster.clear_base_iteration_ms();
  const double batch = spec.batch_size() > 0 ? static_cast<double>(spec.batch_size()) : 1.0;
  for (const NodeProfile& n : inRankOrder(profile.workers, spec)) {
    v1::NodeSpec* node = cluster.add_workers();
    node->set_name(n.name);
    if (spec.engine() != "sim" && n.pullS + n.pushS > 0) {
      // A real run's pulls and pushes took what they took (the transfer, the call, the
      // scheduling of busy cores): that time per call is the link's latency, and the
      // bandwidth is left unbounded, the bytes being in the time measured. An engine
      // run's link is its spec's already.
      node->mutable_link()->set_latency_ms(1000 * (n.pullS + n.pushS) / 2);
      node->mutable_link()->set_mbit(kUnboundedMbit);
    }
    const double first = n.segments.front().secondsPerSample;
    node->mutable_speed()->set_base_iteration_ms(first * batch * 1000);
    node->mutable_speed()->set_slowdown(1.0);
    for (std::size_t s = 1; s < n.segments.size(); ++s) {
      v1::SpeedChange* change = node->mutable_speed()->add_changes();
      change->set_at_s(n.segments[s].fromS);
      change->set_slowdown(first > 0 ? n.segments[s].secondsPerSample / first : 1.0);
    }
  }
  return cluster;
}

v1::ExperimentSpec measuredSpec(const ClusterProfile& profile, const v1::ExperimentSpec& spec,
                                std::int64_t parameters) {
  v1::ExperimentSpec measured = spec;
  *measured.mutable_cluster() = profileCluster(profile, spec);
  measured.set_engine("sim");
  const ServerLoad& load = profile.server;
  if (parameters > 0 && load.applySPerGradient > 0) {
    // Shard 0 applies its share of the parameters, as every shard does at once.
    const double perShard = static_cast<double>(parameters) / std::max(1, spec.ps().shards());
    measured.mutable_sim()->set_apply_ns_per_param(1e9 * load.applySPerGradient / perShard);
  }
  if (load.serveSPerPush > 0) measured.mutable_sim()->set_push_overhead_ms(1000 * load.serveSPerPush);
  if (parameters > 0 && spec.engine() != "sim") applySharedHostLinks(profile, parameters, measured);
  const std::string run = std::to_string(profile.runId);
  measured.set_name(spec.name() + "-measured-run-" + run);
  measured.set_description("The cluster of run " + run + " (" + spec.name() +
                           ") as it measured it (dasp profile): each worker's compute per sample and the speed "
                           "changes found in its iterations, for the virtual-cluster engine.");
  measured.clear_reference_of();
  return measured;
}

EvaluationCost measureEvaluationCost(const std::vector<NodeRow>& nodes, std::int64_t evaluations) {
  EvaluationCost cost;
  const auto evaluator =
      std::find_if(nodes.begin(), nodes.end(), [](const NodeRow& n) { return n.node == "evaluator"; });
  if (evaluator == nodes.end() || evaluations <= 0 || !(evaluator->cpuS > 0)) return cost;
  cost.evaluations = evaluations;
  cost.cpuS = evaluator->cpuS;
  cost.cpuSPerEvaluation = evaluator->cpuS / static_cast<double>(evaluations);
  return cost;
}

Result<ClusterProfile> measureRecordedProfile(RunStore& store, std::int64_t runId, std::int64_t specBatch) {
  auto samples = store.samples(runId);
  if (!samples) return samples.status();
  auto intervals = store.stateIntervals(runId);
  if (!intervals) return intervals.status();
  auto profile = measureProfile(runId, samples.value(), intervals.value(), specBatch);
  if (!profile) return profile.status();
  auto nodes = store.nodes(runId);
  if (!nodes) return nodes.status();
  auto evaluations = store.evaluations(runId);
  if (!evaluations) return evaluations.status();
  profile->evaluation = measureEvaluationCost(nodes.value(), static_cast<std::int64_t>(evaluations->size()));
  profile->hostLinks = measureHostLinks(profile.value(), nodes.value(), intervals.value());
  return profile;
}

Result<MeasuredRun> measureStoredRun(RunStore& store, std::int64_t runId) {
  MeasuredRun m;
  auto row = store.run(runId);
  if (!row) return row.status();
  m.row = std::move(row).value();
  auto spec = parseSpecJson(m.row.specJson, "run " + std::to_string(runId) + "'s spec");
  if (!spec) return spec.status();
  m.spec = std::move(spec).value();
  auto summary = store.summary(runId);
  if (!summary) return summary.status();
  m.summary = std::move(summary).value();
  const auto stored = std::find_if(m.summary.begin(), m.summary.end(),
                                   [](const SummaryRow& s) { return s.key == kProfileSummaryKey; });
  if (stored != m.summary.end()) {
    if (auto profile = parseProfileJson(stored->text)) {
      m.profile = std::move(profile).value();
      m.stored = true;
      return m;
    }
  }
  auto profile = measureRecordedProfile(store, runId, m.spec.batch_size());
  if (!profile) return profile.status();
  m.profile = std::move(profile).value();
  return m;
}

}  // namespace dasp
