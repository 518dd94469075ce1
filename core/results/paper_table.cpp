// SPDX-License-Identifier: MIT
#include "core/results/paper_table.h"

#include "core/results/mean_std.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace dasp {
namespace {

std::string points(double accuracyChange) {
  const double p = accuracyChange * 100.0;
  return (p >= 0 ? "+" : "") + fixedText(p, 1);
}

std::string paperVariant(const v1::RunResult& r) {
  if (r.strategy() == "asp") return "async";
  if (r.strategy() == "bsp") return "sync";
  return r.strategy();
}

// The paper's time to target, each of its runs of `recovery`: "101 (async), 120 (sync)".
std::string paperTimes(const std::vector<v1::RunResult>& paper, const std::string& recovery) {
  std::string out;
  for (const auto& r : paper) {
    if (r.recovery() != recovery || !r.has_time_to_target_s()) continue;
    out += (out.empty() ? "" : ", ") + fixedText(r.time_to_target_s(), 0) + " (" + paperVariant(r) + ")";
  }
  return out.empty() ? "—" : out;
}

// The paper's change at resume of each kill: "+5.4, +6.0 (async, 2 kills)".
std::string paperJumps(const std::vector<v1::RunResult>& paper, const std::string& recovery) {
  std::string out;
  for (const auto& r : paper) {
    if (r.recovery() != recovery) continue;
    std::string jumps;
    for (const auto& f : r.faults()) {
      if (f.has_accuracy_jump()) jumps += (jumps.empty() ? "" : ", ") + points(f.accuracy_jump());
    }
    if (jumps.empty()) continue;
    const std::string kills = r.faults_size() == 1 ? "1 kill" : std::to_string(r.faults_size()) + " kills";
    out += (out.empty() ? "" : "; ") + jumps + " (" + paperVariant(r) + ", " + kills + ")";
  }
  return out.empty() ? "—" : out;
}

// Our time to target over the runs of `recovery` with `workers`: "34.8 ± 3.3", "1/3 never".
std::string ourTime(const std::vector<v1::RunResult>& runs, const std::string& recovery, int workers) {
  std::vector<double> times;
  int total = 0;
  for (const auto& r : runs) {
    if (r.recovery() != recovery || r.workers() != workers) continue;
    ++total;
    if (r.has_time_to_target_s()) times.push_back(r.time_to_target_s());
  }
  if (total == 0) return "—";
  const int never = total - static_cast<int>(times.size());
  if (times.empty()) return std::to_string(never) + "/" + std::to_string(total) + " never";
  const MeanStd s = meanStd(times);
  std::string cell = meanStdCell(s, 1, 1);
  if (never > 0) cell += " (" + std::to_string(never) + "/" + std::to_string(total) + " never)";
  return cell;
}

// Our change at resume at each kill, over the runs: "+28.7 to +38.5, then +0.4 to +5.7".
std::string ourJumps(const std::vector<v1::RunResult>& runs, const std::string& recovery, int workers) {
  std::vector<std::vector<double>> byKill;
  for (const auto& r : runs) {
    if (r.recovery() != recovery || r.workers() != workers) continue;
    for (int i = 0; i < r.faults_size(); ++i) {
      if (!r.faults(i).has_accuracy_jump()) continue;
      if (byKill.size() <= static_cast<std::size_t>(i)) byKill.resize(static_cast<std::size_t>(i) + 1);
      byKill[static_cast<std::size_t>(i)].push_back(r.faults(i).accuracy_jump());
    }
  }
  std::string out;
  for (const auto& jumps : byKill) {
    if (jumps.empty()) continue;
    const auto [low, high] = std::minmax_element(jumps.begin(), jumps.end());
    out += (out.empty() ? "" : ", then ") + points(*low) + (jumps.size() > 1 ? " to " + points(*high) : "");
  }
  return out.empty() ? "—" : out;
}

}  // namespace

std::string paperComparisonMarkdown(const std::vector<v1::RunResult>& paper, const std::vector<v1::RunResult>& twoKills) {
  std::vector<std::string> modes{"none", "checkpoint", "chain", "stateless", "local"};
  std::set<int> workerCounts;
  for (const auto* runs : {&paper, &twoKills}) {
    for (const auto& r : *runs) {
      if (std::find(modes.begin(), modes.end(), r.recovery()) == modes.end()) modes.push_back(r.recovery());
      if (runs != &paper) workerCounts.insert(r.workers());
    }
  }
  double target = 0;
  for (const auto& r : twoKills) target = std::max(target, r.target());
  std::ostringstream os;
  os << "| recovery | time to " << fixedText(target, 2) << ", 2 kills (s): paper, 1 worker";
  for (int w : workerCounts) os << " | ours, " << w << (w == 1 ? " worker" : " workers");
  os << " | change at resume (points): paper, 1 worker";
  for (int w : workerCounts) os << " | ours, " << w << (w == 1 ? " worker" : " workers");
  os << " |\n| ---";
  for (std::size_t i = 0; i < 2 * (workerCounts.size() + 1); ++i) os << " | ---";
  os << " |\n";
  for (const auto& mode : modes) {
    os << "| " << mode << " | " << paperTimes(paper, mode);
    for (int w : workerCounts) os << " | " << ourTime(twoKills, mode, w);
    os << " | " << paperJumps(paper, mode);
    for (int w : workerCounts) os << " | " << ourJumps(twoKills, mode, w);
    os << " |\n";
  }
  os << "\nThe paper's figures are those of its logs (one run per setting, one worker; \"async\" and \"sync\" its two "
        "training modes, alike with one worker), from results/fault-real/paper-ttf.jsonl. Ours: mean ± sample std "
        "over seeds (n/k never: n of the k runs did not reach the target); a change at resume is the first evaluation "
        "after training resumed minus the last one before the kill: the paper's of both its one-kill and two-kill runs, "
        "ours the lowest to the highest over the seeds at the first kill, then at the second.\n";
  return os.str();
}

}  // namespace dasp
