// SPDX-License-Identifier: MIT
#pragma once
// Run events: the typed vocabulary of dasp/v1/events.proto (RunEvent::Kind, ::Code) as the
// store, the runner, the engine and the GUI use it. A kind is stored by its name (the
// words people read in the events table: "node", "fault", ...), a code by its number.
// recoveryStepName() gives the word the server puts in a RECOVERY event's `decision` (and
// so in front of its stored detail text).
//
// Threading: pure functions; any thread.

#include "dasp/v1/events.pb.h"

#include <string>

namespace dasp {

using EventKind = v1::RunEvent::Kind;
using EventCode = v1::RunEvent::Code;

// "node", "reject", "control", "recovery", "fault", "exit", "speed", "training"; "event" for
// KIND_UNSPECIFIED.
const char* kindName(EventKind kind);
// The kind a stored name stands for (exact names of kindName()); KIND_UNSPECIFIED for any
// other word.
EventKind kindFromName(const std::string& name);
// "restored", "promoted", "backlog", "checkpoint", "checkpoint_failed",
// "replica_unreachable", "adopting", "adopted", "started_fresh", "chain"; "" for a code
// that is not a server's recovery step.
const char* recoveryStepName(EventCode code);

// Codes that change nothing anyone needs to see as news: a node's routine joining (UP at
// start-up is the same code as a rejoin, so charts that leave out joins leave out both)
// and the periodic checkpoints.
inline bool isRoutineCode(EventCode code) {
  return code == v1::RunEvent::NODE_UP || code == v1::RunEvent::CHECKPOINT;
}

}  // namespace dasp
