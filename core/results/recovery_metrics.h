// SPDX-License-Identifier: MIT
#pragma once
// Recovery metrics of parameter-server fault drills. The runner observes each drill (a
// node killed or paused at a run time, then restarted) as a FaultRecord;
// computeRecoveryMetrics() adds the figures derived from the run's evaluation series
// (detection, downtime, updates lost, the accuracy dip and how long it took to get back),
// which the run store keeps per fault (table `faults`) and the reports aggregate over
// runs with recoveryTable()/recoveryTableMarkdown().
// Threading: plain values and pure functions; any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dasp {

// What the runner observed about one fault drill (filled by net/runner.cpp).
struct FaultRecord {
  int index = 0;                             // 0-based order of the fault in the run
  std::string node;                          // "server", "server-1", "worker-2", "evaluator"
  std::string action;                        // "kill", "pause" or "disconnect" (faultActionName)
  double atS = 0;                            // run time of the fault (s)
  std::optional<double> restartAtS;          // when the node was restarted / resumed
  std::optional<double> detectedAtS;         // first sign of it from another node (a worker's outage,
                                             // the server marking a worker down)
  std::optional<double> resumedAtS;          // first update applied after the fault (training progresses again)
  std::int64_t versionBefore = 0;            // the run's version just before the fault (as the runner saw it)
  std::optional<std::int64_t> ackedBefore;   // the highest version the failed server acknowledged to any
                                             // worker (the workers report it); none: no worker said
  std::optional<std::int64_t> versionAfter;  // the version the recovered server started from
                                             // (restored / promoted / adopted)
  std::int64_t gradientsDuringOutage = 0;    // computed by workers while no server answered
  std::int64_t gradientsDropped = 0;         // of those, dropped by the worker's backlog bound
  std::int64_t gradientsDiscarded = 0;       // in flight when the server failed, thrown away
  double cpuS = 0;                           // CPU-seconds of all the run's processes from the fault to resumedAtS
  std::string detail;  // free text: what recovery did ("restored checkpoint v300", "promoted server-1 at v512",
                       // "adopted v812 from worker-0; momentum reset")
};

struct EvalPoint {
  double tS = 0;
  std::int64_t version = 0;
  double accuracy = 0;
};

// Per fault: the record plus derived figures.
struct RecoveryMetrics {
  FaultRecord fault;
  std::optional<double> detectionS;           // detectedAtS - atS
  std::optional<double> downtimeS;            // resumedAtS - atS
  std::optional<std::int64_t> updatesLost;    // max(0, ackedBefore - versionAfter): acknowledged updates
                                              // the recovered server does not hold
  std::optional<double> accuracyBefore;       // last evaluation with tS <= atS
  std::optional<double> accuracyLowestAfter;  // lowest evaluation in (atS, windowEnd]
  std::optional<double> recoverS;             // first evaluation after atS with accuracy >= accuracyBefore,
                                              // minus atS (none if never, or no accuracyBefore)
  std::optional<double> accuracyJump;         // first evaluation after resumedAtS minus accuracyBefore
                                              // (signed: the stateless "jump" > 0, a rollback < 0)
  double finalAccuracy = 0;
};

// Derives the per-fault figures. Faults are sorted by atS (stable); evaluations are used
// in tS order (sorted here if they are not), non-finite accuracies are ignored.
// The window of a fault is (atS, windowEnd], windowEnd = the earliest of: the first
// evaluation back at or above accuracyBefore, the next fault's atS; else the end of the
// series. accuracyJump needs accuracyBefore, resumedAtS and an evaluation after it.
// recoverS is not bounded by the next fault.
std::vector<RecoveryMetrics> computeRecoveryMetrics(std::vector<FaultRecord> faults,
                                                    const std::vector<EvalPoint>& evaluations,
                                                    double finalAccuracy);

// One run's faults, as the recovery table aggregates them.
struct RunFaults {
  std::int64_t runId = 0;
  std::string caseName;  // a table of several cases (dasp tables recovery NAME=FILE ...): its case
  std::string label;
  std::string recovery;  // none / checkpoint / chain / stateless
  int workers = 0;
  std::uint64_t seed = 0;
  double finalAccuracy = 0;
  std::optional<double> timeToTargetS;
  std::vector<RecoveryMetrics> faults;
};

// The recovery table as cells: one row per (case, recovery, workers, fault index) group in
// first-seen order, with a first column "case" when a run names one. Cells are "mean ±
// sample std" over the group's runs (std omitted when one run has the value, "—" when none
// has it); the "back to pre-fault" and "time to target" cells add "n/k never" when n of the
// k runs never got there. `note` explains the columns.
struct RecoveryTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string note;
};
RecoveryTable recoveryTable(const std::vector<RunFaults>& runs);

// The table above as Markdown (cells with '|' escaped), followed by a blank line and the
// note. Used by `dasp run` after a suite and, as HTML, by the report.
std::string recoveryTableMarkdown(const std::vector<RunFaults>& runs);

}  // namespace dasp
