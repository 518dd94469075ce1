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
  } else if (recovery.backlog_rule() == v1::RecoverySpec::CLIPPED_SUM) {
    const std::int64_t clip = recovery.backlog_clip_gradients() > 0 ? recovery.backlog_clip_gradients() : 1;
    if (count > clip) step.weight = static_cast<double>(clip) / static_cast<double>(count);
    step.rule = "clipped sum to " + std::to_string(clip) + " gradients";
  }
  return step;
}

}  // namespace dasp
