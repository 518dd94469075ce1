// SPDX-License-Identifier: MIT
#include "app/cli/signals.h"

#include <csignal>

namespace dasp::cli {
namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void onSignal(int) { g_stop.store(true); }
}  // namespace

void installStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const std::atomic<bool>* stopRequested() { return &g_stop; }

}  // namespace dasp::cli
