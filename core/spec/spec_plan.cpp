// SPDX-License-Identifier: MIT
// What a spec means for the runs it plans: the suite and grid expansion, labels, the
// workers of its cluster, their speeds and links.
#include "core/spec/reference_cluster.h"
#include "core/spec/spec.h"
#include "core/spec/spec_text.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dasp {

using namespace spec_text;

namespace {
std::vector<std::string> splitCommaList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!trim(item).empty()) out.push_back(trim(item));
  }
  return out;
}
}  // namespace

int defaultDaspMinBatch(int batchSize) { return std::max(1, batchSize / 16); }

std::string strategyLabel(const v1::StrategySpec& strategy) {
  const std::string& name = strategy.name();
  if (name == "ssp") return name + "(" + std::to_string(strategy.ssp().staleness()) + ")";
  if (name == "dssp") {
    return name + "(" + std::to_string(strategy.dssp().s_low()) + "," + std::to_string(strategy.dssp().s_high()) + ")";
  }
  if (name == "backup") return name + "(" + std::to_string(strategy.backup().backup_workers()) + ")";
  if (name == "dasp") {
    const auto& d = strategy.dasp();
    if (d.rule() == v1::DaspParams::PAPER) return "dasp-r";
    if (d.has_balance_batches() && !d.balance_batches()) return "dasp-eq";
    if (d.batch_budget() == v1::DaspParams::CLUSTER_TOTAL) return "dasp-ct";
    if (d.has_anytime() && !d.anytime()) return "dasp-count";
  }
  return name;
}

Result<std::vector<PlannedRun>> planRuns(const ExperimentSpec& base, const std::vector<std::string>& grids) {
  std::vector<std::pair<ExperimentSpec, std::string>> gridSpecs{{base, ""}};
  for (const auto& g : grids) {
    const auto eq = g.find('=');
    if (eq == std::string::npos) return Status::error("--grid " + g + ": expected path=v1,v2,...");
    const auto path = g.substr(0, eq);
    const auto values = splitCommaList(g.substr(eq + 1));
    if (values.empty()) return Status::error("--grid " + g + ": no values");
    std::vector<std::pair<ExperimentSpec, std::string>> next;
    for (const auto& [spec, label] : gridSpecs) {
      for (const auto& v : values) {
        ExperimentSpec s = spec;
        if (auto st = applyOverride(s, path + "=" + v); !st) return Status::error("--grid: " + st.message());
        next.emplace_back(s, label + (label.empty() ? "" : " ") + path + "=" + v);
      }
    }
    gridSpecs = std::move(next);
  }
  std::vector<PlannedRun> out;
  for (const auto& [spec, gridLabel] : gridSpecs) {
    // The spec as written first, so that an error names the field where it was given
    // (suite[1].strategy.ssp.staleness), not where a suite entry's value lands.
    if (auto st = validateSpec(spec); !st) return st;
    std::vector<v1::SuiteEntry> entries(spec.suite().begin(), spec.suite().end());
    if (entries.empty()) entries.emplace_back();
    std::vector<std::uint64_t> seeds(spec.seeds().begin(), spec.seeds().end());
    if (seeds.empty()) seeds.push_back(spec.has_seed() ? spec.seed() : withDefaults(spec).seed());
    // Fair tuning: every entry at every learning rate of the grid (the label stays the
    // strategy's; tables pick each strategy's best rate).
    std::vector<std::optional<double>> rates;
    for (double lr : spec.lr_grid()) rates.emplace_back(lr);
    if (rates.empty()) rates.emplace_back();
    for (const auto& entry : entries) {
      for (const auto& rate : rates) {
      for (const auto seed : seeds) {
        ExperimentSpec s = spec;
        s.clear_suite();
        s.clear_seeds();
        s.clear_lr_grid();
        s.set_seed(seed);
        if (rate) s.mutable_optimizer()->set_lr(*rate);
        if (entry.has_strategy()) {
          // The entry's strategy replaces the name and adds its knobs over the base's.
          auto strategy = spec.strategy();
          strategy.MergeFrom(entry.strategy());
          *s.mutable_strategy() = strategy;
        }
        if (entry.has_recovery()) *s.mutable_recovery() = entry.recovery();
        if (entry.shards() > 0) s.mutable_ps()->set_shards(entry.shards());
        if (entry.workers() > 0) {
          auto* cluster = s.mutable_cluster();
          if (cluster->workers_size() > 0) {
            while (cluster->workers_size() > entry.workers()) cluster->mutable_workers()->RemoveLast();
          } else {
            cluster->set_count(entry.workers());
          }
        }
        if (auto st = validateSpec(s); !st) return st;
        s = withDefaults(s);
        std::string label = strategyLabel(s.strategy());
        if (entry.has_recovery()) label += " " + recoveryName(s.recovery().mode());
        if (entry.workers() > 0) label += " w=" + std::to_string(entry.workers());
        if (entry.shards() > 0) label += " S=" + std::to_string(entry.shards());
        if (!gridLabel.empty()) label += " " + gridLabel;
        out.push_back({s, label});
      }
      }
    }
  }
  if (base.with_reference()) return withReferenceRuns(out);
  return out;
}

std::string recoveryName(v1::RecoverySpec::Mode mode) {
  std::string name = v1::RecoverySpec::Mode_Name(mode);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool trainsLocalCopies(const v1::RecoverySpec& recovery) {
  return recovery.mode() == v1::RecoverySpec::LOCAL ||
         (recovery.mode() == v1::RecoverySpec::CHAIN && recovery.local_copies());
}

std::string localCopiesField(const v1::ExperimentSpec& spec) {
  auto field = [](const v1::RecoverySpec& r) -> std::string {
    if (!trainsLocalCopies(r)) return "";
    return r.mode() == v1::RecoverySpec::LOCAL ? "recovery.mode" : "recovery.local_copies";
  };
  if (auto f = field(spec.recovery()); !f.empty()) return f;
  for (int i = 0; i < spec.suite_size(); ++i) {
    if (!spec.suite(i).has_recovery()) continue;
    if (auto f = field(spec.suite(i).recovery()); !f.empty()) return "suite[" + std::to_string(i) + "]." + f;
  }
  return "";
}

std::string faultActionName(v1::FaultSpec::Action action) {
  std::string name = v1::FaultSpec::Action_Name(action);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

double callTimeoutS(const ExperimentSpec& spec) {
  if (spec.recovery().has_call_timeout_s()) return spec.recovery().call_timeout_s();
  return std::max(30.0, 3 * spec.strategy().barrier_timeout_s());
}

std::vector<v1::NodeSpec> expandWorkers(const ExperimentSpec& spec) {
  std::vector<v1::NodeSpec> out;
  const auto& cluster = spec.cluster();
  if (cluster.workers_size() > 0) {
    out.assign(cluster.workers().begin(), cluster.workers().end());
  } else {
    const int count = cluster.has_count() ? cluster.count() : 1;
    for (int i = 0; i < count; ++i) {
      v1::NodeSpec node;
      auto* speed = node.mutable_speed();
      if (cluster.slowdowns_size() > 0) {
        speed->set_slowdown(cluster.slowdowns(i % cluster.slowdowns_size()));
      }
      speed->set_base_iteration_ms(cluster.base_iteration_ms());
      out.push_back(node);
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].name().empty()) out[i].set_name("worker-" + std::to_string(i));
    if (!out[i].speed().has_slowdown()) out[i].mutable_speed()->set_slowdown(1.0);
  }
  return out;
}

double slowdownAt(const v1::SpeedProfile& speed, double t) {
  double slowdown = speed.has_slowdown() ? speed.slowdown() : 1.0;
  for (const auto& change : speed.changes()) {
    if (t >= change.at_s()) slowdown = change.slowdown();
  }
  return slowdown;
}

v1::LinkSpec effectiveLink(const v1::NodeSpec& node, const ExperimentSpec& spec) {
  v1::LinkSpec link = spec.cluster().link();
  if (node.link().has_latency_ms()) link.set_latency_ms(node.link().latency_ms());
  if (node.link().has_mbit()) link.set_mbit(node.link().mbit());
  return link;
}

int workerHostIndex(const ExperimentSpec& spec, std::size_t rank) {
  const auto& launch = spec.launch();
  if (launch.hosts_size() == 0) return -1;
  const auto& placed = launch.placement().workers();
  if (placed.empty()) return static_cast<int>(rank % static_cast<std::size_t>(launch.hosts_size()));
  const std::string& name = placed[static_cast<int>(rank % static_cast<std::size_t>(placed.size()))];
  for (int h = 0; h < launch.hosts_size(); ++h) {
    if (launch.hosts(h).name() == name) return h;
  }
  return -1;
}

}  // namespace dasp
