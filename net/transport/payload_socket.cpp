// SPDX-License-Identifier: MIT
#include "net/transport/payload_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace dasp::net {
namespace {

// Milliseconds left until `deadline` for poll(), at least 0 and at most a second (so a
// long wait still notices the time passing on a clock poll() does not follow).
int pollMs(SocketClock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SocketClock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1000));
}

// Waits for `events` on `fd` until `deadline`: Done when ready, else how it ended.
SocketIo awaitReady(int fd, short events, SocketClock::time_point deadline) {
  for (;;) {
    if (SocketClock::now() >= deadline) return SocketIo::TimedOut;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, pollMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SocketIo::Failed;
    if (n == 0) continue;
    if ((p.revents & events) != 0) return SocketIo::Done;
    if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return SocketIo::Closed;
  }
}

}  // namespace

const char* describe(SocketIo io) {
  switch (io) {
    case SocketIo::Done: return "done";
    case SocketIo::TimedOut: return "timed out";
    case SocketIo::Closed: return "connection closed by the peer";
    case SocketIo::Failed: return "connection failed";
  }
  return "failed";
}

SocketIo sendParts(int fd, iovec* parts, int count, SocketClock::time_point deadline) {
  while (count > 0) {
    if (parts->iov_len == 0) {
      ++parts;
      --count;
      continue;
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<std::size_t>(std::min(count, 64));
    const ssize_t k = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (auto ready = awaitReady(fd, POLLOUT, deadline); ready != SocketIo::Done) return ready;
        continue;
      }
      return errno == EPIPE || errno == ECONNRESET ? SocketIo::Closed : SocketIo::Failed;
    }
    auto sent = static_cast<std::size_t>(k);
    while (count > 0 && sent >= parts->iov_len) {
      sent -= parts->iov_len;
      ++parts;
      --count;
    }
    if (count > 0) {
      parts->iov_base = static_cast<char*>(parts->iov_base) + sent;
      parts->iov_len -= sent;
    }
  }
  return SocketIo::Done;
}

SocketIo receiveExactly(int fd, void* to, std::size_t n, SocketClock::time_point deadline) {
  auto* p = static_cast<char*>(to);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k == 0) return SocketIo::Closed;
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (auto ready = awaitReady(fd, POLLIN, deadline); ready != SocketIo::Done) return ready;
        continue;
      }
      return errno == ECONNRESET ? SocketIo::Closed : SocketIo::Failed;
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return SocketIo::Done;
}

bool waitReadable(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  int n = 0;
  do {
    n = ::poll(&p, 1, static_cast<int>(wait.count()));
  } while (n < 0 && errno == EINTR);
  return n != 0;
}

bool peerGone(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void tuneConnection(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace dasp::net
