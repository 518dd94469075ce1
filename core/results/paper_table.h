// SPDX-License-Identifier: MIT
#pragma once
// Our fault suites side by side with the figures of 'Training Through Failure' (arXiv
// 2406.05546), as `dasp tables paper PAPER.jsonl TWO-KILLS.jsonl` writes
// them into docs/FAULT-TOLERANCE.md. The paper's figures are result lines too (engine
// "paper", results/fault-real/paper-ttf.jsonl, taken from its logs), so no figure of either
// side is typed into the docs. Threading: pure functions.
#include "dasp/v1/results.pb.h"

#include <string>
#include <vector>

namespace dasp {

// One row per recovery mode (none, checkpoint, chain, stateless, local, then any other in
// first-seen order): the time to the target of the two-kill runs, the paper's (each of its
// runs, "async" for strategy asp and "sync" for bsp) and ours (mean ± sample std per worker
// count, n/k never), and the change at resume of each kill, in points: each of the paper's
// (its one-kill and two-kill runs), ours as "lowest to highest" over the seeds at each kill,
// per worker count.
std::string paperComparisonMarkdown(const std::vector<v1::RunResult>& paper, const std::vector<v1::RunResult>& twoKills);

}  // namespace dasp
