// SPDX-License-Identifier: MIT
#pragma once
// Fault spans: a run's fault drills as the charts mark them — from when a node was killed
// or paused to when it was restarted or resumed. A stored run has its drills' recovery
// metrics (RunData::faults, written by the runner at the end): those are used. A live run
// has none yet, so the spans are read from its events instead: a FAULT (drill) or CONTROL
// (live action) event KILL / PAUSE of X opens a span of X, a later RESTARTED / RESUME of X
// closes it (by the events' codes and targets; their text is the spans' label and detail).
//
// Threading: pure functions over a RunData; any thread that owns the RunData.

#include "ui/charts/run_data.h"

#include <QString>

#include <vector>

namespace dasp::ui {

struct FaultSpan {
  double t0 = 0;  // run time of the fault (s)
  double t1 = 0;  // run time of the restart / resume (s); valid only when `closed`
  bool closed = false;  // false: not restarted (yet)
  QString node;    // the node faulted: "server", "server-1", "worker-2", "evaluator"
  QString action;  // "kill", "pause" or "disconnect"
  QString label;   // "kill server"
  QString detail;  // one line per figure known: times, downtime, what recovery did
};

// The run's fault spans in time order (from RunData::faults when it has any, else from
// its events).
std::vector<FaultSpan> faultSpans(const RunData& run);

// Events a chart marks with a tick: not the routine NODE_UP of each node joining nor the
// periodic CHECKPOINT of a checkpointing server.
bool isMarkedEvent(const Event& e);

}  // namespace dasp::ui
