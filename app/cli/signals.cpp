// SPDX-License-Identifier: MIT
#include "app/cli/signals.h"

#include <cerrno>
#include <csignal>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace dasp::cli {
namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");
// The self-pipe waitForStopSignal() reads: the handler writes a byte (async-signal-safe).
int g_wake[2] = {-1, -1};

void onSignal(int) {
  const int saved = errno;
  g_stop.store(true);
  if (g_wake[1] >= 0) {
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_wake[1], &byte, 1);
  }
  errno = saved;
}
}  // namespace

void installStopSignals() {
  if (g_wake[0] < 0 && ::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) g_wake[0] = g_wake[1] = -1;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const std::atomic<bool>* stopRequested() { return &g_stop; }

void waitForStopSignal() {
  while (!g_stop.load()) {
    if (g_wake[0] < 0) {  // no pipe could be made: look every 50 ms
      ::usleep(50000);
      continue;
    }
    pollfd fd{g_wake[0], POLLIN, 0};
    ::poll(&fd, 1, 1000);  // the flag is checked again after every wake-up, and once a second
  }
}

}  // namespace dasp::cli
