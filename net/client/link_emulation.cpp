// SPDX-License-Identifier: MIT
#include "net/client/link_emulation.h"

#include <chrono>
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
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace dasp::net
