// SPDX-License-Identifier: MIT
#include "net/client/link_emulation.h"
#include "core/common/durations.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace dasp::net {

LinkEmulation LinkEmulation::of(const v1::LinkSpec& link) {
  LinkEmulation l;
  if (link.has_latency_ms()) l.m_latencyS = link.latency_ms() / 1000.0;
  if (link.has_mbit()) l.m_bitsPerS = link.mbit() * 1e6;
  return l;
}

double LinkEmulation::transferSeconds(std::size_t bytes) const {
  double s = m_latencyS;
  if (m_bitsPerS > 0) s += static_cast<double>(bytes) * 8.0 / m_bitsPerS;
  return s;
}

void LinkEmulation::hold(std::size_t bytes) const {
  const double s = transferSeconds(bytes);
  if (s > 0) std::this_thread::sleep_for(durationFromSeconds(s));
}

namespace {
std::atomic<bool> g_linkCut{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
void onCut(int) { g_linkCut.store(true); }
void onRestore(int) { g_linkCut.store(false); }
}  // namespace

void LinkCut::installSignalHandlers() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the node's own reads and writes go on
  sa.sa_handler = onCut;
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = onRestore;
  sigaction(SIGUSR2, &sa, nullptr);
}

void LinkCut::set(bool cut) { g_linkCut.store(cut); }

bool LinkCut::isCut() { return g_linkCut.load(); }

bool LinkCut::waitUntilUp(Clock::time_point deadline) {
  // A signal handler cannot notify a condition variable: poll, finely enough that the
  // restored link is seen within a few ms.
  while (g_linkCut.load()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace dasp::net
