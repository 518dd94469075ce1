// SPDX-License-Identifier: MIT
#pragma once
// LinkEmulation: a worker's link to the parameter server as the spec describes it
// (NodeSpec.link over ClusterSpec.link: latency_ms, mbit), emulated in the sender for real
// runs — the worker holds each push before it leaves and each pull after it arrives for
// latency + bytes / bandwidth. Only what the spec sets is emulated (no mbit: latency only),
// so a link shaped by the kernel (tc tbf on a veth) can take its latency from here.
// Threading: a value; hold() sleeps the calling (worker) thread, which is the emulation.

#include "core/spec/spec.h"

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

}  // namespace dasp::net
