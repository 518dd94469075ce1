// SPDX-License-Identifier: MIT
#pragma once
// RunSummary: the figures of one finished run, as both engines report them (the real
// runner in net/, the simulator in core/) and as `dasp run` tabulates them; summaryRows()
// turns them into the store's summary rows, so both engines write the same keys.
// Threading: plain values.

#include "core/results/divergence.h"
#include "core/results/recovery_metrics.h"
#include "core/store/run_store.h"
#include "core/spec/spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dasp {

struct RunSummary {
  std::int64_t runId = 0;
  std::string engine = "real";        // real or sim
  std::string strategy;
  std::string recovery;
  std::uint64_t seed = 0;
  int workers = 0;
  std::string status;                 // completed, stopped, failed, diverged
  std::string stopReason;             // target, max_seconds, max_updates, epochs, cancelled, diverged
  std::optional<Divergence> divergence;  // status diverged: what was seen, at which version and time
  std::optional<double> timeToTargetS;
  double finalAccuracy = 0;
  double finalLoss = 0;
  double seconds = 0;                 // server time at stop (virtual for the simulator)
  std::int64_t updates = 0;           // final version
  std::int64_t gradients = 0;         // gradients pushed
  std::int64_t applied = 0;           // gradients applied
  std::int64_t dropped = 0;           // gradients dropped by the policy
  double meanWaitS = 0;               // mean parked time per iteration
  double waitFraction = 0;            // total wait / (total wait + compute)
  double meanStaleness = 0;
  std::int64_t maxStaleness = 0;
  double epochs = 0;
  std::vector<RecoveryMetrics> faults;  // one per fault drill that happened
  // Accuracy points (0–100) the test accuracy fell below its last value before the first
  // scheduled speed change, at its lowest after it (0: no fall; unset: no change, or no
  // evaluation on one side of it).
  std::optional<double> speedChangeDip;
  double wallS = 0;                   // wall-clock seconds the run took
  std::int64_t simEvents = 0;         // simulator only: events processed
};

// RunSummary::speedChangeDip of a run of `spec` from its evaluations.
std::optional<double> speedChangeDip(const ExperimentSpec& spec, const std::vector<EvalPoint>& evaluations);

// The store's summary rows of a run (keys shared by both engines).
std::vector<SummaryRow> summaryRows(const RunSummary& summary, const ExperimentSpec& spec);

}  // namespace dasp
