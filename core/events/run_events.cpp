// SPDX-License-Identifier: MIT
#include "core/events/run_events.h"

namespace dasp {

namespace {

struct KindName {
  EventKind kind;
  const char* name;
};
// The store's words for the kinds: part of the file format, never renamed.
constexpr KindName kKindNames[] = {
    {v1::RunEvent::NODE, "node"},         {v1::RunEvent::REJECT, "reject"}, {v1::RunEvent::CONTROL, "control"},
    {v1::RunEvent::RECOVERY, "recovery"}, {v1::RunEvent::FAULT, "fault"},   {v1::RunEvent::EXIT, "exit"},
    {v1::RunEvent::SPEED, "speed"},
    {v1::RunEvent::TRAINING, "training"},
};

}  // namespace

const char* kindName(EventKind kind) {
  for (const auto& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "event";
}

EventKind kindFromName(const std::string& name) {
  for (const auto& k : kKindNames) {
    if (name == k.name) return k.kind;
  }
  return v1::RunEvent::KIND_UNSPECIFIED;
}

const char* recoveryStepName(EventCode code) {
  switch (code) {
    case v1::RunEvent::RESTORED: return "restored";
    case v1::RunEvent::PROMOTED: return "promoted";
    case v1::RunEvent::BACKLOG: return "backlog";
    case v1::RunEvent::CHECKPOINT: return "checkpoint";
    case v1::RunEvent::CHECKPOINT_FAILED: return "checkpoint_failed";
    case v1::RunEvent::REPLICA_UNREACHABLE: return "replica_unreachable";
    case v1::RunEvent::ADOPTING: return "adopting";
    case v1::RunEvent::ADOPTED: return "adopted";
    case v1::RunEvent::STARTED_FRESH: return "started_fresh";
    case v1::RunEvent::CHAIN_TAIL:
    case v1::RunEvent::CHAIN_LINK: return "chain";
    default: return "";
  }
}

}  // namespace dasp
