// SPDX-License-Identifier: MIT
#pragma once
// Legacy events: the code and target of an event row written before the events were
// typed (run store schema version 2 and older), derived from its kind and detail text.
// This is the one place in the code base that reads meaning out of `detail`: the run
// store's migration to schema version 3 calls it once per old row and stores the result
// in the row's `code` and `target` columns; nothing reads the text again after that. It
// knows the wording of the server, the runner and the engine as they wrote it then; a
// text it does not know is CODE_UNSPECIFIED (as a reject or a server's note is).
//
// Threading: a pure function; any thread.

#include "core/events/run_events.h"

#include <string>

namespace dasp {

struct LegacyMeaning {
  EventCode code = v1::RunEvent::CODE_UNSPECIFIED;
  std::string target;
};

LegacyMeaning classifyLegacyEvent(EventKind kind, const std::string& detail);

}  // namespace dasp
