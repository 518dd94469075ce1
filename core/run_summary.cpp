// SPDX-License-Identifier: MIT
#include "core/run_summary.h"

namespace dasp {

std::vector<SummaryRow> summaryRows(const RunSummary& s, const ExperimentSpec& spec) {
  std::vector<SummaryRow> rows{
      {"final_accuracy", s.finalAccuracy, ""},
      {"final_loss", s.finalLoss, ""},
      {"seconds", s.seconds, ""},
      {"updates", static_cast<double>(s.updates), ""},
      {"gradients", static_cast<double>(s.gradients), ""},
      {"applied", static_cast<double>(s.applied), ""},
      {"dropped", static_cast<double>(s.dropped), ""},
      {"mean_wait_s", s.meanWaitS, ""},
      {"wait_fraction", s.waitFraction, ""},
      {"mean_staleness", s.meanStaleness, ""},
      {"max_staleness", static_cast<double>(s.maxStaleness), ""},
      {"epochs", s.epochs, ""},
      {"workers", static_cast<double>(s.workers), ""},
      {"stop_reason", std::nullopt, s.stopReason},
      {"lr_convention", std::nullopt, v1::OptimizerSpec::LrConvention_Name(spec.optimizer().lr_convention())},
      {"engine", std::nullopt, s.engine},
      {"wall_s", s.wallS, ""}};
  if (s.timeToTargetS) rows.push_back({"time_to_target_s", *s.timeToTargetS, ""});
  if (!s.faults.empty()) rows.push_back({"faults", static_cast<double>(s.faults.size()), ""});
  if (s.simEvents > 0) rows.push_back({"sim_events", static_cast<double>(s.simEvents), ""});
  rows.push_back({"recovery", std::nullopt, recoveryName(spec.recovery().mode())});
  return rows;
}

}  // namespace dasp
