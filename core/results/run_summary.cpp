// SPDX-License-Identifier: MIT
#include "core/results/run_summary.h"

#include <algorithm>
#include <limits>

namespace dasp {

std::optional<double> speedChangeDip(const ExperimentSpec& spec, const std::vector<EvalPoint>& evaluations) {
  double change = std::numeric_limits<double>::infinity();
  for (const auto& node : expandWorkers(spec)) {
    for (const auto& c : node.speed().changes()) change = std::min(change, c.at_s());
  }
  if (!(change < std::numeric_limits<double>::infinity())) return std::nullopt;
  std::optional<double> before, lowestAfter;
  for (const auto& e : evaluations) {
    if (e.tS <= change) {
      before = e.accuracy;
    } else {
      lowestAfter = std::min(lowestAfter.value_or(e.accuracy), e.accuracy);
    }
  }
  if (!before || !lowestAfter) return std::nullopt;
  return std::max(0.0, *before - *lowestAfter) * 100.0;
}

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
  if (s.speedChangeDip) rows.push_back({"speed_change_dip", *s.speedChangeDip, ""});
  if (!s.faults.empty()) rows.push_back({"faults", static_cast<double>(s.faults.size()), ""});
  if (s.simEvents > 0) rows.push_back({"sim_events", static_cast<double>(s.simEvents), ""});
  rows.push_back({"recovery", std::nullopt, recoveryName(spec.recovery().mode())});
  return rows;
}

}  // namespace dasp
