// SPDX-License-Identifier: MIT
#pragma once
// SpeedProfile: a worker's emulated speed (the worker loop of net/client, and the spec's
// property test, which checks that every accepted value is a wait the worker honours).
// Threading: one thread per object.

#include "core/common/durations.h"
#include "core/spec/spec.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace dasp {

// One iteration's jitter factor of `speed`: 1 + jitter × a standard normal draw, at least
// 0.1 (1 without jitter, and no draw). The worker (SpeedProfile) and the engine draw it so.
inline double jitterFactor(const v1::SpeedProfile& speed, std::normal_distribution<double>& normal,
                           std::mt19937_64& rng) {
  return speed.jitter() > 0 ? std::max(0.1, 1.0 + speed.jitter() * normal(rng)) : 1.0;
}

// The node's emulated iteration time: slowdown × base (or × the real compute), jittered,
// with scheduled changes by server time and live overrides from the server. An iteration
// draws its jitter once (beginIteration), so that a node under a compute budget can size
// its batch at the speed it will then run at.
class SpeedProfile {
 public:
  SpeedProfile(const v1::NodeSpec& node, std::uint64_t seed) : m_node(node), m_rng(seed) {}
  // Draws this iteration's jitter factor.
  void beginIteration() { m_factor = jitterFactor(m_node.speed(), m_normal, m_rng); }
  // `batchFactor` = this iteration's batch ÷ the spec's: an emulated base time scales with
  // the batch as real compute does (the real compute time already does).
  double targetSeconds(double computeS, double serverT, double overrideSlowdown, double batchFactor) const {
    const double base = m_node.speed().base_iteration_ms() > 0 ? batchFactor * m_node.speed().base_iteration_ms() / 1000.0
                                                               : computeS;
    return slowdownAt(serverT, overrideSlowdown) * base * m_factor;
  }
  // This iteration's seconds per sample of a batch of `nominalBatch` samples; with no
  // emulated base, from `realPerSampleS`, the node's measured compute (< 0: not measured).
  double perSampleSeconds(double serverT, double overrideSlowdown, int nominalBatch, double realPerSampleS) const {
    const double base = m_node.speed().base_iteration_ms() > 0
                            ? m_node.speed().base_iteration_ms() / 1000.0 / std::max(1, nominalBatch)
                            : realPerSampleS;
    return base > 0 ? slowdownAt(serverT, overrideSlowdown) * base * m_factor : -1.0;
  }
  // What the worker sleeps after a real compute of `computeS` so that its iteration takes
  // `targetS`: through the one conversion, so a target beyond any run is a wait for ever.
  static std::chrono::nanoseconds restOfIteration(double targetS, double computeS) {
    return durationFromSeconds(targetS - computeS);
  }

 private:
  double slowdownAt(double serverT, double overrideSlowdown) const {
    return overrideSlowdown > 0 ? overrideSlowdown : dasp::slowdownAt(m_node.speed(), serverT);
  }

  v1::NodeSpec m_node;
  std::mt19937_64 m_rng;
  std::normal_distribution<double> m_normal{0.0, 1.0};
  double m_factor = 1.0;
};

}  // namespace dasp
