// SPDX-License-Identifier: MIT
// The payload socket (net/transport/payload_socket.h): a TCP worker's Push, Pull and
// PushPull go through it with their payload as raw bytes and give bitwise what gRPC gives;
// the run token is checked on every call; a malformed call, a wrong token or a truncated
// payload end that connection and nothing else; pushes of one rank on two connections do
// not meet; a refused push keeps the connection; a pull its worker
// gave up on is dropped and the worker's next call connects again; a server with TLS
// offers none; connections beyond the bound are closed.
#include "core/spec/spec.h"
#include "net/client/ps_client.h"
#include "net/server/ps_server.h"
#include "net/transport/payload_socket.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace pb = dasp::ps::v1;
using dasp::net::LocalTransport;
using dasp::net::SocketCall;
constexpr std::int64_t kFloats = 1000;

// A flat model of kFloats parameters, all 1, updated by θ -= 0.5·g (no momentum).
std::unique_ptr<dasp::net::ParameterServer> startServer(const std::string& strategy = "asp", int workers = 1) {
  dasp::net::ServerOptions options;
  options.spec.mutable_strategy()->set_name(strategy);
  options.spec.mutable_model()->set_name("flat");
  options.spec.mutable_optimizer()->set_momentum(0.0);
  options.spec.mutable_optimizer()->set_lr(0.5);
  options.spec = dasp::withDefaults(options.spec);
  options.workers = workers;
  options.modelName = "flat";
  options.initialParameters.assign(kFloats, 1.0f);
  auto server = dasp::net::ParameterServer::start(std::move(options));
  if (!server) qFatal("%s", server.message().c_str());
  return std::move(server).value();
}

std::string addressOf(const dasp::net::ParameterServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

// Joins `client` as worker `rank`; the reply (its payload_port) in `joined`.
grpc::Status joinWorker(dasp::net::PsClient& client, int rank, pb::JoinReply& joined) {
  pb::JoinRequest join;
  join.set_role("worker");
  join.set_model("flat");
  join.set_parameter_count(kFloats);
  join.set_requested_rank(rank);
  return client.join(join, joined, 10);
}

// A server and its worker 0 joined over TCP (the join reply names the payload port).
struct Cluster {
  std::unique_ptr<dasp::net::ParameterServer> server;
  std::unique_ptr<dasp::net::PsClient> client;
  pb::JoinReply joined;
};
Cluster startCluster(const std::string& strategy = "asp", int workers = 1) {
  Cluster c;
  c.server = startServer(strategy, workers);
  c.client = std::make_unique<dasp::net::PsClient>(addressOf(*c.server), kFloats);
  if (!joinWorker(*c.client, 0, c.joined).ok()) qFatal("worker 0 cannot join");
  return c;
}

// A raw connection to the payload socket, to send what no PsClient would.
class RawConnection {
 public:
  explicit RawConnection(int port) : m_fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    m_connected = ::connect(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { ::close(m_fd); }
  bool connected() const { return m_connected; }
  bool send(const void* data, std::size_t n) {
    iovec part{const_cast<void*>(data), n};
    return dasp::net::sendParts(m_fd, &part, 1, deadline()) == dasp::net::SocketIo::Done;
  }
  // A call's header, token and request (the payload is sent apart).
  bool sendCall(SocketCall kind, const std::string& token, const std::string& request, std::uint64_t payloadBytes) {
    const dasp::net::SocketCallHeader header{dasp::net::SocketCallHeader::kMagic, static_cast<std::uint32_t>(kind),
                                             static_cast<std::uint32_t>(token.size()),
                                             static_cast<std::uint32_t>(request.size()), payloadBytes};
    return send(&header, sizeof header) && send(token.data(), token.size()) && send(request.data(), request.size());
  }
  // A reply's header and message (payload bytes discarded); false when the connection ended first.
  bool readReply(dasp::net::SocketReplyHeader& header, std::string& message) {
    if (dasp::net::receiveExactly(m_fd, &header, sizeof header, deadline()) != dasp::net::SocketIo::Done) return false;
    std::vector<char> rest(header.bodyBytes + header.messageBytes + header.detailBytes + header.payloadBytes);
    if (dasp::net::receiveExactly(m_fd, rest.data(), rest.size(), deadline()) != dasp::net::SocketIo::Done) return false;
    message.assign(rest.data() + header.bodyBytes, header.messageBytes);
    return true;
  }
  // The next reply has status `code` and a message containing `text`.
  bool replies(grpc::StatusCode code, const std::string& text) {
    dasp::net::SocketReplyHeader header{};
    std::string message;
    if (!readReply(header, message)) return false;
    if (header.code != static_cast<std::int32_t>(code) || message.find(text) == std::string::npos) {
      qWarning("reply %d: %s", header.code, message.c_str());
      return false;
    }
    return true;
  }
  // The server has closed its side (a read gives end of file, not a byte).
  bool closedByServer() {
    char byte = 0;
    return dasp::net::receiveExactly(m_fd, &byte, 1, deadline()) == dasp::net::SocketIo::Closed;
  }
  void shutdownWrites() { ::shutdown(m_fd, SHUT_WR); }

 private:
  static dasp::net::SocketClock::time_point deadline() {
    return dasp::net::SocketClock::now() + std::chrono::seconds(20);
  }
  int m_fd;
  bool m_connected = false;
};

// Rank `rank` pushes a gradient of ones: the version it made, or -1 when refused.
std::int64_t pushOnes(dasp::net::PsClient& client, int rank) {
  const std::vector<float> gradient(kFloats, 1.0f);
  pb::PushRequest push;
  push.set_rank(rank);
  pb::PushReply pushed;
  const auto status = client.pushGradient(push, gradient.data(), pushed, 10);
  if (!status.ok()) qWarning("push of rank %d: %s", rank, dasp::net::describe(status).c_str());
  return status.ok() ? pushed.version() : -1;
}

std::string pushRequest(int rank) {
  pb::PushRequest push;
  push.set_rank(rank);
  return push.SerializeAsString();
}

}  // namespace

class TestPayloadSocket : public QObject {
  Q_OBJECT

 private slots:
  void pushPullGivesWhatGrpcGives();
  void wrongTokenIsRefusedAndCounted();
  void malformedCallEndsOnlyItsConnection();
  void refusedPushKeepsTheConnection();
  void truncatedPushIsDropped();
  void pushesOfOneRankOnTwoConnectionsDoNotMeet();
  void pullAWorkerGaveUpOnIsDropped();
  void connectionsBeyondTheBoundAreClosed();
  void fixedPortIsUsedAndABusyOneIsAnError();
};

void TestPayloadSocket::pushPullGivesWhatGrpcGives() {
  // The same three pushes (PushPull, Push, then Pull) through the payload socket and through
  // gRPC, each to a server of its own: the parameters must agree bit for bit.
  std::vector<std::vector<float>> after;
  for (bool onSocket : {true, false}) {
    auto server = startServer();
    dasp::net::PsClient client(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Tcp);
    client.usePayloadSocket(onSocket);
    pb::JoinReply joined;
    QVERIFY(joinWorker(client, 0, joined).ok());
    QVERIFY(joined.payload_port() > 0);
    QCOMPARE(client.onPayloadSocket(), onSocket);
    std::vector<float> gradient(kFloats);
    for (std::int64_t i = 0; i < kFloats; ++i) gradient[static_cast<std::size_t>(i)] = 0.001f * static_cast<float>(i % 97);
    pb::PushRequest push;
    push.set_rank(0);
    pb::PullReply pulled;
    const float* params = nullptr;
    auto status = client.pushPull(push, gradient.data(), pulled, params, 10);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QVERIFY(params != nullptr);
    QCOMPARE(pulled.version(), 1LL);
    QCOMPARE(params[1], 1.0f - 0.5f * gradient[1]);
    pb::PushReply pushed;
    push.set_base_version(1);
    status = client.pushGradient(push, gradient.data(), pushed, 10);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QCOMPARE(pushed.version(), 2LL);
    pb::PullRequest pull;
    pull.set_rank(0);
    status = client.pullParameters(pull, pulled, params, 10);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QVERIFY(params != nullptr);
    QCOMPARE(pulled.version(), 2LL);
    after.emplace_back(params, params + kFloats);
    QCOMPARE(client.bytesSent(), 2 * kFloats * 4);
    std::vector<float> held;
    QCOMPARE(server->snapshot(held), 2LL);
    QVERIFY(std::memcmp(held.data(), params, kFloats * sizeof(float)) == 0);
    server->shutdown();
  }
  QVERIFY(std::memcmp(after[0].data(), after[1].data(), kFloats * sizeof(float)) == 0);
}

void TestPayloadSocket::wrongTokenIsRefusedAndCounted() {
  auto c = startCluster();
  RawConnection raw(c.joined.payload_port());
  QVERIFY(raw.connected());
  const std::vector<float> gradient(kFloats, 0.25f);
  QVERIFY(raw.sendCall(SocketCall::Push, "not-the-token", pushRequest(0), kFloats * 4));
  QVERIFY(raw.send(gradient.data(), gradient.size() * sizeof(float)));
  QVERIFY(raw.replies(grpc::StatusCode::PERMISSION_DENIED, "wrong run token"));
  QVERIFY(raw.closedByServer());
  QCOMPARE(c.server->stats().unauthorized, 1LL);
  QCOMPARE(c.server->stats().version, 0LL);  // nothing applied
  c.server->shutdown();
}

void TestPayloadSocket::malformedCallEndsOnlyItsConnection() {
  auto c = startCluster();
  {
    // Not this protocol: an error reply, then the end of the connection.
    RawConnection raw(c.joined.payload_port());
    const std::string garbage(24, 'x');
    QVERIFY(raw.send(garbage.data(), garbage.size()));
    QVERIFY(raw.replies(grpc::StatusCode::INVALID_ARGUMENT, "malformed call header"));
    QVERIFY(raw.closedByServer());
  }
  {
    // A request beyond the bound: the server reads none of it.
    RawConnection raw(c.joined.payload_port());
    QVERIFY(raw.sendCall(SocketCall::Push, dasp::net::NodeSecurity().token, std::string(), 0));
    dasp::net::SocketCallHeader huge{dasp::net::SocketCallHeader::kMagic, 1, 0, 1u << 30, 0};
    QVERIFY(raw.send(&huge, sizeof huge));
    QVERIFY(raw.replies(grpc::StatusCode::INVALID_ARGUMENT, "has 0 bytes"));  // the first call
    QVERIFY(raw.replies(grpc::StatusCode::INVALID_ARGUMENT, "malformed call header"));
    QVERIFY(raw.closedByServer());
  }
  // The server goes on: a worker's push through the socket is applied.
  std::vector<float> gradient(kFloats, 1.0f);
  pb::PushRequest push;
  push.set_rank(0);
  pb::PullReply pulled;
  const float* params = nullptr;
  auto status = c.client->pushPull(push, gradient.data(), pulled, params, 10);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QVERIFY(c.client->onPayloadSocket());
  QCOMPARE(pulled.version(), 1LL);
  c.server->shutdown();
}

void TestPayloadSocket::refusedPushKeepsTheConnection() {
  // A gradient of the wrong size, then one with a NaN: each refused with its reason (the
  // NaN's typed as a PushRefusal), and the next push on the same connection is applied.
  auto c = startCluster();
  RawConnection raw(c.joined.payload_port());
  const std::string token = dasp::net::NodeSecurity().token;
  std::vector<float> gradient(kFloats, 0.5f);
  QVERIFY(raw.sendCall(SocketCall::Push, token, pushRequest(0), (kFloats - 1) * 4));
  QVERIFY(raw.send(gradient.data(), (kFloats - 1) * 4));
  QVERIFY(raw.replies(grpc::StatusCode::INVALID_ARGUMENT, "has 3996 bytes, the model has 4000"));
  gradient[7] = std::numeric_limits<float>::quiet_NaN();
  QVERIFY(raw.sendCall(SocketCall::Push, token, pushRequest(0), kFloats * 4));
  QVERIFY(raw.send(gradient.data(), kFloats * 4));
  QVERIFY(raw.replies(grpc::StatusCode::INVALID_ARGUMENT, "contains NaN or Inf"));
  gradient[7] = 0.5f;
  QVERIFY(raw.sendCall(SocketCall::Push, token, pushRequest(0), kFloats * 4));
  QVERIFY(raw.send(gradient.data(), kFloats * 4));
  QVERIFY(raw.replies(grpc::StatusCode::OK, ""));
  QCOMPARE(c.server->stats().version, 1LL);
  // Through PsClient the NaN's refusal comes typed.
  gradient[3] = std::numeric_limits<float>::infinity();
  pb::PushRequest push;
  push.set_rank(0);
  pb::PushReply pushed;
  const auto status = c.client->pushGradient(push, gradient.data(), pushed, 10);
  QVERIFY(c.client->onPayloadSocket());
  QCOMPARE(dasp::net::pushRefusalOf(status), std::optional(pb::PushRefusal::NON_FINITE));
  c.server->shutdown();
}

void TestPayloadSocket::truncatedPushIsDropped() {
  // Half a gradient, then the worker is gone: the server drops the call, applies nothing,
  // and the rank's next push is applied.
  auto c = startCluster();
  {
    RawConnection raw(c.joined.payload_port());
    const std::vector<float> half(kFloats / 2, 0.5f);
    QVERIFY(raw.sendCall(SocketCall::Push, dasp::net::NodeSecurity().token, pushRequest(0), kFloats * 4));
    QVERIFY(raw.send(half.data(), half.size() * sizeof(float)));
    raw.shutdownWrites();
    QVERIFY(raw.closedByServer());  // the server closes its side once it dropped the call
  }
  QCOMPARE(pushOnes(*c.client, 0), 1LL);
  c.server->shutdown();
}

void TestPayloadSocket::pushesOfOneRankOnTwoConnectionsDoNotMeet() {
  // Another client holding the token pushes for rank 0 on a connection of its own, and
  // stops half-way: the worker's own push of rank 0 is applied meanwhile, and so is the
  // other's once it is complete. Each connection receives into a buffer of its own.
  auto c = startCluster();
  const std::string token = dasp::net::NodeSecurity().token;
  const std::vector<float> other(kFloats, 0.5f);
  RawConnection raw(c.joined.payload_port());
  QVERIFY(raw.sendCall(SocketCall::Push, token, pushRequest(0), kFloats * 4));
  QVERIFY(raw.send(other.data(), kFloats * 2));
  QCOMPARE(pushOnes(*c.client, 0), 1LL);
  QVERIFY(raw.send(reinterpret_cast<const char*>(other.data()) + kFloats * 2, kFloats * 2));
  QVERIFY(raw.replies(grpc::StatusCode::OK, ""));
  std::vector<float> held;
  QCOMPARE(c.server->snapshot(held), 2LL);
  QCOMPARE(held[0], 1.0f - 0.5f * 1.0f - 0.5f * 0.5f);
  c.server->shutdown();
}

void TestPayloadSocket::pullAWorkerGaveUpOnIsDropped() {
  // BSP with two workers: rank 0's pull waits for the start (rank 1 has not joined). Its
  // worker goes (the connection is half-closed); the server must drop the parked pull, not
  // answer it at the start: once rank 1 has joined, one pull's parameters have been sent.
  auto server = startServer("bsp", 2);
  dasp::net::PsClient first(addressOf(*server), kFloats);
  pb::JoinReply joined;
  QVERIFY(joinWorker(first, 0, joined).ok());
  pb::PullRequest pull;
  pull.set_rank(0);
  {
    RawConnection raw(joined.payload_port());
    QVERIFY(raw.sendCall(SocketCall::Pull, dasp::net::NodeSecurity().token, pull.SerializeAsString(), 0));
    raw.shutdownWrites();
    QVERIFY(raw.closedByServer());  // after the server has dropped the pull
  }
  dasp::net::PsClient second(addressOf(*server), kFloats);
  QVERIFY(joinWorker(second, 1, joined).ok());  // the start: parked pulls are released
  pb::PullReply pulled;
  const float* params = nullptr;
  auto status = first.pullParameters(pull, pulled, params, 10);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QVERIFY(params != nullptr);
  QCOMPARE(params[0], 1.0f);
  QCOMPARE(server->stats().bytesSent, kFloats * 4);
  // A pull past its deadline (rank 0 pushed; the round waits for rank 1): the connection is
  // closed, and the next call connects again and is answered once rank 1 has pushed.
  std::vector<float> gradient(kFloats, 1.0f);
  pb::PushRequest push;
  push.set_rank(0);
  pb::PushReply pushed;
  QVERIFY(first.pushGradient(push, gradient.data(), pushed, 10).ok());
  status = first.pullParameters(pull, pulled, params, 0.3);
  QCOMPARE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  push.set_rank(1);
  QVERIFY(second.pushGradient(push, gradient.data(), pushed, 10).ok());
  status = first.pullParameters(pull, pulled, params, 10);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QCOMPARE(pulled.version(), 1LL);
  QVERIFY(first.onPayloadSocket());
  server->shutdown();
}

void TestPayloadSocket::connectionsBeyondTheBoundAreClosed() {
  // One worker: the server keeps at most 2·1 + 4 connections; the next is closed at once.
  auto c = startCluster();
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 6; ++i) held.push_back(std::make_unique<RawConnection>(c.joined.payload_port()));
  // Each held connection is in the server's hands once a call on it is answered.
  for (auto& connection : held) {
    QVERIFY(connection->sendCall(SocketCall::Pull, dasp::net::NodeSecurity().token, std::string(), 0));
    QVERIFY(connection->replies(grpc::StatusCode::OK, ""));
  }
  RawConnection beyond(c.joined.payload_port());
  QVERIFY(beyond.connected());  // the kernel accepts it; the server closes it
  QVERIFY(beyond.closedByServer());
  c.server->shutdown();
}

void TestPayloadSocket::fixedPortIsUsedAndABusyOneIsAnError() {
  // launch.payload_port (ServerOptions.payloadPort): a port another socket listens on makes
  // the start fail, naming it; once free, the server listens there and offers it.
  const int busy = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  QVERIFY(::bind(busy, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(busy, 1) == 0 &&
          ::getsockname(busy, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);
  auto options = [port] {
    dasp::net::ServerOptions o;
    o.spec.mutable_strategy()->set_name("asp");
    o.spec.mutable_model()->set_name("flat");
    o.spec = dasp::withDefaults(o.spec);
    o.workers = 1;
    o.modelName = "flat";
    o.initialParameters.assign(kFloats, 1.0f);
    o.payloadPort = port;
    return o;
  };
  auto refused = dasp::net::ParameterServer::start(options());
  QVERIFY(!refused.isOk());
  QVERIFY2(refused.message().find("payload socket: cannot listen on 127.0.0.1:" + std::to_string(port)) !=
               std::string::npos,
           refused.message().c_str());
  ::close(busy);
  auto server = dasp::net::ParameterServer::start(options());
  QVERIFY2(server.isOk(), server.message().c_str());
  dasp::net::PsClient client(addressOf(*server.value()), kFloats);
  pb::JoinReply joined;
  QVERIFY(joinWorker(client, 0, joined).ok());
  QCOMPARE(joined.payload_port(), port);
  QCOMPARE(pushOnes(client, 0), 1LL);
  QVERIFY(client.onPayloadSocket());
  server.value()->shutdown();
}

QTEST_GUILESS_MAIN(TestPayloadSocket)
#include "tst_payload_socket.moc"
