// SPDX-License-Identifier: MIT
// `dasp bench ps --shards` (b): what a second shard buys where the servers' links are the
// bottleneck. Two `dasp run`s of the same spec on network-namespace hosts (NetnsHosts):
// the servers' hosts each behind a link limited with `tc tbf`, the workers' host
// unshaped; one run with 1 shard, one with 2 shards on two hosts. Their aggregate
// push+pull throughput (every worker's bytes both ways over the run's seconds) is
// compared in the same invocation, and with the same case on the virtual-cluster engine.
#include "app/cli/cli.h"
#include "app/cli/signals.h"

#include "core/spec/spec.h"
#include "core/store/run_store.h"
#include "net/bench/netns_hosts.h"
#include "net/runner/runner.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace dasp::cli {
namespace {

constexpr int kBenchSubnet = 232;  // 10.232.0.0/24 (the namespace test takes 10.231)

// A link-bound run: 4 workers of an MLP of about 1.06 M parameters (4.2 MB each way per
// update) with little compute, ASP, 10 s; a learning rate low enough that no run diverges
// (a diverged run ends early, and this measures bytes, not training).
ExperimentSpec linkBoundSpec(const net::NetnsHosts& hosts, int shards) {
  ExperimentSpec spec;
  spec.set_name("bench-shards-" + std::to_string(shards));
  spec.mutable_model()->set_name("mlp");
  spec.mutable_model()->set_hidden(24576);
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_batch_size(32);
  spec.mutable_optimizer()->set_lr(0.001);
  spec.mutable_strategy()->set_name("asp");
  spec.mutable_cluster()->set_count(kShardBenchWorkers);
  spec.mutable_stop()->set_max_seconds(10);
  spec.mutable_evaluation()->set_every_s(5);
  spec.mutable_ps()->set_shards(shards);
  auto* launch = spec.mutable_launch();
  launch->set_launcher(v1::LaunchSpec::LOCAL);
  for (const char* name : {"s0", "s1", "w"}) {
    auto* h = launch->add_hosts();
    h->set_name(name);
    h->set_address(hosts.address(name));
    h->set_netns(hosts.netns(name));
  }
  launch->mutable_placement()->add_servers("s0");
  if (shards > 1) launch->mutable_placement()->add_servers("s1");
  launch->mutable_placement()->set_evaluator("w");
  launch->mutable_placement()->add_workers("w");
  return withDefaults(spec);
}

// The same case on the virtual-cluster engine: each shard's link `mbit` (sim.server_link:
// one push or pull at a time), the workers' links unshaped, the same MLP's gradients.
ExperimentSpec engineSpec(ExperimentSpec spec, double mbit) {
  spec.clear_launch();
  spec.set_engine("sim");
  spec.mutable_sim()->mutable_server_link()->set_mbit(mbit);
  return spec;
}

// Every worker's bytes, both ways, per second of the run (on the engine: of virtual time).
Result<double> throughputMBps(const ExperimentSpec& spec, const std::string& db) {
  net::RunnerOptions options;
  options.daspBinary = selfPath();
  options.dbPath = db;
  options.cancel = stopRequested();
  auto run = spec.engine() == "sim" ? runOnSimulator(spec, options) : net::runExperiment(spec, options);
  if (!run) return run.status();
  if (run->status != "completed" || run->seconds <= 0) {
    return Status::error(spec.name() + ": the run " + run->status + " (" + run->stopReason + ")");
  }
  auto store = RunStore::open(db);
  if (!store) return store.status();
  auto nodes = store.value()->nodes(run->runId);
  if (!nodes) return nodes.status();
  double bytes = 0;
  for (const auto& n : nodes.value()) {
    if (n.role == "worker") bytes += static_cast<double>(n.bytesSent + n.bytesReceived);
  }
  return bytes / run->seconds / 1e6;
}

}  // namespace

Result<ShardLinkRates> benchShardLinks(double mbit) {
  ShardLinkRates rates;
  rates.linkMbit = mbit;
  auto hosts = net::NetnsHosts::create("dbs", kBenchSubnet, {{"s0", mbit}, {"s1", mbit}, {"w", 0}});
  if (!hosts) {
    rates.notMeasured = hosts.message();
    return rates;
  }
  char dir[] = "/tmp/dasp-bench-shards-XXXXXX";
  if (mkdtemp(dir) == nullptr) return Status::error("bench ps --shards: cannot create a temporary directory");
  const std::string db = std::string(dir) + "/runs.sqlite";
  std::vector<double> measured;  // real 1, real 2, engine 1, engine 2
  Status status = Status::ok();  // the first failure
  for (const bool engine : {false, true}) {
    for (const int shards : {1, 2}) {
      const ExperimentSpec real = linkBoundSpec(*hosts.value(), shards);
      auto mbps = status ? throughputMBps(engine ? engineSpec(real, mbit) : real, db) : Result<double>(status);
      if (!mbps) status = mbps.status();
      measured.push_back(mbps ? mbps.value() : 0);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!status) return status;
  auto ratio = [](double one, double two) { return one > 0 ? two / one : 0; };
  rates.oneShardMBps = measured[0];
  rates.twoShardsMBps = measured[1];
  rates.ratio = ratio(measured[0], measured[1]);
  rates.engineOneMBps = measured[2];
  rates.engineTwoMBps = measured[3];
  rates.engineRatio = ratio(measured[2], measured[3]);
  return rates;
}

}  // namespace dasp::cli
