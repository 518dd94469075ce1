// SPDX-License-Identifier: MIT
#pragma once
// LinkEmulation: a worker's link to the parameter server as the spec describes it
// (NodeSpec.link over ClusterSpec.link: latency_ms, mbit), emulated in the sender for real
// runs — the worker holds each push before it leaves and each pull after it arrives for
// latency + bytes / bandwidth. Only what the spec sets is emulated (no mbit: latency only),
// so a link shaped by the kernel (tc tbf on a veth) can take its latency from here.
// Threading: a value; hold() sleeps the calling (worker) thread, which is the emulation.

#include "core/spec/spec.h"

#include <chrono>
#include <cstddef>

namespace dasp::net {

class LinkEmulation {
 public:
  LinkEmulation() = default;
  // The emulation of a worker's effective link (core/spec/spec.h: effectiveLink).
  static LinkEmulation of(const v1::LinkSpec& link);

  bool active() const { return m_latencyS > 0 || m_bitsPerS > 0; }
  double latencyS() const { return m_latencyS; }
  // Seconds one transfer of `bytes` takes on this link (0 when nothing is emulated).
  double transferSeconds(std::size_t bytes) const;
  // Holds the calling thread for transferSeconds(bytes).
  void hold(std::size_t bytes) const;

 private:
  double m_latencyS = 0;
  double m_bitsPerS = 0;  // 0 = not limited here
};

// LinkCut: this process's link to the servers, cut and restored by the runner's DISCONNECT
// drill (FaultSpec DISCONNECT: SIGUSR1 cuts it, SIGUSR2 restores it; `dasp worker`
// installs the handlers). While it is cut nothing the process sends leaves and no reply
// reaches it: PsClient holds each call before it leaves, and each reply after it arrives,
// until the link is back or the call's deadline has passed, as over a black-holed TCP
// connection (gRPC notices nothing before the deadline). Emulated in the sender, like the
// link's latency, so it needs no root and works under every launcher.
// Threading: one lock-free flag, set from the signal handler; any thread may ask.
class LinkCut {
 public:
  using Clock = std::chrono::steady_clock;
  // SIGUSR1 cuts the link, SIGUSR2 restores it.
  static void installSignalHandlers();
  static void set(bool cut);
  static bool isCut();
  // Blocks while the link is cut, at most until `deadline`; false when it is still cut then.
  static bool waitUntilUp(Clock::time_point deadline);
};

}  // namespace dasp::net
