// SPDX-License-Identifier: MIT
// Recovery metrics and the recovery table. See core/results/recovery_metrics.h.

#include "core/results/recovery_metrics.h"

#include "core/results/mean_std.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

namespace dasp {

std::vector<RecoveryMetrics> computeRecoveryMetrics(std::vector<FaultRecord> faults,
                                                    const std::vector<EvalPoint>& evaluations,
                                                    double finalAccuracy) {
  std::stable_sort(faults.begin(), faults.end(),
                   [](const FaultRecord& a, const FaultRecord& b) { return a.atS < b.atS; });
  std::vector<EvalPoint> evals;
  evals.reserve(evaluations.size());
  for (const EvalPoint& e : evaluations) {
    if (std::isfinite(e.accuracy) && std::isfinite(e.tS)) evals.push_back(e);
  }
  const auto byTime = [](const EvalPoint& a, const EvalPoint& b) { return a.tS < b.tS; };
  if (!std::is_sorted(evals.begin(), evals.end(), byTime)) std::stable_sort(evals.begin(), evals.end(), byTime);

  std::vector<RecoveryMetrics> out;
  out.reserve(faults.size());
  for (std::size_t i = 0; i < faults.size(); ++i) {
    RecoveryMetrics m;
    m.fault = faults[i];
    const FaultRecord& f = m.fault;
    const double at = f.atS;
    m.finalAccuracy = finalAccuracy;
    if (f.detectedAtS) m.detectionS = *f.detectedAtS - at;
    if (f.resumedAtS) m.downtimeS = *f.resumedAtS - at;
    // Counted against what the workers were told, not against what the runner saw: an
    // update the dead server applied but never acknowledged is not a loss of the mode's.
    if (f.versionAfter && f.ackedBefore) m.updatesLost = std::max<std::int64_t>(0, *f.ackedBefore - *f.versionAfter);

    // The first evaluation strictly after the fault; the one before it is the last at or
    // before the fault.
    const auto firstAfter = std::upper_bound(evals.begin(), evals.end(), at,
                                             [](double t, const EvalPoint& e) { return t < e.tS; });
    if (firstAfter != evals.begin()) m.accuracyBefore = std::prev(firstAfter)->accuracy;

    double windowEnd = std::numeric_limits<double>::infinity();
    if (i + 1 < faults.size()) windowEnd = faults[i + 1].atS;
    if (m.accuracyBefore) {
      const auto back = std::find_if(firstAfter, evals.end(),
                                     [&](const EvalPoint& e) { return e.accuracy >= *m.accuracyBefore; });
      if (back != evals.end()) {
        m.recoverS = back->tS - at;
        windowEnd = std::min(windowEnd, back->tS);
      }
    }

    for (auto it = firstAfter; it != evals.end() && it->tS <= windowEnd; ++it) {
      if (!m.accuracyLowestAfter || it->accuracy < *m.accuracyLowestAfter) m.accuracyLowestAfter = it->accuracy;
    }
    // The accuracy right after the recovery against right before the fault (the paper's
    // comparison: a stateless server's applied backlog shows as a rise, a checkpoint's
    // rollback as a fall).
    if (m.accuracyBefore && f.resumedAtS) {
      const auto afterResume = std::upper_bound(evals.begin(), evals.end(), *f.resumedAtS,
                                                [](double t, const EvalPoint& e) { return t < e.tS; });
      if (afterResume != evals.end()) m.accuracyJump = afterResume->accuracy - *m.accuracyBefore;
    }
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

constexpr const char* kNone = "\u2014";  // "—"

// "mean ± sample std" (std omitted for one value), "—" for none. Counts print their mean
// without decimals when it is whole.
std::string meanStdText(const std::vector<double>& v, int decimals, bool count = false) {
  if (v.empty()) return kNone;
  const MeanStd s = meanStd(v);
  return meanStdCell(s, count && s.mean == std::floor(s.mean) ? 0 : decimals, decimals);
}

struct Group {
  std::string caseName;
  std::string recovery;
  int workers = 0;
  int index = 0;
  std::vector<std::string> what;  // distinct "kill server" texts, first-seen order
  std::vector<const RecoveryMetrics*> members;
  std::vector<const RunFaults*> runs;  // members[i]'s run
};

// "mean ± std" of the values, then "(n/k never)" when n of k runs have none.
std::string withNever(const std::vector<double>& values, std::size_t never, std::size_t k) {
  const std::string neverText = std::to_string(never) + "/" + std::to_string(k) + " never";
  if (values.empty()) return never > 0 ? neverText : kNone;
  std::string cell = meanStdText(values, 2);
  if (never > 0) cell += " (" + neverText + ")";
  return cell;
}

}  // namespace

RecoveryTable recoveryTable(const std::vector<RunFaults>& runs) {
  RecoveryTable table;
  table.header = {"recovery",     "workers",      "fault",         "runs",
                  "detection (s)", "downtime (s)", "updates lost",  "gradients in outage",
                  "dropped",      "acc. before",  "lowest after",  "back to pre-fault (s)",
                  "change at resume", "final accuracy", "CPU-s in outage", "time to target (s)"};
  const bool named =
      std::any_of(runs.begin(), runs.end(), [](const RunFaults& r) { return !r.caseName.empty(); });
  if (named) table.header.insert(table.header.begin(), "case");
  table.note =
      "Each cell is the mean \u00b1 sample std over the row's runs (\u2014 where no run has the figure). "
      "Detection: fault to the first sign of it from another node; downtime: fault to the first update "
      "applied after it; updates lost: acknowledged versions the recovered server does not hold (the highest version the failed server acknowledged to any worker minus the version recovery resumed from); gradients in outage: "
      "computed while no server answered, of which dropped by the workers' backlog bound; acc. before: the "
      "last evaluation before the fault; lowest after: the lowest evaluation until accuracy is back (or the "
      "next fault); back to pre-fault: fault to the first evaluation at or above acc. before; change at resume: the "
      "first evaluation after training resumed minus acc. before (the stateless jump, a checkpoint's setback); CPU-s in outage: all the run's "
      "processes from the fault until training resumed; time to target: the server time of the first version "
      "evaluated at the run's target accuracy (n/k never: n of the k runs did not reach it).";

  std::vector<Group> groups;
  for (const RunFaults& run : runs) {
    for (const RecoveryMetrics& m : run.faults) {
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
        return x.caseName == run.caseName && x.recovery == run.recovery && x.workers == run.workers &&
               x.index == m.fault.index;
      });
      if (g == groups.end()) {
        groups.push_back(Group{run.caseName, run.recovery, run.workers, m.fault.index, {}, {}, {}});
        g = std::prev(groups.end());
      }
      std::string what = m.fault.action;
      if (!m.fault.node.empty()) what += (what.empty() ? "" : " ") + m.fault.node;
      if (!what.empty() && std::find(g->what.begin(), g->what.end(), what) == g->what.end()) g->what.push_back(what);
      g->members.push_back(&m);
      g->runs.push_back(&run);
    }
  }

  for (const Group& g : groups) {
    const auto collect = [&](const std::function<std::optional<double>(const RecoveryMetrics&)>& get) {
      std::vector<double> v;
      for (const RecoveryMetrics* m : g.members) {
        if (auto x = get(*m); x && std::isfinite(*x)) v.push_back(*x);
      }
      return v;
    };
    const auto asDouble = [](const std::optional<std::int64_t>& x) -> std::optional<double> {
      if (!x) return std::nullopt;
      return static_cast<double>(*x);
    };
    std::string fault = std::to_string(g.index);
    for (std::size_t i = 0; i < g.what.size(); ++i) fault += (i == 0 ? ": " : ", ") + g.what[i];
    const std::size_t k = g.members.size();

    std::size_t never = 0;
    for (const RecoveryMetrics* m : g.members) {
      if (m->accuracyBefore && !m->recoverS) ++never;
    }
    const std::string backCell = withNever(collect([](const RecoveryMetrics& m) { return m.recoverS; }), never, k);
    std::vector<double> toTarget;
    for (const RunFaults* r : g.runs) {
      if (r->timeToTargetS) toTarget.push_back(*r->timeToTargetS);
    }
    const std::string targetCell = withNever(toTarget, k - toTarget.size(), k);

    std::vector<std::string> row;
    if (named) row.push_back(g.caseName.empty() ? kNone : g.caseName);
    const std::vector<std::string> cells{
        g.recovery.empty() ? kNone : g.recovery,
        std::to_string(g.workers),
        fault,
        std::to_string(k),
        meanStdText(collect([](const RecoveryMetrics& m) { return m.detectionS; }), 2),
        meanStdText(collect([](const RecoveryMetrics& m) { return m.downtimeS; }), 2),
        meanStdText(collect([&](const RecoveryMetrics& m) { return asDouble(m.updatesLost); }), 1, true),
        meanStdText(collect([](const RecoveryMetrics& m) {
                  return std::optional<double>(static_cast<double>(m.fault.gradientsDuringOutage));
                }),
                1, true),
        meanStdText(collect([](const RecoveryMetrics& m) {
                  return std::optional<double>(static_cast<double>(m.fault.gradientsDropped));
                }),
                1, true),
        meanStdText(collect([](const RecoveryMetrics& m) { return m.accuracyBefore; }), 4),
        meanStdText(collect([](const RecoveryMetrics& m) { return m.accuracyLowestAfter; }), 4),
        backCell,
        meanStdText(collect([](const RecoveryMetrics& m) { return m.accuracyJump; }), 4),
        meanStdText(collect([](const RecoveryMetrics& m) { return std::optional<double>(m.finalAccuracy); }), 4),
        meanStdText(collect([](const RecoveryMetrics& m) { return std::optional<double>(m.fault.cpuS); }), 1),
        targetCell,
    };
    row.insert(row.end(), cells.begin(), cells.end());
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string recoveryTableMarkdown(const std::vector<RunFaults>& runs) {
  const RecoveryTable table = recoveryTable(runs);
  const auto cell = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '|') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
    return out;
  };
  std::string md = "|";
  for (const std::string& h : table.header) md += " " + cell(h) + " |";
  md += "\n|";
  const std::size_t textColumns = table.header.front() == "case" ? 4 : 3;
  for (std::size_t i = 0; i < table.header.size(); ++i) md += i < textColumns ? " --- |" : " ---: |";
  md += "\n";
  for (const auto& row : table.rows) {
    md += "|";
    for (const std::string& c : row) md += " " + cell(c) + " |";
    md += "\n";
  }
  md += "\n" + table.note + "\n";
  return md;
}

}  // namespace dasp
