// SPDX-License-Identifier: MIT
#include "core/spec/reference_cluster.h"

#include <algorithm>
#include <set>
#include <utility>

namespace dasp {

Result<ExperimentSpec> homogeneousEquivalent(const ExperimentSpec& spec) {
  const auto nodes = expandWorkers(spec);
  if (nodes.empty()) return Status::error("reference: the cluster has no workers");
  const double clusterBase = spec.cluster().base_iteration_ms();
  std::vector<double> base;
  for (const auto& node : nodes) {
    base.push_back(node.speed().base_iteration_ms() > 0 ? node.speed().base_iteration_ms() : clusterBase);
  }
  const bool emulated = base.front() > 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((base[i] > 0) != emulated) {
      return Status::error("reference: " + nodes[i].name() +
                           " mixes real compute time (base_iteration_ms 0) with emulated ones; the "
                           "equivalent cluster needs all or none emulated");
    }
  }
  // Iteration time of worker i at run time t, in units of its base (ms, or the real
  // compute when no base is emulated); the equivalent time is N / Σ 1/tᵢ.
  auto equivalentAt = [&](double t) {
    double rate = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      rate += 1.0 / (slowdownAt(nodes[i].speed(), t) * (emulated ? base[i] : 1.0));
    }
    return static_cast<double>(nodes.size()) / rate;
  };
  std::set<double> changes;
  for (const auto& node : nodes) {
    for (const auto& c : node.speed().changes()) changes.insert(c.at_s());
  }
  const double t0 = equivalentAt(0.0);
  v1::NodeSpec ideal;
  auto* speed = ideal.mutable_speed();
  if (emulated) {
    speed->set_base_iteration_ms(t0);
    speed->set_slowdown(1.0);
  } else {
    speed->set_slowdown(t0);
  }
  for (double at : changes) {
    auto* change = speed->add_changes();
    change->set_at_s(at);
    change->set_slowdown(emulated ? equivalentAt(at) / t0 : equivalentAt(at));
  }

  ExperimentSpec ref = spec;
  auto* cluster = ref.mutable_cluster();
  const v1::LinkSpec link = cluster->link();
  cluster->Clear();
  *cluster->mutable_link() = link;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    v1::NodeSpec node = ideal;
    node.set_name(nodes[i].name());
    node.set_device(nodes[i].device());
    *cluster->add_workers() = node;
  }
  auto* strategy = ref.mutable_strategy();
  const double timeout = strategy->barrier_timeout_s();
  strategy->Clear();
  strategy->set_name("bsp");
  if (timeout > 0) strategy->set_barrier_timeout_s(timeout);
  ref.clear_faults();
  ref.clear_with_reference();
  ref.set_name(spec.name() + " (homogeneous-equivalent reference)");
  ref.set_reference_of(spec.name());
  return withDefaults(ref);
}

Result<std::vector<PlannedRun>> withReferenceRuns(const std::vector<PlannedRun>& planned) {
  std::vector<PlannedRun> out = planned;
  std::set<std::pair<std::uint64_t, double>> seen;
  for (const auto& p : planned) {
    const auto key = std::make_pair(p.spec.seed(), p.spec.optimizer().lr());
    if (!seen.insert(key).second) continue;
    auto ref = homogeneousEquivalent(p.spec);
    if (!ref) return ref.status();
    if (auto st = validateSpec(ref.value()); !st) return st.withContext("reference");
    out.push_back({std::move(ref).value(), "reference"});
  }
  return out;
}

}  // namespace dasp
