// SPDX-License-Identifier: MIT
#pragma once
// DecisionKind: what a sync policy's decision did. Policies emit it, the run store keeps it
// (the decisions table's `kind` column holds these numbers: never renumber them) and the
// views choose what to draw from it, never from the decision's text.
// Threading: plain values and pure functions, any thread.

#include <cstdint>
#include <optional>

namespace dasp {

enum class DecisionKind : std::uint8_t {
  StateChange = 0,     // a node moved between parallel states (from/to set)
  Drop = 1,            // a gradient was dropped (too stale, late for its round)
  BarrierTimeout = 2,  // a round closed without every member
  Repartition = 3,     // DASP's partition changed (recorded only when it changed something)
  Grant = 4,           // DSSP granted extra iterations to the fastest worker
};
const char* toString(DecisionKind kind);
// The kind of a stored number; nullopt for a number no kind has.
std::optional<DecisionKind> decisionKindFromCode(std::int64_t code);
// Whether a timeline marks the decision: state changes, barrier timeouts and drops do; a
// re-partition or a grant is a record of the policy's bookkeeping (in the store and the
// reports), not a marker.
bool marksTimeline(DecisionKind kind);

}  // namespace dasp
