// SPDX-License-Identifier: MIT
#include "net/transport/doorbell.h"
#include "core/common/durations.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace dasp::net {
namespace {

constexpr int kInternal = 13;  // grpc::StatusCode::INTERNAL (this layer links no gRPC)
// How long a waiting worker spins (yielding) before it sleeps: a reply that comes within
// it costs no wake-up of the worker's own thread. The server's thread, woken by the
// doorbell, answers a push in well under this on an idle host.
constexpr auto kSpin = std::chrono::microseconds(400);
// The longest sleep between two looks at the server's liveness.
constexpr auto kSlice = std::chrono::milliseconds(20);

std::uint32_t* word(std::atomic<std::uint32_t>& a) { return reinterpret_cast<std::uint32_t*>(&a); }

// The futex calls are shared (not FUTEX_PRIVATE): the word is in memory two processes map.
void futexWait(std::atomic<std::uint32_t>& a, std::uint32_t expected, std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  // EAGAIN (the word changed), EINTR and ETIMEDOUT all send the caller back to its check.
  (void)::syscall(SYS_futex, word(a), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWake(std::atomic<std::uint32_t>& a) { (void)::syscall(SYS_futex, word(a), FUTEX_WAKE, 1, nullptr, nullptr, 0); }

}  // namespace

bool Doorbell::post(DoorbellKind kind, std::string_view token, std::string_view request, std::uint32_t& call) {
  if (!fits(token.size(), request.size())) return false;
  m_block->kind = static_cast<std::uint32_t>(kind);
  std::memcpy(m_block->token, token.data(), token.size());
  m_block->tokenBytes = static_cast<std::uint32_t>(token.size());
  std::memcpy(m_block->requestData, request.data(), request.size());
  m_block->requestBytes = static_cast<std::uint32_t>(request.size());
  call = m_block->request.load(std::memory_order_relaxed) + 1;
  m_block->request.store(call, std::memory_order_seq_cst);  // publishes the request
  futexWake(m_block->request);
  return true;
}

Doorbell::Wait Doorbell::awaitReply(std::uint32_t call, Clock::time_point deadline,
                                    const std::function<bool()>& serverAlive) {
  const auto spinUntil = std::min(deadline, Clock::now() + kSpin);
  while (true) {
    const std::uint32_t seen = m_block->reply.load(std::memory_order_acquire);
    if (seen == call) return Wait::Answered;
    if (isClosed()) return Wait::Closed;
    const auto now = Clock::now();
    if (now >= deadline) return Wait::TimedOut;
    if (now < spinUntil) {
      ::sched_yield();  // gives the core to anything else runnable on it (the server's thread)
      continue;
    }
    if (!serverAlive()) {
      // One last look: the answer may have come just before the server went.
      return m_block->reply.load(std::memory_order_acquire) == call ? Wait::Answered : Wait::ServerGone;
    }
    futexWait(m_block->reply, seen, std::min<Clock::duration>(deadline - now, kSlice));
  }
}

Doorbell::Reply Doorbell::reply() const {
  Reply r;
  r.code = m_block->replyCode;
  const std::size_t body = m_block->bodyBytes, message = m_block->messageBytes, details = m_block->detailBytes;
  if (body > DoorbellBlock::kReplyMax || message > DoorbellBlock::kReplyMax - body ||
      details > DoorbellBlock::kReplyMax - body - message) {
    r.code = kInternal;
    r.message = "the server's doorbell reply has sizes beyond its block";
    return r;
  }
  const char* data = m_block->replyData;
  r.body = std::string_view(data, body);
  r.message = std::string_view(data + body, message);
  r.details = std::string_view(data + body + message, details);
  return r;
}

void Doorbell::cancel(std::uint32_t call) {
  m_block->cancelled.store(call, std::memory_order_seq_cst);
  futexWake(m_block->request);  // the server's thread drops the pull it parked for it
}

std::uint32_t Doorbell::waitForRequest(std::uint32_t seen, std::chrono::duration<double> maxWait) {
  const std::uint32_t now = m_block->request.load(std::memory_order_acquire);
  if (now != seen || isClosed()) return now;
  futexWait(m_block->request, seen, durationFromSeconds(maxWait.count()));
  return m_block->request.load(std::memory_order_acquire);
}

bool Doorbell::takeRequest(std::uint32_t call, DoorbellKind& kind, std::string& token, std::string& request) const {
  const std::size_t tokenBytes = m_block->tokenBytes, requestBytes = m_block->requestBytes;
  const std::uint32_t kindWord = m_block->kind;
  if (!fits(tokenBytes, requestBytes) || kindWord > static_cast<std::uint32_t>(DoorbellKind::Pull)) return false;
  kind = static_cast<DoorbellKind>(kindWord);
  token.assign(m_block->token, tokenBytes);
  request.assign(m_block->requestData, requestBytes);
  // Not rewritten meanwhile: the reads above may not move after this read-modify-write
  // (release), the seqlock reader's check without a fence (Boehm, "Can seqlocks get along
  // with programming language memory models?", 2012), which ThreadSanitizer also follows.
  return m_block->request.fetch_add(0, std::memory_order_acq_rel) == call;
}

bool Doorbell::isCurrent(std::uint32_t call) const {
  return m_block->request.load(std::memory_order_seq_cst) == call &&
         m_block->cancelled.load(std::memory_order_seq_cst) != call;
}

void Doorbell::answer(std::uint32_t call, int code, std::string_view body, std::string_view message,
                      std::string_view details) {
  if (!isCurrent(call)) return;
  if (body.size() > DoorbellBlock::kReplyMax) {
    code = kInternal;
    body = {};
    message = "the server's reply does not fit the doorbell block";
    details = {};
  }
  message = message.substr(0, DoorbellBlock::kReplyMax - body.size());
  details = details.size() <= DoorbellBlock::kReplyMax - body.size() - message.size() ? details : std::string_view();
  char* data = m_block->replyData;
  // An empty view may have no data at all (nullptr), which memcpy must not be given.
  auto put = [](char* to, std::string_view part) {
    if (!part.empty()) std::memcpy(to, part.data(), part.size());
  };
  put(data, body);
  put(data + body.size(), message);
  put(data + body.size() + message.size(), details);
  m_block->replyCode = code;
  m_block->bodyBytes = static_cast<std::uint32_t>(body.size());
  m_block->messageBytes = static_cast<std::uint32_t>(message.size());
  m_block->detailBytes = static_cast<std::uint32_t>(details.size());
  m_block->reply.store(call, std::memory_order_release);
  futexWake(m_block->reply);
}

void Doorbell::close() {
  m_block->closed.store(1, std::memory_order_seq_cst);
  futexWake(m_block->request);
  futexWake(m_block->reply);
}

}  // namespace dasp::net
