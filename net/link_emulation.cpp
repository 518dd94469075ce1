// SPDX-License-Identifier: MIT
#include "net/link_emulation.h"

#include <chrono>
#include <thread>

namespace dasp::net {

LinkEmulation LinkEmulation::forWorker(const ExperimentSpec& spec, int rank) {
  LinkEmulation l;
  const auto workers = expandWorkers(spec);
  const v1::LinkSpec none;
  const v1::LinkSpec& own = rank >= 0 && rank < static_cast<int>(workers.size())
                                ? workers[static_cast<std::size_t>(rank)].link()
                                : none;
  const v1::LinkSpec& cluster = spec.cluster().link();
  if (own.has_latency_ms()) l.m_latencyS = own.latency_ms() / 1000.0;
  else if (cluster.has_latency_ms()) l.m_latencyS = cluster.latency_ms() / 1000.0;
  if (own.has_mbit()) l.m_bitsPerS = own.mbit() * 1e6;
  else if (cluster.has_mbit()) l.m_bitsPerS = cluster.mbit() * 1e6;
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
