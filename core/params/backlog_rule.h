// SPDX-License-Identifier: MIT
#pragma once
// The step a stateless server takes with a worker's flushed outage backlog (recovery
// STATELESS, recovery.backlog_rule): the sum of its n gradients applied in one update, with
// this weight and learning rate. The real server (net/server/ps_recovery.cpp) and the
// virtual cluster (core/sim) take the same step.
// Threading: a pure function; any thread.

#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <string>

namespace dasp {

struct BacklogStep {
  double weight = 1.0;  // of the sum (MEAN: 1/n; CLIPPED_SUM: min(1, K/n))
  double lr = 0;        // SCALED_LR: the run's rate × backlog_lr_scale beyond the threshold
  std::string rule;     // "sum", "mean", "scaled lr" or "clipped sum to K gradients", for people
};

// `count`: the gradients in the backlog; `lr`: the run's learning rate at this version.
BacklogStep backlogStep(const v1::RecoverySpec& recovery, std::int64_t count, double lr);

}  // namespace dasp
