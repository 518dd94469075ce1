// SPDX-License-Identifier: MIT
// The node roles the runner starts: `dasp server`, `dasp worker`, `dasp evaluator`.
#include "app/cli/cli.h"
#include "core/common/durations.h"
#include "app/cli/signals.h"

#include "core/data/dataset_loader.h"
#include "ml/node_compute.h"
#include "ml/trainer.h"
#include "net/security/node_security.h"
#include "net/client/link_emulation.h"
#include "net/client/nodes.h"
#include "net/server/ps_server.h"
#include "core/params/shard_layout.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

namespace dasp::cli {
namespace {

// The options every node role shares: its security and, for clients, the server.
struct ClientFlags {
  std::string servers;  // HOST:PORT[,HOST:PORT...]
  std::string name;
  int rank = -1;
  double connectTimeoutS = 30;
  std::optional<std::string> tokenFile, tlsCert;
  std::string recordPath;  // worker: --record
  std::string transport = "tcp";  // worker: --transport
};

struct ServerFlags {
  std::string specPath;
  int workers = 0;
  std::string bind = "127.0.0.1";
  int port = 0;
  int payloadPort = 0;
  std::string name = "server";
  double resumeAtS = -1;
  double resumeWallS = -1;  // the wall clock (Unix seconds) at which --resume-at was the run's time
  std::string checkpointDir;
  bool restore = false, adopt = false, replica = false;
  std::string chainNext;
  std::optional<std::string> tokenFile, tlsCert, tlsKey;
  std::string recordPath;
  int shards = 0;  // 0: the spec's ps.shards
  int shard = 0;
  std::string shardPeers;
  std::string shardReplicas;
};

// "a,b,c" as its non-empty parts.
std::vector<std::string> commaList(const std::string& list) {
  std::vector<std::string> parts;
  for (std::size_t begin = 0; begin <= list.size();) {
    const auto comma = std::min(list.find(',', begin), list.size());
    if (comma > begin) parts.push_back(list.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return parts;
}

void logLine(const std::string& text) {
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

// The run token of a node process: the first line of --token-file PATH, else the
// environment (DASP_RUN_TOKEN, how the runner hands it over: never on a command line).
// nullopt when neither is given.
Result<std::optional<std::string>> givenToken(const std::optional<std::string>& tokenFile) {
  if (tokenFile) {
    auto token = net::readTokenFile(*tokenFile);
    if (!token) return token.status();
    return std::optional<std::string>(std::move(token).value());
  }
  if (const char* env = std::getenv(net::kTokenEnvironment); env != nullptr && *env != '\0') {
    if (auto st = net::checkToken(env, net::kTokenEnvironment); !st) return st;
    return std::optional<std::string>(env);
  }
  return std::optional<std::string>();
}

// A worker's or the evaluator's security: the run token (required) and, with
// --tls-cert PATH, TLS trusting that certificate.
Result<net::NodeSecurity> clientSecurity(const ClientFlags& flags, const std::string& role) {
  net::NodeSecurity security;
  auto token = givenToken(flags.tokenFile);
  if (!token) return Status::error(role + ": " + token.message());
  if (!token.value()) {
    return Status::error(role + ": no run token: set DASP_RUN_TOKEN or pass --token-file PATH (a `dasp server` "
                                "started without one writes its token to a file and names it)");
  }
  security.token = **token;
  if (flags.tlsCert) {
    auto tls = net::loadTls(*flags.tlsCert);
    if (!tls) return Status::error(role + ": " + tls.message());
    security.tls = std::move(tls).value();
  }
  return security;
}

// Probes the server for the spec, loads the data and builds the compute, then joins.
struct NodeSetup {
  net::WorkerOptions options;
  net::JoinInfo join;
  TrainTest data;
};

Result<NodeSetup> prepareNode(const ClientFlags& flags, const std::string& role) {
  NodeSetup s;
  // --server HOST:PORT[,HOST:PORT...]: several addresses are a chain's servers, in order.
  s.options.servers = commaList(flags.servers);
  if (s.options.servers.empty()) return Status::error(role + ": --server HOST:PORT[,HOST:PORT...] is required");
  s.options.server = s.options.servers.front();
  s.options.name = flags.name.empty() ? role : flags.name;
  s.options.requestedRank = flags.rank;
  s.options.connectTimeoutS = flags.connectTimeoutS;
  s.options.recordPath = flags.recordPath;
  s.options.transport = net::localTransportNamed(flags.transport).value_or(net::LocalTransport::Tcp);
  s.options.log = logLine;
  s.options.cancel = stopRequested();
  auto security = clientSecurity(flags, role);
  if (!security) return security.status();
  s.options.security = std::move(security).value();
  auto probe = net::joinServer(s.options, "probe");
  if (!probe) return probe.status();
  s.join = probe.value();
  auto data = loadDataset(s.join.spec.dataset(), s.join.spec.seed());
  if (!data) return data.status();
  s.data = std::move(data).value();
  return s;
}

// The run time that passed since the runner ordered this restart at --resume-at: by the
// wall clock of --resume-wall (the start-up before main, loading the libraries, counts
// too: without it a restarted server's clock lagged the runner's by that much); else, or
// when the two clocks disagree beyond reason (another host's), from this process's start.
double sinceResumeOrdered(const ServerFlags& flags, std::chrono::steady_clock::time_point processStart) {
  const double sinceStart = std::chrono::duration<double>(std::chrono::steady_clock::now() - processStart).count();
  if (flags.resumeWallS < 0) return sinceStart;
  const double since = wallClockSeconds() - flags.resumeWallS;
  return since >= sinceStart && since < sinceStart + 600 ? since : sinceStart;
}

int serverCommand(const ServerFlags& flags, std::chrono::steady_clock::time_point processStart) {
  // SIGTERM and SIGINT stop the server cleanly (waitForStopSignal below). Installed first of
  // all: a handler, not a blocked mask, since a thread LibTorch or gRPC had started with
  // the signals unblocked took a SIGTERM by default, and it killed the server before it
  // could stop and report.
  installStopSignals();
  auto spec = loadSpecFile(flags.specPath);
  if (!spec) return fail(spec.message());
  if (auto st = validateSpec(spec.value()); !st) return fail(flags.specPath + ": " + st.message());
  net::ServerOptions options;
  options.spec = withDefaults(spec.value());
  options.workers = flags.workers;
  options.port = flags.port;
  options.payloadPort = flags.payloadPort;
  options.resumeAtS = flags.resumeAtS;
  options.name = flags.name;
  options.checkpointDir = flags.checkpointDir;
  options.restoreCheckpoint = flags.restore;
  options.adoptFromWorkers = flags.adopt;
  options.replica = flags.replica;
  options.chainNext = flags.chainNext;
  options.recordPath = flags.recordPath;
  // The run's private directory (the launchers set it): the Unix socket and shared memory.
  if (const char* runDir = std::getenv("DASP_RUN_DIR"); runDir != nullptr) options.localDir = runDir;
  options.log = logLine;
  if (options.workers <= 0) options.workers = static_cast<int>(expandWorkers(options.spec).size());
  options.bindAddress = flags.bind;
  // TLS: the flags (the runner's way), else the spec's security section; the files are
  // read and checked here, so a missing or wrong file is named before anything starts.
  std::string certPath = flags.tlsCert.value_or("");
  std::string keyPath = flags.tlsKey.value_or("");
  if (certPath.empty() && keyPath.empty() && options.spec.security().tls()) {
    certPath = options.spec.security().tls_cert();
    keyPath = options.spec.security().tls_key();
  }
  if (!certPath.empty() || !keyPath.empty()) {
    if (certPath.empty()) return fail("server: --tls-key needs --tls-cert (security.tls_cert)");
    if (keyPath.empty()) return fail("server: --tls-cert needs --tls-key (security.tls_key)");
    auto tls = net::loadTls(certPath, keyPath);
    if (!tls) return fail("server: " + tls.message());
    options.security.tls = std::move(tls).value();
  }
  auto token = givenToken(flags.tokenFile);
  if (!token) return fail("server: " + token.message());
  const bool tls = options.security.tls != nullptr;
  auto data = loadDataset(options.spec.dataset(), options.spec.seed());
  if (!data) return fail(data.message());
  auto initial = ml::initialParameters(options.spec, data->train);
  if (!initial) return fail(initial.message());
  const auto parameters = initial->size();
  const auto trainCount = data->train.count;
  options.modelName = options.spec.model().name();
  // A sharded server: this process owns one range of the model (ps.shards, or --shards).
  const int shards = flags.shards > 0 ? flags.shards : options.spec.ps().shards();
  if (flags.shard >= shards) {
    return fail("server: --shard " + std::to_string(flags.shard) + " is not one of the " + std::to_string(shards) +
                " shards (ps.shards, or --shards)");
  }
  auto layout = shardLayout(static_cast<std::int64_t>(parameters), shards);
  if (!layout) return fail("server: " + layout.message());
  options.shard = flags.shard;
  options.layout = layout.value();
  options.shardAddresses = commaList(flags.shardPeers);
  for (const auto& entry : commaList(flags.shardReplicas)) {
    // SHARD=HOST:PORT (an IPv6 host has colons, never '=').
    const auto eq = entry.find('=');
    int shard = -1;
    if (eq != std::string::npos) {
      try {
        shard = std::stoi(entry.substr(0, eq));
      } catch (const std::exception&) {
        shard = -1;
      }
    }
    if (shard < 1 || eq + 1 >= entry.size()) {
      return fail("server: --shard-replicas: '" + entry + "' is not SHARD=HOST:PORT with a shard of 1 or more");
    }
    options.shardReplicas.push_back({shard, entry.substr(eq + 1)});
  }
  if (shards > 1) {
    const auto from = initial->begin() + layout->offset(flags.shard);
    options.initialParameters.assign(from, from + layout->size(flags.shard));
  } else {
    options.initialParameters = std::move(initial).value();
  }

  if (options.resumeAtS >= 0) options.resumeAtS += sinceResumeOrdered(flags, processStart);
  // The run token: given (file, environment), or made here and written to a file that is
  // removed when the server stops.
  std::string tokenFile;
  if (token.value()) {
    options.security.token = **token;
  } else {
    auto fresh = net::newRunToken();
    if (!fresh) return fail("server: " + fresh.message(), 1);
    auto written = net::writeTokenFile(fresh.value());
    if (!written) return fail("server: " + written.message(), 1);
    options.security.token = fresh.value();
    tokenFile = written.value();
  }
  auto server = net::ParameterServer::start(std::move(options));
  if (!server) {
    if (!tokenFile.empty()) ::unlink(tokenFile.c_str());
    return fail(server.message(), 1);
  }
  if (!tokenFile.empty()) {
    std::printf("dasp-server token-file %s (no DASP_RUN_TOKEN or --token-file was given: clients need this "
                "token, e.g. --token-file %s)\n",
                tokenFile.c_str(), tokenFile.c_str());
  }
  // The address clients on this machine dial (loopback for a wildcard bind); the bind
  // address and TLS follow.
  const std::string& bind = flags.bind;
  std::printf("dasp-server listening %s parameters=%zu train_count=%lld bind=%s tls=%s shard=%d/%d\n",
              net::hostPort(net::dialableHost(bind), server.value()->port()).c_str(), parameters,
              static_cast<long long>(trainCount), bind.c_str(), tls ? "on" : "off", flags.shard, shards);
  std::fflush(stdout);
  waitForStopSignal();
  server.value()->shutdown(2.0);
  const auto stats = server.value()->stats();
  if (!tokenFile.empty()) ::unlink(tokenFile.c_str());
  std::printf(
      "dasp-server stopped: version %lld, %lld pushes, %lld applied, %lld dropped, %lld rejected, "
      "%lld unauthorized, gradient guard: %lld refused, %lld clipped, largest norm/median %.2f\n",
      static_cast<long long>(stats.version), static_cast<long long>(stats.pushes),
      static_cast<long long>(stats.applied), static_cast<long long>(stats.dropped),
      static_cast<long long>(stats.rejected), static_cast<long long>(stats.unauthorized),
      static_cast<long long>(stats.guardRefused), static_cast<long long>(stats.guardClipped), stats.guardMaxRatio);
  std::printf("dasp-node-stats bytes_sent=%lld bytes_received=%lld\n", static_cast<long long>(stats.bytesSent),
              static_cast<long long>(stats.bytesReceived));
  // The run ended by the server itself (a shard stopped following shard 0): say why.
  if (const std::string failure = server.value()->failure(); !failure.empty()) return fail("server: " + failure, 1);
  return 0;
}

int workerCommand(const ClientFlags& flags) {
  installStopSignals();
  net::LinkCut::installSignalHandlers();  // the runner's DISCONNECT drill (SIGUSR1 / SIGUSR2)
  auto setup = prepareNode(flags, "worker");
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

int evaluatorCommand(const ClientFlags& flags) {
  installStopSignals();
  auto setup = prepareNode(flags, "evaluator");
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

// --server, --name, --connect-timeout, --token-file and --tls-cert of a worker or the evaluator.
void addClientFlags(CLI::App& command, ClientFlags& flags) {
  command.add_option("--server", flags.servers, "HOST:PORT of the server; several, comma-separated, are a chain's")
      ->required();
  command.add_option("--name", flags.name, "the node's name in the run");
  command.add_option("--connect-timeout", flags.connectTimeoutS, "seconds to wait for the server")
      ->capture_default_str()
      ->check(positiveUpTo(kMaxDurationS));
  command.add_option("--token-file", flags.tokenFile, "the run token's file (else DASP_RUN_TOKEN)");
  command.add_option("--tls-cert", flags.tlsCert, "TLS: trust this certificate (PEM)");
}

}  // namespace

void addNodeCommands(CLI::App& dasp, int& exitCode) {
  // A restarted server continues the run's clock from --resume-at, plus its own start-up.
  const auto processStart = std::chrono::steady_clock::now();
  auto serverFlags = std::make_shared<ServerFlags>();
  auto* server = dasp.add_subcommand("server", "the parameter server of a run (started by `dasp run`)");
  server->footer(
      "The run token comes from --token-file or DASP_RUN_TOKEN; without either the server makes one and\n"
      "writes it to a file (mode 0600) that it names on stdout. TLS: the flags, else the spec's\n"
      "security.tls_cert/tls_key when security.tls is true.");
  server->add_option("--spec", serverFlags->specPath, "the experiment spec (JSON)")->required();
  server->add_option("--workers", serverFlags->workers, "workers (0 = as the spec's cluster)")
      ->capture_default_str()
      ->check(integerIn(0, 1 << 20));
  server->add_option("--bind", serverFlags->bind, "the address to listen on")->capture_default_str();
  server->add_option("--port", serverFlags->port, "the port (0 = any free one)")
      ->capture_default_str()
      ->check(integerIn(0, 65535));
  server->add_option("--payload-port", serverFlags->payloadPort,
                     "the payload socket's port, where TCP workers push and pull (0 = any free one; none with TLS)")
      ->capture_default_str()
      ->check(integerIn(0, 65535));
  server->add_option("--name", serverFlags->name, "the node's name in the run")->capture_default_str();
  server->add_option("--resume-at", serverFlags->resumeAtS, "a restarted server: the run's clock at its start (s)")
      ->check(numberIn(0, kMaxDurationS));
  server->add_option("--resume-wall", serverFlags->resumeWallS,
                     "the wall clock (Unix seconds) at which the run's clock read --resume-at")
      ->check(numberIn(0, 1e11));
  server->add_option("--checkpoint-dir", serverFlags->checkpointDir, "where checkpoints are written");
  server->add_flag("--restore", serverFlags->restore, "start from the newest checkpoint in --checkpoint-dir");
  server->add_flag("--adopt", serverFlags->adopt, "stateless or local recovery: adopt the state the workers hold");
  server->add_flag("--replica", serverFlags->replica, "chain replication: start as a replica, not the head");
  server->add_option("--chain-next", serverFlags->chainNext, "chain replication: forward to HOST:PORT");
  server->add_option("--token-file", serverFlags->tokenFile, "the run token's file (else DASP_RUN_TOKEN)");
  server->add_option("--tls-cert", serverFlags->tlsCert, "TLS: this server's certificate (PEM)");
  server->add_option("--tls-key", serverFlags->tlsKey, "TLS: its private key (PEM)");
  server->add_option("--record", serverFlags->recordPath,
                     "append every state held and every update applied to FILE (an update record)");
  server->add_option("--shards", serverFlags->shards,
                     "a sharded server: its number of shards (0 = the spec's ps.shards)")
      ->capture_default_str()
      ->check(integerIn(0, kMaxShards));
  server->add_option("--shard", serverFlags->shard, "a sharded server: the range this process owns (0 decides)")
      ->capture_default_str()
      ->check(integerIn(0, kMaxShards - 1));
  server->add_option("--shard-peers", serverFlags->shardPeers,
                     "shard 0 of a sharded server: HOST:PORT of shards 1..S-1, in order, comma-separated");
  server->add_option("--shard-replicas", serverFlags->shardReplicas,
                     "shard 0 of a sharded server with chain replication: SHARD=HOST:PORT of each replica of "
                     "shards 1..S-1 (started with --shard SHARD --replica), comma-separated");
  server->callback([serverFlags, processStart, &exitCode] { exitCode = serverCommand(*serverFlags, processStart); });

  auto workerFlags = std::make_shared<ClientFlags>();
  auto* worker = dasp.add_subcommand("worker", "a worker of a run (started by `dasp run`)");
  addClientFlags(*worker, *workerFlags);
  worker->add_option("--rank", workerFlags->rank, "the rank to ask for (-1 = the server assigns one)")
      ->check(integerIn(-1, 1 << 20));
  worker->add_option("--record", workerFlags->recordPath,
                     "append every acknowledged push (and any left in flight by a failed server) to FILE");
  worker->add_option("--transport", workerFlags->transport,
                     "tcp, or for a worker on the server's host: unix (its Unix socket), shm (shared memory and "
                     "the socket), auto (shm, else tcp)")
      ->check(CLI::IsMember({"tcp", "unix", "shm", "auto"}))
      ->capture_default_str();
  worker->callback([workerFlags, &exitCode] { exitCode = workerCommand(*workerFlags); });

  auto evaluatorFlags = std::make_shared<ClientFlags>();
  auto* evaluator = dasp.add_subcommand("evaluator", "the evaluator of a run (started by `dasp run`)");
  addClientFlags(*evaluator, *evaluatorFlags);
  evaluator->callback([evaluatorFlags, &exitCode] { exitCode = evaluatorCommand(*evaluatorFlags); });
}

}  // namespace dasp::cli
