// SPDX-License-Identifier: MIT
#pragma once
// The homogeneous-equivalent reference of a cluster (reference/heterogeneity-2026.md): the
// same N workers, each at iteration time N / Σ 1/tᵢ (the same total gradient rate), under
// BSP, with neither waiting nor staleness. No synchronization rule can do much better on
// the same data and learning rate, so a strategy's time to target ÷ the reference's is
// what heterogeneity costs under it (`heterogeneity_cost`).
// Threading: pure functions.

#include "core/common/result.h"
#include "core/spec/spec.h"

#include <vector>

namespace dasp {

// `spec` (one planned run: no suite) with its cluster replaced by the reference cluster and
// its strategy by BSP. Scheduled speed changes carry over: at every time one worker's speed
// changes, every reference worker changes to the new equivalent time. Jitter and per-worker
// links are dropped (the ideal cluster has neither); fault drills are dropped. Errors name
// the problem: a cluster whose workers mix an emulated base time with real compute time.
Result<ExperimentSpec> homogeneousEquivalent(const ExperimentSpec& spec);

// The planned runs plus, for every distinct (seed, learning rate) among them, the
// reference run of the first spec with it, labelled "reference".
Result<std::vector<PlannedRun>> withReferenceRuns(const std::vector<PlannedRun>& planned);

}  // namespace dasp
