// SPDX-License-Identifier: MIT
#pragma once
// Results tables from run summaries (RunResult, the lines of `dasp run --json`): the one
// aggregation that `dasp run` prints after a suite and that `dasp tables` writes into
// README.md and docs/ from the committed results/ files, so a table in the docs is always
// what the raw results give.
//
// Fair tuning: runs are grouped by label (the strategy), then by learning rate; each
// strategy is reported at its best rate: the most seeds reaching the target, then the
// lowest mean time to target, then the highest mean final accuracy.
// Threading: pure functions.

#include "core/results/mean_std.h"
#include "core/results/recovery_metrics.h"
#include "core/common/result.h"
#include "dasp/v1/results.pb.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dasp {

// "12.3 ± 0.8" with `decimals`, "-" when empty.
std::string formatMeanStd(const MeanStd& s, int decimals);

// One strategy at its best learning rate.
struct StrategyResult {
  std::string label;
  double lr = 0;
  std::vector<double> lrsTried;
  std::vector<const v1::RunResult*> runs;  // the runs at `lr`
  int reached = 0;                         // runs that reached the target
  int diverged = 0;                        // runs that ended with status "diverged"
  MeanStd timeToTarget;                    // over the runs that reached it
  MeanStd finalAccuracy, waitShare, staleness, cost;
  std::int64_t maxStaleness = 0;
  std::optional<double> maxDip;  // the largest speed_change_dip of the runs, if any has one
  // Every run at `lr` reached the target.
  bool allReached() const { return reached == static_cast<int>(runs.size()) && reached > 0; }
};

// Strategies in order of first appearance, each at its best learning rate.
std::vector<StrategyResult> bestByStrategy(const std::vector<v1::RunResult>& runs);
// The mean time to target of the "reference" strategy when all its runs reached it.
std::optional<double> referenceMeanOf(const std::vector<StrategyResult>& rows);
// Sets heterogeneity_cost on every run that reached the target, from the reference's mean
// (clears it when there is no reference).
void fillHeterogeneityCost(std::vector<v1::RunResult>& runs);

// The fault drills of result lines (`faults`), as the recovery table groups them: one
// RunFaults per run that has drills.
std::vector<RunFaults> runFaultsOf(const std::vector<v1::RunResult>& runs);

// The comparison table of one suite (markdown, a trailing note included).
std::string suiteTableMarkdown(const std::vector<v1::RunResult>& runs);

// One case of a matrix: its name and its runs.
struct MatrixCase {
  std::string name;
  std::vector<v1::RunResult> runs;
};
// Cases × strategies: time to target at each strategy's best rate; the fastest mean of a
// case in bold; a last column says whether DASP's mean is within the best other
// strategy's mean + std, and DASP's heterogeneity cost.
std::string matrixTableMarkdown(const std::vector<MatrixCase>& cases);
// Why the times differ: per case and strategy (at its best rate), the updates and the epochs
// (training samples) per second, gradients per update, dropped gradients, wait share,
// staleness and the speed-change dip.
std::string diagnosisTableMarkdown(const std::vector<MatrixCase>& cases);
// Scale with server shards: per case, each strategy and shard count (ps.shards, a suite
// entry's `shards`) at its best rate: time to target, updates per second, wait share and
// final accuracy.
std::string shardsTableMarkdown(const std::vector<MatrixCase>& cases);
// The same strategies in two engines (the real runs and the virtual-cluster engine):
// times, their ratio, and how many of the pairs the real runs separate (means further
// apart than the sum of their stds) the engine orders the same way.
std::string validationTableMarkdown(const std::vector<v1::RunResult>& real, const std::vector<v1::RunResult>& sim);
// A prediction from measured runs (`dasp predict`, tools/validate-predict.sh) against the
// real runs of every strategy: the validation table with the prediction for the engine, how
// many strategies are predicted within 20 %, and the measured strategy's updates per second
// in the measured runs (`measured`) and in its prediction.
std::string predictionTableMarkdown(const std::vector<v1::RunResult>& real, const std::vector<v1::RunResult>& predicted,
                                    const std::vector<v1::RunResult>& measured);

// Reads JSON Lines of RunResult (unknown fields ignored, blank lines skipped). Errors name
// `source` and the line.
Result<std::vector<v1::RunResult>> parseResultLines(const std::string& text, const std::string& source);
// results/fresh-clone/timings.jsonl: SetupTiming lines, and their table (newest last).
Result<std::vector<v1::SetupTiming>> parseSetupTimingLines(const std::string& text, const std::string& source);
std::string setupTimingTableMarkdown(const std::vector<v1::SetupTiming>& timings);

// Regenerates the generated blocks of a markdown text:
//   <!-- dasp-tables KIND ARG... -->  ...  <!-- /dasp-tables -->
// Each block's body becomes generate(KIND, ARGs) (a blank line around it). Errors name the
// line of a block that does not close or whose generator fails.
Result<std::string> regenerateBlocks(
    const std::string& text,
    const std::function<Result<std::string>(const std::string& kind, const std::vector<std::string>& args)>& generate);

}  // namespace dasp
