// SPDX-License-Identifier: MIT
// The node roles the runner starts: `dasp server`, `dasp worker`, `dasp evaluator`.
#include "app/cli/cli.h"
#include "app/cli/signals.h"

#include "core/dataset_loader.h"
#include "core/ml/node_compute.h"
#include "core/ml/trainer.h"
#include "net/nodes.h"
#include "net/ps_server.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace dasp::cli {
namespace {

void logLine(const std::string& text) {
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

// Probes the server for the spec, loads the data and builds the compute, then joins.
struct NodeSetup {
  net::WorkerOptions options;
  net::JoinInfo join;
  TrainTest data;
};

Result<NodeSetup> prepareNode(const Args& args, const std::string& role, const std::string& defaultName) {
  NodeSetup s;
  // --server HOST:PORT[,HOST:PORT...]: several addresses are a chain's servers, in order.
  const std::string list = args.value("--server").value_or("");
  for (std::size_t begin = 0; begin <= list.size();) {
    const auto comma = std::min(list.find(',', begin), list.size());
    if (comma > begin) s.options.servers.push_back(list.substr(begin, comma - begin));
    begin = comma + 1;
  }
  if (s.options.servers.empty()) return Status::error(role + ": --server HOST:PORT[,HOST:PORT...] is required");
  s.options.server = s.options.servers.front();
  s.options.name = args.value("--name").value_or(defaultName);
  try {
    s.options.requestedRank = std::stoi(args.value("--rank").value_or("-1"));
    s.options.connectTimeoutS = std::stod(args.value("--connect-timeout").value_or("30"));
  } catch (const std::exception&) {
    return Status::error(role + ": --rank and --connect-timeout take numbers");
  }
  s.options.log = logLine;
  s.options.cancel = stopRequested();
  auto probe = net::joinServer(s.options, "probe");
  if (!probe) return probe.status();
  s.join = probe.value();
  auto data = loadDataset(s.join.spec.dataset(), s.join.spec.seed());
  if (!data) return data.status();
  s.data = std::move(data).value();
  return s;
}

}  // namespace

int cmdServer(int argc, char** argv) {
  // A restarted server continues the run's clock from --resume-at, plus its own start-up.
  const auto processStart = std::chrono::steady_clock::now();
  Args args(argc, argv, 2, {"--restore", "--adopt", "--replica"});
  if (auto u = args.unknown({"--spec", "--workers", "--bind", "--port", "--name", "--resume-at", "--checkpoint-dir",
                             "--restore", "--adopt", "--replica", "--chain-next"});
      !u.empty()) {
    return fail("server: unknown option " + u.front());
  }
  const auto specPath = args.value("--spec");
  if (!specPath) {
    return fail(
        "usage: dasp server --spec FILE --workers N [--bind ADDR] [--port P] [--name NAME]\n"
        "                   [--checkpoint-dir DIR [--restore]] [--resume-at SECONDS] [--adopt]\n"
        "                   [--replica] [--chain-next HOST:PORT]");
  }
  auto spec = loadSpecFile(*specPath);
  if (!spec) return fail(spec.message());
  if (auto st = validateSpec(spec.value()); !st) return fail(*specPath + ": " + st.message());
  net::ServerOptions options;
  options.spec = withDefaults(spec.value());
  try {
    options.workers = std::stoi(args.value("--workers").value_or("0"));
    options.port = std::stoi(args.value("--port").value_or("0"));
    options.resumeAtS = std::stod(args.value("--resume-at").value_or("-1"));
  } catch (const std::exception&) {
    return fail("server: --workers, --port and --resume-at take numbers");
  }
  options.name = args.value("--name").value_or("server");
  options.checkpointDir = args.value("--checkpoint-dir").value_or("");
  options.restoreCheckpoint = args.has("--restore");
  options.adoptFromWorkers = args.has("--adopt");
  options.replica = args.has("--replica");
  options.chainNext = args.value("--chain-next").value_or("");
  options.log = logLine;
  if (options.workers <= 0) options.workers = static_cast<int>(expandWorkers(options.spec).size());
  options.bindAddress = args.value("--bind").value_or("127.0.0.1");
  auto data = loadDataset(options.spec.dataset(), options.spec.seed());
  if (!data) return fail(data.message());
  auto initial = ml::initialParameters(options.spec, data->train);
  if (!initial) return fail(initial.message());
  const auto parameters = initial->size();
  const auto trainCount = data->train.count;
  options.modelName = options.spec.model().name();
  options.initialParameters = std::move(initial).value();

  // Block the stop signals in every thread (gRPC's inherit the mask) and take them here.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  if (options.resumeAtS >= 0) {
    options.resumeAtS += std::chrono::duration<double>(std::chrono::steady_clock::now() - processStart).count();
  }
  auto server = net::ParameterServer::start(std::move(options));
  if (!server) return fail(server.message(), 1);
  std::printf("dasp-server listening %s:%d parameters=%zu train_count=%lld\n",
              args.value("--bind").value_or("127.0.0.1").c_str(), server.value()->port(), parameters,
              static_cast<long long>(trainCount));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stopSignals, &sig);
  server.value()->shutdown(2.0);
  const auto stats = server.value()->stats();
  std::printf("dasp-server stopped: version %lld, %lld pushes, %lld applied, %lld dropped, %lld rejected\n",
              static_cast<long long>(stats.version), static_cast<long long>(stats.pushes),
              static_cast<long long>(stats.applied), static_cast<long long>(stats.dropped),
              static_cast<long long>(stats.rejected));
  std::printf("dasp-node-stats bytes_sent=%lld bytes_received=%lld\n", static_cast<long long>(stats.bytesSent),
              static_cast<long long>(stats.bytesReceived));
  return 0;
}

int cmdWorker(int argc, char** argv) {
  Args args(argc, argv, 2, {});
  if (auto u = args.unknown({"--server", "--rank", "--name", "--connect-timeout"}); !u.empty()) {
    return fail("worker: unknown option " + u.front());
  }
  installStopSignals();
  auto setup = prepareNode(args, "worker", "worker");
  if (!setup) return fail(setup.message(), 1);
  auto& s = setup.value();
  const int rank = s.options.requestedRank >= 0 ? s.options.requestedRank : 0;
  auto source = ml::ShardGradientSource::create(s.join.spec, s.data.train, rank, s.join.worldSize);
  if (!source) return fail(source.message(), 1);
  s.options.model = s.join.spec.model().name();
  s.options.parameters = source.value()->parameterCount();
  auto join = net::joinServer(s.options, "worker");
  if (!join) return fail(join.message(), 1);
  auto stats = net::runWorker(s.options, join.value(), *source.value());
  if (!stats) return fail(stats.message(), 1);
  std::printf("dasp-node-stats bytes_sent=%lld bytes_received=%lld iterations=%lld overruns=%lld\n",
              static_cast<long long>(stats->bytesSent), static_cast<long long>(stats->bytesReceived),
              static_cast<long long>(stats->iterations), static_cast<long long>(stats->overruns));
  return 0;
}

int cmdEvaluator(int argc, char** argv) {
  Args args(argc, argv, 2, {});
  if (auto u = args.unknown({"--server", "--name", "--connect-timeout"}); !u.empty()) {
    return fail("evaluator: unknown option " + u.front());
  }
  installStopSignals();
  auto setup = prepareNode(args, "evaluator", "evaluator");
  if (!setup) return fail(setup.message(), 1);
  auto& s = setup.value();
  const auto& spec = s.join.spec;
  auto periodic = ml::TestSetEvaluator::create(spec, s.data.train, s.data.test, spec.evaluation().test_subset());
  if (!periodic) return fail(periodic.message(), 1);
  auto final = ml::TestSetEvaluator::create(spec, s.data.train, s.data.test, 0);
  if (!final) return fail(final.message(), 1);
  s.options.model = spec.model().name();
  s.options.parameters = periodic.value()->parameterCount();
  auto join = net::joinServer(s.options, "evaluator");
  if (!join) return fail(join.message(), 1);
  auto stats = net::runEvaluator(s.options, join.value(), *periodic.value(), *final.value());
  if (!stats) return fail(stats.message(), 1);
  std::printf("dasp-node-stats bytes_sent=%lld bytes_received=%lld evaluations=%lld\n",
              static_cast<long long>(stats->bytesSent), static_cast<long long>(stats->bytesReceived),
              static_cast<long long>(stats->iterations));
  return 0;
}

}  // namespace dasp::cli
