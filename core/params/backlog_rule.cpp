// SPDX-License-Identifier: MIT
#include "core/params/backlog_rule.h"

namespace dasp {

BacklogStep backlogStep(const v1::RecoverySpec& recovery, std::int64_t count, double lr) {
  BacklogStep step;
  step.lr = lr;
  step.rule = "sum";
  if (recovery.backlog_rule() == v1::RecoverySpec::MEAN) {
    step.weight = 1.0 / static_cast<double>(count > 0 ? count : 1);
    step.rule = "mean";
  } else if (recovery.backlog_rule() == v1::RecoverySpec::SCALED_LR) {
    step.rule = "scaled lr";
    if (count > recovery.backlog_lr_threshold()) step.lr *= recovery.backlog_lr_scale();
  }
  return step;
}

}  // namespace dasp
