// SPDX-License-Identifier: MIT
#pragma once
// Doorbell: a worker's PushPull call made through its shared-memory region instead of
// gRPC. Measured (`dasp bench ps`, call_latency_after_compute_us): one 16-float PushPull
// over gRPC costs 0.7–1.4 ms after an iteration of computing, most of it waking gRPC's
// threads on both sides; a futex round trip costs a fraction of that. So the hot call of a
// same-host worker rings a doorbell in the region, and gRPC keeps every other call (join,
// the first pull, pulls after a timeout, reports, control).
//
// The block lives in the region (SharedRegion::doorbell()). One call at a time:
//   worker: post() writes the run token and the serialized request, then bumps `request`
//           and wakes the server's thread; awaitReply() spins briefly, then sleeps on
//           `reply` until it equals the posted number, the deadline passes, the server
//           closes the block, or the server's process is gone (a liveness test the caller
//           passes in). A call it gives up on is cancel()led.
//   server: one thread per region sleeps in waitForRequest(), copies the request out
//           (takeRequest(), which notices a request rewritten meanwhile), and answers it
//           (answer()) — unless the worker has since cancelled it or posted another
//           (isCurrent()), so a late answer never overwrites what the worker reads.
// Both sides validate sizes: the block is shared with a process that may be broken.
//
// Threading: a worker calls the worker functions from its one thread; the server calls
// the server functions from its region's thread, and answer()/isCurrent() from whichever
// thread answers the pull (under the server's lock, one answer at a time).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dasp::net {

// What a call on the doorbell is: a worker's PushPull; or, from a node of a sharded server
// (ps.shards > 1) to shards 1..S-1, the push of its range (answered with a PushReply and
// its block sums) and the pull of it.
enum class DoorbellKind : std::uint32_t { PushPull = 0, Push = 1, Pull = 2 };

struct DoorbellBlock {
  static constexpr std::size_t kTokenMax = 1024;
  // A PushRequest that relays the other shards' block sums (9 bytes per 1,024 values), and
  // a PushReply with a range's, fit for ranges of up to about 7M values; a caller whose
  // request would not fit makes the call through gRPC (fits()).
  static constexpr std::size_t kRequestMax = 64 * 1024;
  static constexpr std::size_t kReplyMax = 64 * 1024;
  // The futex words, each on its own cache line.
  alignas(64) std::atomic<std::uint32_t> request;  // the worker's last posted call number
  alignas(64) std::atomic<std::uint32_t> reply;    // the call number the reply answers
  alignas(64) std::atomic<std::uint32_t> cancelled;  // a call the worker gave up on
  std::atomic<std::uint32_t> closed;                 // the server answers no more
  // The request (written by the worker before `request` is bumped).
  std::uint32_t kind;  // DoorbellKind
  std::uint32_t tokenBytes;
  std::uint32_t requestBytes;
  char token[kTokenMax];
  char requestData[kRequestMax];
  // The reply (written by the server before `reply` is set): a gRPC status code, then its
  // body (a serialized reply when the code is OK), message and details, back to back.
  std::int32_t replyCode;
  std::uint32_t bodyBytes, messageBytes, detailBytes;
  char replyData[kReplyMax];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free && sizeof(std::atomic<std::uint32_t>) == 4,
              "the futex words must be plain 32-bit words");

class Doorbell {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Wait { Answered, TimedOut, Closed, ServerGone };
  struct Reply {
    int code = 0;
    std::string_view body, message, details;
  };

  explicit Doorbell(DoorbellBlock* block) : m_block(block) {}

  // --- the worker --------------------------------------------------------------------------
  // Whether a call of a token and a request of these sizes fits the block.
  static bool fits(std::size_t tokenBytes, std::size_t requestBytes) {
    return tokenBytes <= DoorbellBlock::kTokenMax && requestBytes <= DoorbellBlock::kRequestMax;
  }
  // Posts a call; its number in `call`. False (nothing posted) when the token or request
  // does not fit the block.
  bool post(DoorbellKind kind, std::string_view token, std::string_view request, std::uint32_t& call);
  // Waits for the reply to `call`. `serverAlive` is asked between sleeps (every few ms).
  Wait awaitReply(std::uint32_t call, Clock::time_point deadline, const std::function<bool()>& serverAlive);
  // The reply to the call awaitReply() said Answered (valid until the next post); its
  // parts checked against the block's bounds (a code of INTERNAL when they do not fit).
  Reply reply() const;
  // Gives up on `call`: the server drops its answer (and its parameters) from now on.
  void cancel(std::uint32_t call);

  // --- the server --------------------------------------------------------------------------
  // Sleeps until a call after `seen` is posted, something is cancelled, the block is
  // closed, or `maxWait` passes; returns the last posted call number (== seen: none new).
  std::uint32_t waitForRequest(std::uint32_t seen, std::chrono::duration<double> maxWait);
  // Copies call `call`'s kind, token and request out; false when they are malformed (sizes
  // beyond the block, a kind not in DoorbellKind) or the worker posted again while they
  // were copied.
  bool takeRequest(std::uint32_t call, DoorbellKind& kind, std::string& token, std::string& request) const;
  // The worker still waits for `call`: not cancelled, and nothing posted after it.
  bool isCurrent(std::uint32_t call) const;
  std::uint32_t cancelledCall() const { return m_block->cancelled.load(std::memory_order_acquire); }
  // Answers `call` (if it is still current): a status code and its parts, each cut to
  // what the block holds (a body that does not fit becomes an INTERNAL error).
  void answer(std::uint32_t call, int code, std::string_view body, std::string_view message = {},
              std::string_view details = {});
  // No more answers: a waiting worker sees Closed. Idempotent.
  void close();
  bool isClosed() const { return m_block->closed.load(std::memory_order_acquire) != 0; }

 private:
  DoorbellBlock* m_block;
};

}  // namespace dasp::net
