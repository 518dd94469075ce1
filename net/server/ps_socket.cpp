// SPDX-License-Identifier: MIT
// The payload socket (net/transport/payload_socket.h; internal: net/server/ps_server_impl.h):
// a listening TCP socket beside gRPC on the server's host, its acceptor thread, and a thread
// per connection that handles each call as the gRPC handlers do: the run token, then
// handlePush, then the pull parked or answered through admitPull. Only the way in and out
// differs.
#include "net/server/ps_reactors.h"
#include "core/common/durations.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dasp::net {
namespace {

// The pieces a pushed gradient is received in: each is added to the norm while in cache.
constexpr std::size_t kReceivePiece = 1u << 20;

SocketClock::time_point after(double seconds) { return deadlineIn<SocketClock>(seconds); }

grpc::Status invalid(const std::string& what) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, what); }

}  // namespace

// --- SocketServer -----------------------------------------------------------------------------

ParameterServer::Impl::SocketServer::SocketServer(Impl* impl, int fd)
    : m_impl(impl), m_fd(fd), m_thread([this] { loop(); }) {}

void ParameterServer::Impl::SocketServer::close() {
  m_closing.store(true, std::memory_order_release);
  ::shutdown(m_fd, SHUT_RD);  // wakes a read or a wait; a reply being sent still goes out
  m_answered.notify_all();
}

void ParameterServer::Impl::SocketServer::finish(double graceS) {
  if (!m_thread.joinable()) return;
  close();
  {
    std::unique_lock<std::mutex> lock(m_endMu);
    m_endCv.wait_for(lock, durationFromSeconds(graceS), [this] { return ended(); });
  }
  ::shutdown(m_fd, SHUT_RDWR);  // a peer that does not read its reply does not hold us
  m_thread.join();
  ::close(m_fd);
}

void ParameterServer::Impl::SocketServer::loop() {
  const auto firstCallBy = after(kFirstCallS);
  while (!m_closing.load(std::memory_order_acquire)) {
    if (!waitReadable(m_fd, std::chrono::milliseconds(1000))) {
      if (!m_authenticated && SocketClock::now() > firstCallBy) break;
      continue;
    }
    SocketCallHeader header{};
    if (receiveExactly(m_fd, &header, sizeof header, after(kCallS)) != SocketIo::Done) break;
    if (!serve(header)) break;
  }
  ::shutdown(m_fd, SHUT_RDWR);
  {
    std::lock_guard<std::mutex> lock(m_impl->mu);
    m_impl->endShardLogLocked(this);  // shard 0 ended the log here, if it came this way
  }
  {
    std::lock_guard<std::mutex> lock(m_endMu);
    m_ended.store(true, std::memory_order_release);
  }
  m_endCv.notify_all();
}

bool ParameterServer::Impl::SocketServer::serve(const SocketCallHeader& header) {
  const auto deadline = after(kCallS);
  const auto kind = static_cast<SocketCall>(header.call);
  if (header.magic != SocketCallHeader::kMagic ||
      (kind != SocketCall::Push && kind != SocketCall::Pull && kind != SocketCall::PushPull &&
       kind != SocketCall::ShardLog) ||
      header.tokenBytes > SocketCallHeader::kTokenMax || header.requestBytes > SocketCallHeader::kRequestMax) {
    (void)reply(invalid("payload socket: a malformed call header (not this protocol, or parts beyond its bounds)"),
                {}, nullptr, 0);
    return false;
  }
  m_token.resize(header.tokenBytes);
  m_request.resize(header.requestBytes);
  if (receiveExactly(m_fd, m_token.data(), m_token.size(), deadline) != SocketIo::Done ||
      receiveExactly(m_fd, m_request.data(), m_request.size(), deadline) != SocketIo::Done) {
    return false;
  }
  if (!tokensEqual(m_token, m_impl->options.security.token)) {
    const auto refused = m_impl->refuseToken("payload socket call", m_token.empty() ? "missing run token"
                                                                                     : "wrong run token",
                                             "a payload socket connection");
    if (drain(header.payloadBytes, deadline)) (void)reply(refused, {}, nullptr, 0);
    return false;
  }
  m_authenticated = true;
  auto refuse = [&](const grpc::Status& status) { return refuseUnread(header, deadline, status); };
  if (kind == SocketCall::ShardLog) return serveShardLog(header, deadline);
  if (!m_impl->isHead) return refuse(m_impl->notHead());
  if (kind == SocketCall::Pull) {
    if (header.payloadBytes != 0) return refuse(invalid("payload socket: a pull with a payload"));
    if (!m_pull.ParseFromString(m_request)) return refuse(invalid("payload socket: a request that is not a PullRequest"));
    const int rank = m_pull.rank();
    if (rank < -1 || rank >= m_impl->options.workers) {
      return refuse(invalid("pull from unknown rank " + std::to_string(rank)));
    }
    if (m_pull.parameters_in_shm()) return refuse(invalid("payload socket: a pull asking for shared memory"));
    return servePull(rank, m_pull.min_version(), m_pull.call_seq());
  }
  return servePush(header, deadline);
}

bool ParameterServer::Impl::SocketServer::servePush(const SocketCallHeader& header, SocketClock::time_point deadline) {
  auto refuse = [&](const grpc::Status& status) { return refuseUnread(header, deadline, status); };
  if (!m_push.ParseFromString(m_request)) return refuse(invalid("payload socket: a request that is not a PushRequest"));
  const int rank = m_push.rank();
  if (rank < 0 || rank >= m_impl->options.workers) return refuse(invalid("push from unknown rank " + std::to_string(rank)));
  const std::size_t bytes = m_impl->gradientBytes();
  if (header.payloadBytes != bytes || m_push.gradient_in_shm() || !m_push.gradient().empty()) {
    return refuse(invalid("payload socket: gradient from worker " + std::to_string(rank) + " has " +
                          std::to_string(header.payloadBytes) + " bytes, the model has " + std::to_string(bytes) +
                          (m_push.gradient().empty() && !m_push.gradient_in_shm()
                               ? std::string()
                               : std::string(" (and the request carries another gradient)"))));
  }
  // The connection's own buffer: a push on another connection (another client holding the
  // token, naming the same rank) never waits for it or spoils it.
  m_gradient.resize(static_cast<std::size_t>(m_impl->store->size()));
  float* buffer = m_gradient.data();
  GradientNormSum norm;
  bool whole = true;
  for (std::size_t offset = 0; whole && offset < bytes; offset += kReceivePiece) {
    const std::size_t n = std::min(kReceivePiece, bytes - offset);
    whole = receiveExactly(m_fd, reinterpret_cast<char*>(buffer) + offset, n, deadline) == SocketIo::Done;
    if (whole) norm.add(buffer + offset / sizeof(float), static_cast<std::int64_t>(n / sizeof(float)));
  }
  m_pushed.Clear();
  if (!whole) return false;
  const grpc::Status status = m_impl->handlePush(m_push, buffer, bytes, &m_pushed, norm.squaredNorm());
  if (static_cast<SocketCall>(header.call) == SocketCall::Push || !status.ok()) {
    m_body.clear();
    if (status.ok()) (void)m_pushed.SerializeToString(&m_body);
    return reply(status, m_body, nullptr, 0);
  }
  return servePull(rank, -1, m_push.call_seq());
}

// Shards 1..S-1: a batch of shard 0's log, carried out before the reply. An error ends the
// log and the connection; so does the connection's end (loop()).
bool ParameterServer::Impl::SocketServer::serveShardLog(const SocketCallHeader& header,
                                                        SocketClock::time_point deadline) {
  if (!m_impl->follower()) {
    return refuseUnread(header, deadline,
                        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                     m_impl->options.name + " is shard 0: it follows nobody"));
  }
  if (header.requestBytes != 0 || header.payloadBytes > kShardLogMax) {
    (void)reply(invalid("payload socket: a shard log of " + std::to_string(header.payloadBytes) +
                        " bytes (at most " + std::to_string(kShardLogMax) + ", and no request)"),
                {}, nullptr, 0);
    return false;
  }
  m_body.resize(static_cast<std::size_t>(header.payloadBytes));
  if (receiveExactly(m_fd, m_body.data(), m_body.size(), deadline) != SocketIo::Done) return false;
  if (!m_log.ParseFromString(m_body)) {
    (void)reply(invalid("payload socket: a shard log that is not a ShardLog"), {}, nullptr, 0);
    return false;
  }
  grpc::Status status;
  {
    std::lock_guard<std::mutex> lock(m_impl->mu);
    status = m_impl->followShardLogLocked(this, m_log);
  }
  m_body.clear();
  return reply(status, m_body, nullptr, 0) && status.ok();
}

bool ParameterServer::Impl::SocketServer::servePull(int rank, std::int64_t minVersion, std::int64_t call) {
  SocketPull pull(rank, m_impl->now(), minVersion, m_answered);
  m_impl->admitPull(&pull, call);
  if (!awaitAnswer(pull)) return false;
  m_body.clear();
  if (pull.status().ok()) (void)pull.header().SerializeToString(&m_body);
  return reply(pull.status(), m_body, pull.parameters(), pull.bytes());
}

bool ParameterServer::Impl::SocketServer::awaitAnswer(SocketPull& pull) {
  {
    std::unique_lock<std::mutex> lock(m_impl->mu);
    for (;;) {
      if (pull.finished) return true;
      if (m_closing.load(std::memory_order_acquire) || peerGone(m_fd)) break;
      m_answered.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  m_impl->cancelPull(&pull);  // under the lock: also waits out an answer in progress
  return false;
}

bool ParameterServer::Impl::SocketServer::refuseUnread(const SocketCallHeader& header, SocketClock::time_point deadline,
                                                        const grpc::Status& status) {
  return drain(header.payloadBytes, deadline) && reply(status, {}, nullptr, 0);
}

bool ParameterServer::Impl::SocketServer::drain(std::uint64_t n, SocketClock::time_point deadline) {
  // A sane worker sends at most a model's gradient.
  if (n > m_impl->gradientBytes()) return false;
  char scratch[64 * 1024];
  while (n > 0) {
    const std::size_t k = std::min<std::uint64_t>(n, sizeof scratch);
    if (receiveExactly(m_fd, scratch, k, deadline) != SocketIo::Done) return false;
    n -= k;
  }
  return true;
}

bool ParameterServer::Impl::SocketServer::reply(const grpc::Status& status, const std::string& body,
                                                 const float* payload, std::size_t bytes) {
  const std::size_t max = SocketReplyHeader::kPartMax;
  const std::string& message = status.error_message();
  const std::string& details = status.error_details();
  const bool ok = status.ok();
  SocketReplyHeader header{SocketReplyHeader::kMagic,
                           static_cast<std::int32_t>(status.error_code()),
                           static_cast<std::uint32_t>(ok ? std::min(body.size(), max) : 0),
                           static_cast<std::uint32_t>(std::min(message.size(), max)),
                           static_cast<std::uint32_t>(details.size() <= max ? details.size() : 0),
                           0,
                           ok && payload != nullptr ? bytes : 0};
  if (ok && body.size() > max) {
    return reply(grpc::Status(grpc::StatusCode::INTERNAL, "payload socket: a reply beyond its bounds"), {}, nullptr, 0);
  }
  iovec parts[5] = {{&header, sizeof header},
                    {const_cast<char*>(body.data()), header.bodyBytes},
                    {const_cast<char*>(message.data()), header.messageBytes},
                    {const_cast<char*>(details.data()), header.detailBytes},
                    {const_cast<float*>(payload), static_cast<std::size_t>(header.payloadBytes)}};
  return sendParts(m_fd, parts, 5, after(kCallS)) == SocketIo::Done;
}

// --- the listener and its acceptor --------------------------------------------------------------

Status ParameterServer::Impl::openPayloadSocket() {
  if (options.security.tls) return Status::ok();  // the payload stays inside gRPC's TLS
  const std::string host = hostOf(options.bindAddress);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options.payloadPort);
  if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status::error(options.name + ": payload socket: cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && socketListener < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // A restarted server takes its fixed port again while the old connections linger in
    // TIME_WAIT (as gRPC's own listener does); a port another process listens on still fails.
    const int one = 1;
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    socketPort = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    socketListener = fd;
  }
  ::freeaddrinfo(found);
  if (socketListener < 0) {
    return Status::error(options.name + ": payload socket: cannot listen on " + hostPort(host, options.payloadPort) +
                         ": " + why);
  }
  if (::pipe2(socketWake, O_CLOEXEC) != 0) {
    ::close(socketListener);
    socketListener = -1;
    return Status::error(options.name + ": payload socket: " + std::strerror(errno));
  }
  socketAcceptor = std::thread([this] { acceptLoop(); });
  say("payload socket listening on " + hostPort(host, socketPort));
  return Status::ok();
}

void ParameterServer::Impl::acceptLoop() {
  for (;;) {
    pollfd p[2] = {{socketListener, POLLIN, 0}, {socketWake[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    const int fd = ::accept4(socketListener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    tuneConnection(fd);
    std::lock_guard<std::mutex> lock(mu);
    // Connections that have ended are finished here (at once: their threads are done).
    socketServers.erase(std::remove_if(socketServers.begin(), socketServers.end(),
                                       [](const std::unique_ptr<SocketServer>& s) { return s->ended(); }),
                        socketServers.end());
    if (shuttingDown || socketServers.size() >= maxSocketConnections()) {
      ::close(fd);
      continue;
    }
    socketServers.push_back(std::make_unique<SocketServer>(this, fd));
  }
}

void ParameterServer::Impl::closePayloadSocket(double graceS) {
  if (socketListener < 0) return;
  const char wake = 1;
  (void)::write(socketWake[1], &wake, 1);
  if (socketAcceptor.joinable()) socketAcceptor.join();
  std::vector<std::unique_ptr<SocketServer>> connections;
  {
    std::lock_guard<std::mutex> lock(mu);
    connections = std::move(socketServers);
    socketServers.clear();
    for (auto& c : connections) c->close();
  }
  for (auto& c : connections) c->finish(graceS);
  ::close(socketListener);
  ::close(socketWake[0]);
  ::close(socketWake[1]);
  socketListener = -1;
}

}  // namespace dasp::net
