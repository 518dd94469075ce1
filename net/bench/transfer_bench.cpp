// SPDX-License-Identifier: MIT
#include "net/bench/transfer_bench.h"

#include "core/bench/median.h"

#include "net/client/ps_client.h"
#include "net/server/ps_server.h"
#include "net/transport/payload_options.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

// `r` (its seconds timed) with its size and rate: `floats` × 4 bytes each way per round
// trip, both directions counted.
TransferBench withRate(TransferBench r, std::int64_t floats, int roundTrips) {
  r.floats = floats;
  r.roundTrips = roundTrips;
  r.gbps = r.seconds > 0 ? 2.0 * static_cast<double>(floats) * sizeof(float) * roundTrips / r.seconds / 1e9 : 0;
  return r;
}

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
  return withRate(r, floats, roundTrips - 1);
}

namespace {

// The gRPC echo's two calls, made raw as the server's chunked push and pull are.
constexpr char kEchoUploadMethod[] = "/dasp.bench.Echo/Upload";
constexpr char kEchoDownloadMethod[] = "/dasp.bench.Echo/Download";

// One call of the gRPC echo's server. Upload: reads every chunk and answers one empty
// message. Download: after the request, writes the payload back in chunks, each a slice
// over the server's buffer. No byte is copied out of gRPC's slices or into them.
// Threading: gRPC's callback threads, one reaction at a time.
class EchoReactor final : public grpc::ServerGenericBidiReactor {
 public:
  EchoReactor(const grpc::GenericCallbackServerContext& context, const std::vector<char>& payload)
      : m_upload(context.method() == kEchoUploadMethod), m_payload(payload) {
    StartRead(&m_in);
  }
  void OnReadDone(bool ok) override {
    if (m_upload && ok) {
      m_in.Clear();
      StartRead(&m_in);
    } else if (m_upload) {
      grpc::Slice empty;
      m_out = grpc::ByteBuffer(&empty, 1);
      StartWriteAndFinish(&m_out, grpc::WriteOptions(), grpc::Status::OK);
    } else if (ok) {
      writeNext();
    } else {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "echo download without a request"));
    }
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      writeNext();
    } else {
      Finish(grpc::Status::CANCELLED);
    }
  }
  void OnDone() override { delete this; }

 private:
  void writeNext() {
    if (m_offset >= m_payload.size()) {
      Finish(grpc::Status::OK);
      return;
    }
    const std::size_t n = std::min(kPayloadChunkBytes, m_payload.size() - m_offset);
    grpc::Slice slice(m_payload.data() + m_offset, n, grpc::Slice::STATIC_SLICE);
    m_out = grpc::ByteBuffer(&slice, 1);
    m_offset += n;
    StartWrite(&m_out);
  }
  const bool m_upload;
  const std::vector<char>& m_payload;
  std::size_t m_offset = 0;
  grpc::ByteBuffer m_in;
  grpc::ByteBuffer m_out;
};

class EchoService final : public grpc::CallbackGenericService {
 public:
  explicit EchoService(std::size_t bytes) : m_payload(bytes, 1) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    return new EchoReactor(*context, m_payload);
  }

 private:
  const std::vector<char> m_payload;
};

// Sends `bytes` at `data` up the echo in chunks (as the client's chunked push does).
grpc::Status echoUpload(grpc::Channel& channel, const char* data, std::size_t bytes) {
  grpc::ClientContext context;
  setDeadline(context, 60);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod method(kEchoUploadMethod, grpc::internal::RpcMethod::CLIENT_STREAMING);
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(&channel, method, &context, &response));
  bool ok = true;
  for (std::size_t offset = 0; ok && offset < bytes; offset += kPayloadChunkBytes) {
    grpc::Slice slice(data + offset, std::min(kPayloadChunkBytes, bytes - offset), grpc::Slice::STATIC_SLICE);
    ok = writer->Write(grpc::ByteBuffer(&slice, 1));
  }
  writer->WritesDone();
  return writer->Finish();
}

// Receives the server's payload in chunks; DATA_LOSS unless it is `bytes` long.
grpc::Status echoDownload(grpc::Channel& channel, std::size_t bytes) {
  grpc::ClientContext context;
  setDeadline(context, 60);
  grpc::Slice empty;
  const grpc::ByteBuffer request(&empty, 1);
  const grpc::internal::RpcMethod method(kEchoDownloadMethod, grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(&channel, method, &context, request));
  std::size_t received = 0;
  grpc::ByteBuffer chunk;
  while (reader->Read(&chunk)) received += chunk.Length();
  auto status = reader->Finish();
  if (status.ok() && received != bytes) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "echo download of " + std::to_string(received) + " bytes, not " +
                                                         std::to_string(bytes));
  }
  return status;
}

}  // namespace

Result<TransferBench> benchGrpcEcho(std::int64_t floats, int roundTrips) {
  const std::size_t bytes = static_cast<std::size_t>(floats) * sizeof(float);
  EchoService service(bytes);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  sizeServerForPayload(builder, floats);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return Status::error("grpc echo: cannot listen on 127.0.0.1");
  grpc::ChannelArguments args;
  sizeChannelForPayload(args, floats);
  auto channel = openChannel("127.0.0.1:" + std::to_string(port), NodeSecurity(), args);
  const std::vector<char> out(bytes, 1);
  auto roundTrip = [&]() -> grpc::Status {
    auto s = echoUpload(*channel, out.data(), bytes);
    return s.ok() ? echoDownload(*channel, bytes) : s;
  };
  grpc::Status status = roundTrip();  // warm-up: the connection, gRPC's buffers
  const auto t0 = Clock::now();
  for (int i = 1; status.ok() && i < roundTrips; ++i) status = roundTrip();
  TransferBench r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (!status.ok()) return Status::error("grpc echo: " + describe(status));
  return withRate(r, floats, roundTrips - 1);
}

namespace {

// An in-process server (ASP, a flat model of `floats`) and one worker joined to it over
// `transport`.
struct BenchCluster {
  std::unique_ptr<ParameterServer> server;
  std::unique_ptr<PsClient> client;
};

Result<BenchCluster> startBenchCluster(std::int64_t floats, TransferPath path) {
  const LocalTransport transport = path.transport;
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
  client.useDoorbell(path.direct);
  client.usePayloadSocket(path.direct);
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
  if (transport == LocalTransport::Tcp && client.onPayloadSocket() != path.direct) {
    return Status::error(std::string("push/pull bench: the payload socket ") +
                         (path.direct ? "was not offered" : "was used though not asked for"));
  }
  return cluster;
}

void computeFor(double seconds) {
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
  }
}

}  // namespace

std::string nameOf(const TransferPath& path) {
  return std::string(nameOf(path.transport)) + (path.direct ? "" : "_grpc");
}

Result<TransferBench> benchPushPull(std::int64_t floats, int roundTrips, TransferPath path) {
  auto cluster = startBenchCluster(floats, path);
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
  // As a worker does (nodes.cpp): over shared memory the gradient is computed straight into
  // the region's slot, so its push copies nothing; elsewhere it is in the worker's memory.
  if (float* slot = client.gradientSlot()) std::copy(gradient.begin(), gradient.end(), slot);
  auto roundTrip = [&]() -> grpc::Status {
    const float* slot = client.gradientSlot();
    if (!client.chunked()) {
      pullReply.Clear();
      auto s = client.pushPull(push, slot != nullptr ? slot : gradient.data(), pullReply, params, 60);
      if (s.ok() && params == nullptr) return grpc::Status(grpc::StatusCode::DATA_LOSS, "short pull");
      return s;
    }
    auto s = client.pushGradient(push, slot != nullptr ? slot : gradient.data(), pushReply, 60);
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
  return withRate(r, floats, roundTrips - 1);
}

namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

Result<TransferRates> benchTransferRates(std::int64_t floats, int rounds, int roundTrips,
                                         const std::vector<TransferPath>& transports) {
  std::vector<double> tcpEcho, grpcEcho, grpcVsTcp;
  std::vector<std::vector<double>> gbps(transports.size()), vsTcp(transports.size()), vsGrpc(transports.size());
  for (int round = 0; round < rounds; ++round) {
    auto tcp = benchTcpEcho(floats, roundTrips);
    if (!tcp) return tcp.status();
    auto grpc = benchGrpcEcho(floats, roundTrips);
    if (!grpc) return grpc.status();
    tcpEcho.push_back(tcp->gbps);
    grpcEcho.push_back(grpc->gbps);
    grpcVsTcp.push_back(ratio(grpc->gbps, tcp->gbps));
    for (std::size_t t = 0; t < transports.size(); ++t) {
      auto r = benchPushPull(floats, roundTrips, transports[t]);
      if (!r) return r.status();
      gbps[t].push_back(r->gbps);
      vsTcp[t].push_back(ratio(r->gbps, tcp->gbps));
      vsGrpc[t].push_back(ratio(r->gbps, grpc->gbps));
    }
  }
  TransferRates rates;
  rates.rounds = rounds;
  rates.tcpEchoGbps = median(tcpEcho);
  rates.grpcEchoGbps = median(grpcEcho);
  rates.grpcEchoVsTcp = median(grpcVsTcp);
  for (std::size_t t = 0; t < transports.size(); ++t) {
    rates.pushPull.push_back({transports[t], median(gbps[t]), median(vsTcp[t]), median(vsGrpc[t])});
  }
  return rates;
}

Result<CallLatency> benchCallLatency(TransferPath path, double busyS, int calls) {
  constexpr std::int64_t kFloats = 16;
  auto cluster = startBenchCluster(kFloats, path);
  if (!cluster) return cluster.status();
  PsClient& client = *cluster->client;
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
