// SPDX-License-Identifier: MIT
#pragma once
// PayloadLink: a worker's end of the server's payload socket (net/transport/payload_socket.h).
// It connects on first use and again after any call that did not end in a whole reply
// (a deadline, a broken connection, a malformed reply): such a call leaves the stream
// where neither side can find the next message, so the connection is closed and the
// server drops the call.
// Threading: one thread (its PsClient's).

#include "net/transport/payload_socket.h"

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

namespace dasp::net {

class PayloadLink {
 public:
  // `host` as in the server's gRPC address, without brackets (hostOf: a name, an IPv4 or
  // an IPv6 address); `port` the payload socket's, from the worker's JoinReply.
  PayloadLink(std::string host, int port);
  ~PayloadLink();
  PayloadLink(const PayloadLink&) = delete;
  PayloadLink& operator=(const PayloadLink&) = delete;

  // What a call brings back besides its status: the reply's body (a serialized PushReply
  // or PullReply) and how many payload bytes were written to the caller's buffer.
  struct Answer {
    bool reached = false;  // connected: false only when the call never left this process
    std::string body;
    std::size_t payloadBytes = 0;
  };
  // One call: `request` and `payloadBytes` at `payload` (may be 0) up; the reply's payload
  // into `into` (room for `intoBytes`; more is DATA_LOSS). The statuses a gRPC call of the
  // same kind would have: the server's own, DEADLINE_EXCEEDED after `timeoutS`,
  // UNAVAILABLE when it cannot be reached or the connection breaks.
  grpc::Status call(SocketCall kind, const std::string& token, const std::string& request, const void* payload,
                    std::size_t payloadBytes, void* into, std::size_t intoBytes, double timeoutS, Answer& answer);

  const std::string& where() const { return m_where; }

 private:
  grpc::Status connectBy(SocketClock::time_point deadline);
  void disconnect();
  grpc::Status exchange(SocketCall kind, const std::string& token, const std::string& request, const void* payload,
                        std::size_t payloadBytes, void* into, std::size_t intoBytes, SocketClock::time_point deadline,
                        Answer& answer);
  std::string m_host;
  int m_port;
  std::string m_where;  // host:port, for messages
  int m_fd = -1;
};

}  // namespace dasp::net
