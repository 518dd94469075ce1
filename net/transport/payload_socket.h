// SPDX-License-Identifier: MIT
#pragma once
// The payload socket: a worker's Push, Pull and PushPull calls over a plain TCP connection
// of their own, beside gRPC, with the payload as raw bytes. Measured (`dasp bench ps`): over
// loopback, gRPC alone moves a model at 0.67–0.72× a raw TCP echo of the same bytes, and a
// push+pull through it at 0.41–0.46×; with the payload read straight into a server's
// buffer and written straight from its snapshot, only the server's own work
// (the guard's norm, the apply) stands beyond the echo. (ps-lite's van, likewise, sends
// its data arrays apart from its Protobuf meta.)
//
// One call at a time per connection, in order:
//   worker: CallHeader, the run token, the serialized request (PushRequest without its
//           gradient, or PullRequest), then `payloadBytes` of gradient (Push, PushPull);
//   server: ReplyHeader, the serialized reply (PushReply or PullReply) or the error's
//           message and details, then `payloadBytes` of parameters (Pull, PushPull).
// A call the worker gives up on (its deadline) closes the connection: a half-read stream
// cannot be resynchronized, and the server then drops the call. Sizes are checked on both
// sides against the bounds here: either end may be broken or hostile.
// Plaintext only: a run with TLS keeps its payload inside gRPC (encrypted).
//
// Threading: free functions on a file descriptor that one thread uses at a time.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/uio.h>

namespace dasp::net {

// ShardLog: shard 0's log of decisions to another shard of a sharded server (its payload:
// a serialized dasp.ps.v1.ShardLog; its reply: the status alone; net/server/shard_log.h).
enum class SocketCall : std::uint32_t { Push = 1, Pull = 2, PushPull = 3, ShardLog = 4 };

struct SocketCallHeader {
  static constexpr std::uint32_t kMagic = 0x44535043;  // "DSPC"
  static constexpr std::uint32_t kTokenMax = 1024;
  static constexpr std::uint32_t kRequestMax = 64 * 1024;
  std::uint32_t magic;
  std::uint32_t call;  // SocketCall
  std::uint32_t tokenBytes;
  std::uint32_t requestBytes;
  std::uint64_t payloadBytes;
};

struct SocketReplyHeader {
  static constexpr std::uint32_t kMagic = 0x44535052;  // "DSPR"
  static constexpr std::uint32_t kPartMax = 64 * 1024;  // body, message, details each
  std::uint32_t magic;
  std::int32_t code;  // a gRPC status code; body is a serialized reply when it is OK
  std::uint32_t bodyBytes;
  std::uint32_t messageBytes;
  std::uint32_t detailBytes;
  std::uint32_t reserved;
  std::uint64_t payloadBytes;
};
static_assert(sizeof(SocketCallHeader) == 24 && sizeof(SocketReplyHeader) == 32, "no padding on the wire");

using SocketClock = std::chrono::steady_clock;

// How one transfer ended.
enum class SocketIo { Done, TimedOut, Closed, Failed };
const char* describe(SocketIo io);

// Sends every byte of `parts` (modified: advanced as they go) by `deadline`.
SocketIo sendParts(int fd, iovec* parts, int count, SocketClock::time_point deadline);
// Receives exactly `n` bytes into `to` by `deadline`; Closed when the peer closed first.
SocketIo receiveExactly(int fd, void* to, std::size_t n, SocketClock::time_point deadline);
// Waits until `fd` has bytes to read or its peer is gone, at most `wait`: false on timeout.
bool waitReadable(int fd, std::chrono::milliseconds wait);
// The peer has closed the connection or it broke (without reading anything).
bool peerGone(int fd);

// TCP_NODELAY on a connected socket: a call's small header and reply go out at once.
// (Sends use MSG_NOSIGNAL: a vanished peer is an error, not a signal.)
void tuneConnection(int fd);

}  // namespace dasp::net
