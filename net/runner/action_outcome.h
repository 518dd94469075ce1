// SPDX-License-Identifier: MIT
#pragma once
// ActionOutcome: what one of the runner's fault drills or live actions did, as its run
// event records it — the code (KILL, RESTARTED, NOT_APPLIED, ...), the node acted on, and
// the text for people, in the runner's wording ("kill server-0", "restarted worker-1; it
// rejoins with its rank", ...). The helpers below are the one place that wording is made.
//
// Threading: plain values and pure functions; any thread (the runner's loop uses them).

#include "core/store/run_store.h"

#include <cstdint>
#include <string>

namespace dasp::net {

struct ActionOutcome {
  EventCode code = v1::RunEvent::NOT_APPLIED;
  std::string target;
  std::string text;
};

// An action that changed nothing ("worker-3 is not running").
ActionOutcome notApplied(std::string text);
// KILL, PAUSE, RESUME, DISCONNECT or RECONNECT of `target`: "kill X", "pause X", "resume X",
// "cut the link of X", "restore the link of X".
ActionOutcome signalled(EventCode code, const std::string& target);
// "restore X to its own speed profile" (restore) / "slow X to xK".
ActionOutcome speedSet(const std::string& worker, bool restore, double factor);
// "restarted X<how>" / "restart of X failed: <why>" (X "the evaluator" for the evaluator).
ActionOutcome restarted(const std::string& node, const std::string& how);
ActionOutcome restartFailed(const std::string& node, const std::string& why);

// The run event of an outcome, reported under `node` (the node the action was asked of).
EventRow actionRow(std::int64_t runId, double t, EventKind kind, const std::string& node, ActionOutcome done);

}  // namespace dasp::net
