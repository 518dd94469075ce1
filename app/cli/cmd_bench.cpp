// SPDX-License-Identifier: MIT
// `dasp bench train [--models mlp,lenet] [--batch 64] [--rounds 7] [--seconds 1]
//                   [--device cpu|cuda:N|auto] [--dataset-path DIR] [--json]`
// Benchmarks report ratios against a baseline measured in the same run.
#include "app/cli/cli.h"

#include "core/data/dataset_loader.h"
#include "ml/model.h"
#include "ml/node_compute.h"
#include "ml/bench/train_bench.h"
#include "ml/trainer.h"
#include "core/bench/median.h"
#include "core/bench/memory_bench.h"
#include "core/bench/policy_bench.h"
#include "core/params/parameter_store.h"
#include "net/client/nodes.h"
#include "net/server/local_shards.h"
#include "net/server/ps_server.h"
#include "net/bench/transfer_bench.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <cstdio>
#include <iostream>
#include <memory>

namespace dasp::cli {
namespace {

const char* kFashionMnistPath = "/usr/share/datasets/fashion-mnist";

struct BenchTrainFlags {
  std::vector<std::string> models{"mlp", "lenet"};
  int batch = 64;
  int rounds = 7;
  double seconds = 1.0;
  std::string device = "cpu";
  std::string datasetPath = kFashionMnistPath;
  bool json = false;
};

struct BenchPsFlags {
  std::string datasetPath = kFashionMnistPath;
  bool json = false;
  bool shards = false;       // the sharded server's benchmarks instead
  double linkMbit = 100;     // --shards: each server host's link
};

// The benchmarks' data: the real Fashion-MNIST (or --dataset-path), one intra-op thread.
Result<TrainTest> benchData(const std::string& path) {
  v1::DatasetSpec dataSpec;
  dataSpec.set_name("fashion-mnist");
  dataSpec.set_path(path);
  dataSpec.set_normalize(true);
  ml::configureThreads(1);
  return loadDataset(dataSpec, 1);
}

int benchTrain(const BenchTrainFlags& flags) {
  const auto& models = flags.models;
  const int batch = flags.batch;
  const int rounds = flags.rounds;
  const double seconds = flags.seconds;
  auto data = benchData(flags.datasetPath);
  if (!data) return fail(data.message());

  const bool json = flags.json;
  const std::string& device = flags.device;
  std::vector<ml::TrainBenchCase> cases;
  for (const auto& model : models) {
    if (!json) {
      std::fprintf(stderr, "bench train: %s on %s, batch %d, %d rounds ...\n", model.c_str(), device.c_str(), batch,
                   rounds);
    }
    auto c = ml::benchTrain(model, batch, data.value(), seconds, rounds, 1, device);
    if (!c) return fail(c.message(), 1);
    cases.push_back(c.value());
  }
  double minRatio = cases.empty() ? 0 : cases.front().ratio;
  for (const auto& c : cases) minRatio = std::min(minRatio, c.ratio);
  if (json) {
    std::cout << "{\"bench\":\"train\",\"device\":" << jsonString(cases.empty() ? device : cases.front().device)
              << ",\"batch\":" << batch << ",\"threads\":1,\"cases\":[";
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      std::cout << (i ? "," : "") << "{\"model\":" << jsonString(c.model) << ",\"device\":" << jsonString(c.device)
                << ",\"parameters\":" << c.parameters
                << ",\"trainer_samples_per_s\":" << jsonNumber(c.trainerSamplesPerS)
                << ",\"baseline_samples_per_s\":" << jsonNumber(c.baselineSamplesPerS)
                << ",\"ratio\":" << jsonNumber(c.ratio) << ",\"rounds\":" << c.rounds << "}";
    }
    std::cout << "],\"min_ratio\":" << jsonNumber(minRatio) << "}" << std::endl;
  } else {
    std::printf("%-10s %-8s %12s %14s %14s %7s\n", "model", "device", "parameters", "trainer s/s", "plain s/s",
                "ratio");
    for (const auto& c : cases) {
      std::printf("%-10s %-8s %12lld %14.0f %14.0f %7.3f\n", c.model.c_str(), c.device.c_str(),
                  static_cast<long long>(c.parameters), c.trainerSamplesPerS, c.baselineSamplesPerS, c.ratio);
    }
  }
  return 0;
}

// (a) of one model: an iteration through the server against one of the single-process
// trainer. This machine's speed drifts over seconds far more than the overhead measured,
// so the two are measured in alternating blocks of a few iterations within one run of the
// worker (InterleavedSource), and `ratio` is the median of the rounds' own ratios.
struct ModelRatio {
  std::string model;
  double distributedS = 0, singleS = 0;  // medians over the rounds, seconds per iteration
  double pushPullS = 0;                  // median of the worker's time in PushPull per iteration
  double computeS = 0;                   // median of the worker's time computing per iteration
  double ratio = 0;
  // Pushes the server's gradient guard refused, over all rounds: each is an iteration's
  // compute that applied nothing, so a ratio with refusals is not of the same work.
  std::int64_t refusedPushes = 0;
};

// Warm-up iterations, the same for both sides: LibTorch's first passes allocate.
constexpr int kWarmUp = 10;
// Iterations per block of each side.
constexpr int kBlock = 10;

// The worker's gradient source with blocks of the single-process trainer's steps between
// its blocks of gradients: before every kBlock-th gradient, kBlock trainer steps, timed
// apart. Both sides run on the worker's thread, one at a time, with the server up for both.
// Used by that one thread.
class InterleavedSource final : public GradientSource {
 public:
  InterleavedSource(GradientSource& worker, ml::SingleNodeTrainer& trainer) : m_worker(worker), m_trainer(trainer) {}
  std::int64_t parameterCount() const override { return m_worker.parameterCount(); }
  int batchSize() const override { return m_worker.batchSize(); }
  bool setBatchSize(int batch) override { return m_worker.setBatchSize(batch); }
  Result<double> computeGradient(const float* params, float* gradient) override {
    if (m_calls++ % kBlock == 0 && m_trainerStatus) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBlock && m_trainerStatus; ++i) m_trainerStatus = m_trainer.step().status();
      m_trainerS += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      m_trainerSteps += kBlock;
    }
    return m_worker.computeGradient(params, gradient);
  }
  // Seconds the trainer's steps took, and how many there were.
  double trainerS() const { return m_trainerS; }
  std::int64_t trainerSteps() const { return m_trainerSteps; }
  const Status& trainerStatus() const { return m_trainerStatus; }

 private:
  GradientSource& m_worker;
  ml::SingleNodeTrainer& m_trainer;
  std::int64_t m_calls = 0;
  double m_trainerS = 0;
  std::int64_t m_trainerSteps = 0;
  Status m_trainerStatus;
};

// One round: per iteration, seconds through the server (in all and in its parts) and
// seconds of the single-process trainer.
struct RoundTimes {
  double totalS = 0, pushPullS = 0, computeS = 0, singleS = 0;
  std::int64_t refused = 0;
};

// One worker + server (the default local transport: shared memory) until `iterations`
// updates, interleaved with as many single-process trainer steps. The worker has as many
// warm-up computations as the trainer has warm-up steps. `doorbell` false: its PushPull
// goes through gRPC, not the region's doorbell (what the doorbell saves). `shards` > 1: a
// sharded server of that many shards in this process, the worker over shared memory to
// each.
Result<RoundTimes> interleavedRound(const ExperimentSpec& spec, const TrainTest& data, bool doorbell, int shards) {
  auto trainer = ml::SingleNodeTrainer::create(spec, data);
  if (!trainer) return trainer.status();
  for (int i = 0; i < kWarmUp; ++i) (void)trainer.value()->step();
  net::ServerOptions options;
  options.spec = spec;
  options.workers = 1;
  options.modelName = spec.model().name();
  auto initial = ml::initialParameters(spec, data.train);
  if (!initial) return initial.status();
  options.initialParameters = std::move(initial).value();
  std::vector<float> params = options.initialParameters, scratch(params.size());
  auto servers = net::startLocalShards(options, shards);
  if (!servers) return servers.status();
  net::WorkerOptions worker;
  worker.server = "127.0.0.1:" + std::to_string(servers->front()->port());
  worker.name = "bench-worker";
  worker.requestedRank = 0;
  worker.model = spec.model().name();
  worker.parameters = static_cast<std::int64_t>(params.size());
  worker.transport = net::LocalTransport::Auto;  // what `dasp run` gives a local worker
  auto join = net::joinServer(worker, "worker");
  if (!join) return join.status();
  if (auto* client = dynamic_cast<net::PsClient*>(join->client.get())) {  // one server
    if (client->transport() != net::LocalTransport::Shm) {
      return Status::error("bench ps: the local worker did not get shared memory: " + client->transportFallback());
    }
    client->useDoorbell(doorbell);
  }
  auto source = ml::ShardGradientSource::create(spec, data.train, 0, 1);
  if (!source) return source.status();
  for (int i = 0; i < kWarmUp; ++i) {
    if (auto loss = source.value()->computeGradient(params.data(), scratch.data()); !loss) return loss.status();
  }
  InterleavedSource interleaved(*source.value(), *trainer.value());
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = net::runWorker(worker, join.value(), interleaved);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& server : servers.value()) server->shutdown(1.0);
  if (!stats) return stats.status();
  if (!interleaved.trainerStatus()) return interleaved.trainerStatus();
  const double iterations = static_cast<double>(std::max<std::int64_t>(1, stats->iterations));
  const double trainerS = interleaved.trainerS();
  return RoundTimes{(seconds - trainerS) / iterations, stats->pushPullS / iterations,
                    (stats->computeS - trainerS) / iterations,
                    trainerS / static_cast<double>(std::max<std::int64_t>(1, interleaved.trainerSteps())),
                    stats->refused};
}

Result<ModelRatio> iterationTimes(const TrainTest& data, const std::string& model, int batch, int iterations,
                                  int rounds, bool doorbell = true, int shards = 1) {
  ExperimentSpec spec;
  spec.mutable_model()->set_name(model);
  spec.mutable_dataset()->set_name("fashion-mnist");
  spec.mutable_strategy()->set_name("asp");
  spec.set_batch_size(batch);
  spec.set_device("cpu");
  spec.mutable_stop()->set_max_updates(iterations);
  spec = withDefaults(spec);
  std::vector<double> single, distributed, pushPull, compute, ratios;
  std::int64_t refused = 0;
  for (int round = 0; round < rounds; ++round) {
    auto times = interleavedRound(spec, data, doorbell, shards);
    if (!times) return times.status();
    single.push_back(times->singleS);
    distributed.push_back(times->totalS);
    pushPull.push_back(times->pushPullS);
    compute.push_back(times->computeS);
    refused += times->refused;
    ratios.push_back(times->singleS > 0 ? times->totalS / times->singleS : 0);
  }
  return ModelRatio{model, median(distributed), median(single), median(pushPull), median(compute), median(ratios),
                    refused};
}

// One PushPull call of a 16-float model: over a transport, or over shared memory through
// gRPC instead of the doorbell ("shm_grpc").
struct LatencyCase {
  std::string name;
  net::CallLatency latency;
};

// {"a":1.5,"b":2} from (name, value) pairs.
template <typename Items, typename Name, typename Value>
std::string jsonObject(const Items& items, Name&& name, Value&& value) {
  std::string out = "{";
  for (const auto& item : items) out += (out.size() > 1 ? "," : "") + jsonString(name(item)) + ":" + jsonNumber(value(item));
  return out + "}";
}

void printPs(const std::vector<ModelRatio>& models, const ModelRatio& withoutDoorbell, const net::TransferRates& rates,
             const std::vector<LatencyCase>& latencies,
             const MemoryBench& copy, const MemoryBench& apply, int applyThreads, const MemoryBench& applyOneThread,
             const PolicyBenchResult& ssp,
             const PolicyBenchResult& dasp) {
  for (const auto& m : models) {
    std::printf("(a) %-8s batch 64: %.3f ms per iteration through the server (shm; %.3f ms of it computing, %.3f ms "
                "in PushPull) vs %.3f ms single-process: ratio %.3f\n",
                m.model.c_str(), m.distributedS * 1e3, m.computeS * 1e3, m.pushPullS * 1e3, m.singleS * 1e3, m.ratio);
    if (m.refusedPushes > 0) {
      std::printf("    %-8s %lld pushes refused by the gradient guard: their computing counts, their updates do not\n",
                  m.model.c_str(), static_cast<long long>(m.refusedPushes));
    }
  }
  std::printf("    %-8s without the doorbell (PushPull through gRPC): %.3f ms vs %.3f ms: ratio %.3f\n",
              withoutDoorbell.model.c_str(), withoutDoorbell.distributedS * 1e3, withoutDoorbell.singleS * 1e3,
              withoutDoorbell.ratio);
  std::printf("(b) 10M floats, medians of %d rounds: memcpy %.2f GB/s, TCP echo %.2f GB/s, gRPC echo %.2f GB/s "
              "(%.2f x the TCP echo)\n",
              rates.rounds, copy.gbps, rates.tcpEchoGbps, rates.grpcEchoGbps, rates.grpcEchoVsTcp);
  for (const auto& t : rates.pushPull) {
    std::printf("    push+pull over %-8s %.2f GB/s: %.2f x the TCP echo, %.2f x the gRPC echo\n",
                net::nameOf(t.path).c_str(), t.gbps, t.vsTcpEcho, t.vsGrpcEcho);
  }
  for (const auto& l : latencies) {
    std::printf("    one PushPull call over %-8s (16 floats): %.0f us back to back, %.0f us after %.0f ms of computing\n",
                l.name.c_str(), l.latency.backToBackUs, l.latency.afterBusyUs, l.latency.busyS * 1e3);
  }
  std::printf("(c) apply (fused SGD-momentum, 10M floats): %.2f ms = %.1f GB/s on the server's %d threads; %.2f ms = "
              "%.1f GB/s on one\n",
              apply.seconds * 1e3, apply.gbps, applyThreads, applyOneThread.seconds * 1e3, applyOneThread.gbps);
  std::printf("(d) decisions/s with 1,024 workers: ssp %.3g, dasp %.3g\n", ssp.decisionsPerS, dasp.decisionsPerS);
}

// `dasp bench ps --shards`: (a) a worker's iteration with a server of 2 shards against one
// shard and against the single-process trainer, measured in the same run; (b) link-bound
// runs with 1 and 2 shards on network-namespace hosts (bench_shards.cpp).
int benchPsShards(const BenchPsFlags& flags, const TrainTest& data) {
  const bool json = flags.json;
  if (!json) std::fprintf(stderr, "bench ps --shards: (a) lenet iteration with a server of 1 and of 2 shards ...\n");
  auto one = iterationTimes(data, "lenet", 64, 200, 5, true, 1);
  if (!one) return fail(one.message(), 1);
  auto two = iterationTimes(data, "lenet", 64, 200, 5, true, 2);
  if (!two) return fail(two.message(), 1);
  const double vsOne = one->distributedS > 0 ? two->distributedS / one->distributedS : 0;
  if (!json) {
    std::fprintf(stderr, "bench ps --shards: (b) %d workers on a host of their own, the servers' hosts behind "
                 "%.0f Mbit/s links: 1 shard, then 2 shards on 2 hosts ...\n", kShardBenchWorkers, flags.linkMbit);
  }
  auto links = benchShardLinks(flags.linkMbit);
  if (!links) return fail(links.message(), 1);
  if (!json) {
    std::printf("(a) lenet batch 64, 1 worker over shared memory: %.3f ms per iteration with 2 shards (%.3f ms in "
                "PushPull), %.3f ms with 1 shard (%.3f ms), %.3f ms single-process: ratio %.3f to the single "
                "process, %.3f to one shard\n",
                two->distributedS * 1e3, two->pushPullS * 1e3, one->distributedS * 1e3, one->pushPullS * 1e3,
                two->singleS * 1e3, two->ratio, vsOne);
    if (!links->notMeasured.empty()) {
      std::printf("(b) not measured: %s\n", links->notMeasured.c_str());
    } else {
      std::printf("(b) %d workers, each server host behind %.0f Mbit/s each way: push+pull %.1f MB/s with 1 shard, "
                  "%.1f MB/s with 2 shards on 2 hosts: ratio %.2f; the engine on the same case: %.1f and %.1f "
                  "MB/s, ratio %.2f\n",
                  kShardBenchWorkers, links->linkMbit, links->oneShardMBps, links->twoShardsMBps, links->ratio,
                  links->engineOneMBps, links->engineTwoMBps, links->engineRatio);
    }
    return 0;
  }
  std::cout << "{\"bench\":\"ps_shards\",\"iteration_time_ratio_two_shards\":" << jsonNumber(two->ratio)
            << ",\"iteration_time_ratio_one_shard\":" << jsonNumber(one->ratio)
            << ",\"two_shards_vs_one\":" << jsonNumber(vsOne)
            << ",\"two_shards_iteration_ms\":" << jsonNumber(two->distributedS * 1e3)
            << ",\"one_shard_iteration_ms\":" << jsonNumber(one->distributedS * 1e3)
            << ",\"two_shards_push_pull_ms\":" << jsonNumber(two->pushPullS * 1e3)
            << ",\"single_iteration_ms\":" << jsonNumber(two->singleS * 1e3);
  if (links->notMeasured.empty()) {
    std::cout << ",\"link_mbit\":" << jsonNumber(links->linkMbit)
              << ",\"one_shard_link_mbps\":" << jsonNumber(links->oneShardMBps)
              << ",\"two_shards_link_mbps\":" << jsonNumber(links->twoShardsMBps)
              << ",\"two_shards_vs_one_throughput\":" << jsonNumber(links->ratio)
              << ",\"engine_one_shard_link_mbps\":" << jsonNumber(links->engineOneMBps)
              << ",\"engine_two_shards_link_mbps\":" << jsonNumber(links->engineTwoMBps)
              << ",\"engine_two_shards_vs_one_throughput\":" << jsonNumber(links->engineRatio);
  } else {
    std::cout << ",\"links_not_measured\":" << jsonString(links->notMeasured);
  }
  std::cout << "}" << std::endl;
  return 0;
}

int benchPs(const BenchPsFlags& flags) {
  const bool json = flags.json;
  auto note = [&](const std::string& what) {
    if (!json) std::fprintf(stderr, "bench ps: %s ...\n", what.c_str());
  };
  auto data = benchData(flags.datasetPath);
  if (!data) return fail(data.message());
  if (flags.shards) return benchPsShards(flags, data.value());

  std::vector<ModelRatio> models;
  for (const char* model : {"mlp", "lenet", "ttf-cnn"}) {
    note(std::string("(a) ") + model + " iteration: 1 worker + server (shared memory) vs the single-process trainer");
    auto times = iterationTimes(data.value(), model, 64, 200, 5);
    if (!times) return fail(times.message(), 1);
    models.push_back(times.value());
  }
  note("(a) lenet iteration again, its PushPull through gRPC instead of the doorbell");
  auto plain = iterationTimes(data.value(), "lenet", 64, 200, 5, false);
  if (!plain) return fail(plain.message(), 1);
  const ModelRatio withoutDoorbell = plain.value();
  note("(b) push+pull of 10M floats over tcp (the payload socket, and gRPC), unix and shm vs memcpy, a raw TCP "
       "echo and a gRPC echo of the same bytes");
  const std::int64_t floats = 10'000'000;
  const auto copy = benchMemcpy(floats, 21);
  // TCP first: push_pull_gbps and push_pull_vs_tcp are its figures.
  auto transfers = net::benchTransferRates(floats, 7, 4,
                                           {{net::LocalTransport::Tcp, true},
                                            {net::LocalTransport::Tcp, false},
                                            {net::LocalTransport::Unix, true},
                                            {net::LocalTransport::Shm, true}});
  if (!transfers) return fail(transfers.message(), 1);
  const net::TransferRates& rates = transfers.value();
  // The part of (a)'s overhead that no copy explains: a call's latency, and what waking the
  // server's sleeping threads adds to it after an iteration's worth of computing (lenet's).
  note("(b) one PushPull call per transport: its latency back to back and after computing");
  std::vector<LatencyCase> latencies;
  std::vector<net::TransferPath> latencyPaths;
  for (const auto& t : rates.pushPull) latencyPaths.push_back(t.path);
  latencyPaths.push_back({net::LocalTransport::Shm, false});
  for (const auto& path : latencyPaths) {
    auto latency = net::benchCallLatency(path, models[1].singleS, 200);
    if (!latency) return fail(latency.message(), 1);
    latencies.push_back({net::nameOf(path), latency.value()});
  }
  note("(c) the server's apply step over 10M floats, on its threads and on one");
  const int applyThreads = ParameterStore::serverApplyThreads();
  const auto apply = benchApply(floats, 21, applyThreads);
  const auto applyOneThread = benchApply(floats, 21, 1);
  note("(d) policy decisions per second, 1,024 workers");
  v1::StrategySpec sspSpec, daspSpec;
  sspSpec.set_name("ssp");
  daspSpec.set_name("dasp");
  const auto ssp = benchPolicyDecisions(sspSpec, 1024, 1.0, 1);
  const auto dasp = benchPolicyDecisions(daspSpec, 1024, 1.0, 1);

  const ModelRatio& lenet = models[1];
  const net::TransportRate& tcp = rates.pushPull[0];
  const net::TransportRate* sameHost = nullptr;
  for (const auto& t : rates.pushPull) {
    if (t.path.transport != net::LocalTransport::Tcp && (!sameHost || t.vsTcpEcho > sameHost->vsTcpEcho)) sameHost = &t;
  }
  if (!json) {
    printPs(models, withoutDoorbell, rates, latencies, copy, apply, applyThreads, applyOneThread, ssp, dasp);
    return 0;
  }
  // The fields of earlier versions keep their meaning (lenet; push+pull over TCP, now the
  // median of rounds); the new ones add each transport and model.
  auto transportName = [](const net::TransportRate& t) { return net::nameOf(t.path); };
  std::cout << "{\"bench\":\"ps\",\"iteration_time_ratio\":" << jsonNumber(lenet.ratio)
            << ",\"distributed_iteration_ms\":" << jsonNumber(lenet.distributedS * 1e3)
            << ",\"single_iteration_ms\":" << jsonNumber(lenet.singleS * 1e3)
            << ",\"push_pull_gbps\":" << jsonNumber(tcp.gbps) << ",\"tcp_echo_gbps\":" << jsonNumber(rates.tcpEchoGbps)
            << ",\"push_pull_vs_tcp\":" << jsonNumber(tcp.vsTcpEcho) << ",\"push_pull_floats\":" << floats
            << ",\"transfer_rounds\":" << rates.rounds << ",\"grpc_echo_gbps\":" << jsonNumber(rates.grpcEchoGbps)
            << ",\"grpc_echo_vs_tcp\":" << jsonNumber(rates.grpcEchoVsTcp)
            << ",\"push_pull_vs_grpc_echo\":" << jsonNumber(tcp.vsGrpcEcho)
            << ",\"ssp_decisions_per_s\":" << jsonNumber(ssp.decisionsPerS)
            << ",\"dasp_decisions_per_s\":" << jsonNumber(dasp.decisionsPerS) << ",\"policy_workers\":1024"
            << ",\"memcpy_gbps\":" << jsonNumber(copy.gbps) << ",\"transports\":"
            << jsonObject(rates.pushPull, transportName, [](const net::TransportRate& t) { return t.gbps; })
            << ",\"transports_vs_tcp_echo\":"
            << jsonObject(rates.pushPull, transportName, [](const net::TransportRate& t) { return t.vsTcpEcho; })
            << ",\"same_host_vs_tcp\":" << jsonNumber(sameHost->vsTcpEcho)
            << ",\"same_host_vs_memcpy\":" << jsonNumber(copy.gbps > 0 ? sameHost->gbps / copy.gbps : 0)
            << ",\"iteration_time_ratio_by_model\":"
            << jsonObject(models, [](const ModelRatio& m) { return m.model; }, [](const ModelRatio& m) { return m.ratio; })
            << ",\"apply_gbps\":" << jsonNumber(apply.gbps) << ",\"apply_ms\":" << jsonNumber(apply.seconds * 1e3)
            << ",\"apply_threads\":" << applyThreads
            << ",\"apply_ms_one_thread\":" << jsonNumber(applyOneThread.seconds * 1e3)
            << ",\"push_pull_ms_by_model\":"
            << jsonObject(models, [](const ModelRatio& m) { return m.model; },
                          [](const ModelRatio& m) { return m.pushPullS * 1e3; })
            << ",\"compute_ms_by_model\":"
            << jsonObject(models, [](const ModelRatio& m) { return m.model; },
                          [](const ModelRatio& m) { return m.computeS * 1e3; })
            << ",\"refused_pushes_by_model\":"
            << jsonObject(models, [](const ModelRatio& m) { return m.model; },
                          [](const ModelRatio& m) { return static_cast<double>(m.refusedPushes); })
            << ",\"iteration_time_ratio_without_doorbell\":" << jsonNumber(withoutDoorbell.ratio)
            << ",\"call_latency_us\":"
            << jsonObject(latencies, [](const LatencyCase& l) { return l.name; },
                          [](const LatencyCase& l) { return l.latency.backToBackUs; })
            << ",\"call_latency_after_compute_us\":"
            << jsonObject(latencies, [](const LatencyCase& l) { return l.name; },
                          [](const LatencyCase& l) { return l.latency.afterBusyUs; })
            << ",\"call_latency_compute_ms\":" << jsonNumber(models[1].singleS * 1e3)
            << "}" << std::endl;
  return 0;
}

}  // namespace

void addBenchCommand(CLI::App& dasp, int& exitCode) {
  auto* bench = dasp.add_subcommand("bench", "benchmarks, each a ratio against a baseline measured in the same run");
  bench->require_subcommand(1);

  auto trainFlags = std::make_shared<BenchTrainFlags>();
  auto* train = bench->add_subcommand("train", "trainer throughput vs a plain LibTorch loop");
  train->add_option("--models", trainFlags->models, "the models, e.g. mlp,lenet")
      ->delimiter(',')
      ->capture_default_str();
  train->add_option("--batch", trainFlags->batch, "batch size")->capture_default_str()->check(integerIn(1, 1 << 16));
  train->add_option("--rounds", trainFlags->rounds, "timed rounds (the median is reported)")
      ->capture_default_str()
      ->check(integerIn(1, 1000));
  train->add_option("--seconds", trainFlags->seconds, "seconds per round")
      ->capture_default_str()
      ->check(positiveUpTo(3600));
  train->add_option("--device", trainFlags->device, "cpu, cuda:N or auto")->capture_default_str();
  train->add_option("--dataset-path", trainFlags->datasetPath, "the Fashion-MNIST IDX folder")->capture_default_str();
  train->add_flag("--json", trainFlags->json, "one JSON object per model");
  train->callback([trainFlags, &exitCode] { exitCode = benchTrain(*trainFlags); });

  auto psFlags = std::make_shared<BenchPsFlags>();
  auto* ps = bench->add_subcommand(
      "ps", "the parameter server: iteration vs single process per model, push+pull per transport vs memcpy and TCP echo, "
      "the latency of one call per transport, the apply step, policy decisions/s");
  ps->add_option("--dataset-path", psFlags->datasetPath, "the Fashion-MNIST IDX folder")->capture_default_str();
  ps->add_flag("--json", psFlags->json, "one JSON object");
  ps->add_flag("--shards", psFlags->shards,
               "the sharded server instead: a worker's iteration with 2 shards vs 1, and (root) link-bound runs "
               "with 1 and 2 shards on network-namespace hosts");
  ps->add_option("--link-mbit", psFlags->linkMbit, "--shards: each server host's link, Mbit/s each way")
      ->capture_default_str()
      ->check(positiveUpTo(100000));
  ps->callback([psFlags, &exitCode] { exitCode = benchPs(*psFlags); });

  auto simFlags = std::make_shared<BenchSimFlags>();
  auto* sim = bench->add_subcommand("sim", "the virtual-cluster engine's event rate at scale");
  sim->add_option("--workers", simFlags->workers, "simulated workers")
      ->capture_default_str()
      ->check(integerIn(1, kMaxWorkers));
  sim->add_option("--seconds", simFlags->seconds, "simulated seconds")->capture_default_str()->check(positiveUpTo(1e6));
  sim->add_option("--strategy", simFlags->strategy, "the strategy")->capture_default_str();
  sim->add_flag("--json", simFlags->json, "one JSON object");
  sim->callback([simFlags, &exitCode] { exitCode = benchSim(*simFlags); });
}

}  // namespace dasp::cli
