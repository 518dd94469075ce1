// SPDX-License-Identifier: MIT
#include "net/client/payload_link.h"
#include "core/common/durations.h"

#include "net/security/node_security.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dasp::net {
namespace {

constexpr std::chrono::seconds kConnectWait(3);

grpc::Status unavailable(const std::string& where, const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "payload socket " + where + ": " + why);
}

// The status of a transfer that did not finish.
grpc::Status statusOf(SocketIo io, const std::string& where, const char* what) {
  if (io == SocketIo::TimedOut) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        std::string("payload socket ") + where + ": no " + what + " within the deadline");
  }
  return unavailable(where, std::string(describe(io)) + " during the " + what);
}

}  // namespace

PayloadLink::PayloadLink(std::string host, int port)
    : m_host(std::move(host)), m_port(port), m_where(hostPort(m_host, port)) {}

PayloadLink::~PayloadLink() { disconnect(); }

void PayloadLink::disconnect() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

grpc::Status PayloadLink::connectBy(SocketClock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(m_host.c_str(), std::to_string(m_port).c_str(), &hints, &found); rc != 0) {
    return unavailable(m_where, std::string("cannot resolve the host: ") + ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && m_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SocketClock::now()).count();
      rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left))) == 1 ? 0 : -1;
      int error = rc == 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof error;
      if (rc == 0) (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
      errno = error;
      rc = error == 0 ? 0 : -1;
    }
    if (rc != 0) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    tuneConnection(fd);
    m_fd = fd;
  }
  ::freeaddrinfo(found);
  if (m_fd < 0) return unavailable(m_where, "cannot connect: " + why);
  return grpc::Status::OK;
}

grpc::Status PayloadLink::call(SocketCall kind, const std::string& token, const std::string& request,
                               const void* payload, std::size_t payloadBytes, void* into, std::size_t intoBytes,
                               double timeoutS, Answer& answer) {
  const auto deadline = deadlineIn<SocketClock>(timeoutS);
  // A connection the server closed meanwhile (it refused a call, it restarted) is made anew.
  answer.reached = false;
  if (m_fd >= 0 && peerGone(m_fd)) disconnect();
  if (m_fd < 0) {
    // A server's host answers a connect within milliseconds; one that does not (a firewall
    // that drops the port) should not hold the call for its whole deadline.
    if (auto status = connectBy(std::min(deadline, SocketClock::now() + kConnectWait)); !status.ok()) return status;
  }
  answer.reached = true;
  auto status = exchange(kind, token, request, payload, payloadBytes, into, intoBytes, deadline, answer);
  // Only a whole reply leaves the stream where the next call can start.
  if (!status.ok() && (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                       status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       status.error_code() == grpc::StatusCode::DATA_LOSS)) {
    disconnect();
  }
  return status;
}

grpc::Status PayloadLink::exchange(SocketCall kind, const std::string& token, const std::string& request,
                                   const void* payload, std::size_t payloadBytes, void* into, std::size_t intoBytes,
                                   SocketClock::time_point deadline, Answer& answer) {
  SocketCallHeader header{SocketCallHeader::kMagic, static_cast<std::uint32_t>(kind),
                          static_cast<std::uint32_t>(token.size()), static_cast<std::uint32_t>(request.size()),
                          payloadBytes};
  iovec parts[4] = {{&header, sizeof header},
                    {const_cast<char*>(token.data()), token.size()},
                    {const_cast<char*>(request.data()), request.size()},
                    {const_cast<void*>(payload), payloadBytes}};
  if (auto io = sendParts(m_fd, parts, 4, deadline); io != SocketIo::Done) return statusOf(io, m_where, "send");
  SocketReplyHeader reply{};
  if (auto io = receiveExactly(m_fd, &reply, sizeof reply, deadline); io != SocketIo::Done) {
    return statusOf(io, m_where, "reply");
  }
  const auto max = SocketReplyHeader::kPartMax;
  if (reply.magic != SocketReplyHeader::kMagic || reply.bodyBytes > max || reply.messageBytes > max ||
      reply.detailBytes > max || reply.payloadBytes > intoBytes) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS,
                        "payload socket " + m_where + ": a malformed reply (" +
                            (reply.magic != SocketReplyHeader::kMagic
                                 ? std::string("not a reply header")
                                 : "parts of " + std::to_string(reply.bodyBytes) + ", " +
                                       std::to_string(reply.messageBytes) + ", " + std::to_string(reply.detailBytes) +
                                       " bytes and " + std::to_string(reply.payloadBytes) + " payload bytes, room for " +
                                       std::to_string(intoBytes)) +
                            ")");
  }
  std::string message, details;
  answer.body.resize(reply.bodyBytes);
  message.resize(reply.messageBytes);
  details.resize(reply.detailBytes);
  for (std::string* part : {&answer.body, &message, &details}) {
    if (auto io = receiveExactly(m_fd, part->data(), part->size(), deadline); io != SocketIo::Done) {
      return statusOf(io, m_where, "reply");
    }
  }
  if (auto io = receiveExactly(m_fd, into, reply.payloadBytes, deadline); io != SocketIo::Done) {
    return statusOf(io, m_where, "parameters");
  }
  answer.payloadBytes = reply.payloadBytes;
  if (reply.code != 0) {
    const int code = reply.code > 0 && reply.code <= 16 ? reply.code : static_cast<int>(grpc::StatusCode::UNKNOWN);
    return grpc::Status(static_cast<grpc::StatusCode>(code), message, details);
  }
  return grpc::Status::OK;
}

}  // namespace dasp::net
