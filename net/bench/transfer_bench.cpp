// SPDX-License-Identifier: MIT
#include "net/bench/transfer_bench.h"

#include "net/client/ps_client.h"
#include "net/server/ps_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

bool sendAll(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      return false;
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool recvAll(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      return false;
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace

Result<TransferBench> benchTcpEcho(std::int64_t floats, int roundTrips) {
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return Status::error(std::string("tcp echo: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return Status::error(std::string("tcp echo: bind/listen: ") + std::strerror(errno));
  }
  // The echo side reuses one buffer, as a tuned server would.
  std::thread echo([listener, bytes, roundTrips] {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    std::vector<char> buf(bytes);
    for (int i = 0; i < roundTrips; ++i) {
      if (!recvAll(fd, buf.data(), bytes) || !sendAll(fd, buf.data(), bytes)) break;
    }
    ::close(fd);
  });
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Status failure;
  TransferBench r;
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    failure = Status::error(std::string("tcp echo: connect: ") + std::strerror(errno));
  } else {
    std::vector<char> out(bytes, 1), in(bytes);
    // One warm-up round trip so first-touch page faults are not measured.
    bool ok = sendAll(fd, out.data(), bytes) && recvAll(fd, in.data(), bytes);
    const auto t0 = Clock::now();
    for (int i = 1; ok && i < roundTrips; ++i) ok = sendAll(fd, out.data(), bytes) && recvAll(fd, in.data(), bytes);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!ok) failure = Status::error("tcp echo: transfer failed");
  }
  if (fd >= 0) ::close(fd);
  echo.join();
  ::close(listener);
  if (!failure) return failure;
  r.floats = floats;
  r.roundTrips = roundTrips - 1;
  r.gbps = r.seconds > 0 ? 2.0 * static_cast<double>(bytes) * r.roundTrips / r.seconds / 1e9 : 0;
  return r;
}

namespace {

// An in-process server (ASP, a flat model of `floats`) and one worker joined to it over
// `transport`.
struct BenchCluster {
  std::unique_ptr<ParameterServer> server;
  std::unique_ptr<PsClient> client;
};

Result<BenchCluster> startBenchCluster(std::int64_t floats, LocalTransport transport) {
  ServerOptions options;
  auto& spec = options.spec;
  spec.mutable_strategy()->set_name("asp");
  spec.mutable_model()->set_name("flat");
  spec = withDefaults(spec);
  options.workers = 1;
  options.modelName = "flat";
  options.initialParameters.assign(static_cast<std::size_t>(floats), 0.0f);
  auto server = ParameterServer::start(std::move(options));
  if (!server) return server.status();
  BenchCluster cluster;
  cluster.server = std::move(server).value();
  const std::string address = "127.0.0.1:" + std::to_string(cluster.server->port());
  cluster.client = std::make_unique<PsClient>(address, floats, NodeSecurity(), transport);
  PsClient& client = *cluster.client;
  pb::JoinRequest join;
  join.set_role("worker");
  join.set_name("bench");
  join.set_model("flat");
  join.set_parameter_count(floats);
  join.set_requested_rank(0);
  pb::JoinReply joined;
  auto status = client.join(join, joined, 10);
  if (!status.ok()) return Status::error("push/pull bench: join: " + describe(status));
  if (client.transport() != transport) {
    return Status::error(std::string("push/pull bench: asked for ") + nameOf(transport) + ", got " +
                         nameOf(client.transport()));
  }
  return cluster;
}

void computeFor(double seconds) {
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
  }
}

}  // namespace

Result<TransferBench> benchPushPull(std::int64_t floats, int roundTrips, LocalTransport transport) {
  auto cluster = startBenchCluster(floats, transport);
  if (!cluster) return cluster.status();
  PsClient& client = *cluster->client;
  std::vector<float> gradient(static_cast<std::size_t>(floats), 1e-6f);
  pb::PushRequest push;  // reused, as the worker does
  push.set_rank(0);
  pb::PushReply pushReply;
  pb::PullRequest pull;
  pull.set_rank(0);
  pb::PullReply pullReply;
  const float* params = nullptr;
  auto roundTrip = [&]() -> grpc::Status {
    auto s = client.pushGradient(push, gradient.data(), pushReply, 60);
    if (!s.ok()) return s;
    s = client.pullParameters(pull, pullReply, params, 60);
    if (s.ok() && params == nullptr) return grpc::Status(grpc::StatusCode::DATA_LOSS, "short pull");
    return s;
  };
  grpc::Status status = roundTrip();  // warm-up
  const auto t0 = Clock::now();
  for (int i = 1; status.ok() && i < roundTrips; ++i) status = roundTrip();
  TransferBench r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  cluster->server->shutdown(1.0);
  if (!status.ok()) return Status::error("push/pull bench: " + describe(status));
  r.floats = floats;
  r.roundTrips = roundTrips - 1;
  r.gbps = r.seconds > 0 ? 2.0 * static_cast<double>(floats) * sizeof(float) * r.roundTrips / r.seconds / 1e9 : 0;
  return r;
}

Result<CallLatency> benchCallLatency(LocalTransport transport, double busyS, int calls, bool doorbell) {
  constexpr std::int64_t kFloats = 16;
  auto cluster = startBenchCluster(kFloats, transport);
  if (!cluster) return cluster.status();
  PsClient& client = *cluster->client;
  client.useDoorbell(doorbell);
  std::vector<float> gradient(kFloats, 1e-6f);
  pb::PushRequest push;
  push.set_rank(0);
  pb::PullReply reply;
  const float* params = nullptr;
  // Microseconds per call, each after `busy` seconds of computing (not timed).
  auto timeCalls = [&](double busy) -> Result<double> {
    double total = 0;
    for (int i = 0; i < calls; ++i) {
      if (busy > 0) computeFor(busy);
      const auto t0 = Clock::now();
      reply.Clear();
      auto s = client.pushPull(push, gradient.data(), reply, params, 60);
      total += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (!s.ok()) return Status::error("call latency bench: " + describe(s));
      push.set_base_version(reply.version());
    }
    return total / calls;
  };
  CallLatency r;
  r.busyS = busyS;
  auto warm = timeCalls(0);  // warm-up: connections, allocations
  auto backToBack = warm ? timeCalls(0) : warm;
  auto afterBusy = backToBack ? timeCalls(busyS) : backToBack;
  cluster->server->shutdown(1.0);
  if (!afterBusy) return afterBusy.status();
  r.backToBackUs = backToBack.value();
  r.afterBusyUs = afterBusy.value();
  return r;
}

}  // namespace dasp::net
