// SPDX-License-Identifier: MIT
#pragma once
// benchPolicyDecisions(): how many sync-policy decisions per second one server thread can
// make, measured on a synthetic heterogeneous workload over a virtual clock (the policy
// never reads a clock; steady_clock only times the loop). One decision = one onPush() or
// one mayProceed() call, the two calls a server makes per worker iteration (plus the
// re-checks of parked pulls that the policy asks for).
// Threading: free function over its own objects; safe from any thread.

#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <string>

namespace dasp {

struct PolicyBenchResult {
  std::string strategy;  // the policy's name, or "error: ..." when the spec is invalid
  int workers = 0;
  double decisionsPerS = 0;
  std::int64_t decisions = 0;
};

// Drives the policy `strategy` names with `workers` workers whose iteration times follow
// the cyclic slowdown pattern 1, 1, 1, 4 (±5 % jitter from `seed`) for about `seconds`
// of wall time.
PolicyBenchResult benchPolicyDecisions(const v1::StrategySpec& strategy, int workers,
                                       double seconds, std::uint64_t seed);

}  // namespace dasp
