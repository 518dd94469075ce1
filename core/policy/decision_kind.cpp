// SPDX-License-Identifier: MIT
#include "core/policy/decision_kind.h"

namespace dasp {

const char* toString(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::StateChange: return "state_change";
    case DecisionKind::Drop: return "drop";
    case DecisionKind::BarrierTimeout: return "barrier_timeout";
    case DecisionKind::Repartition: return "repartition";
    case DecisionKind::Grant: return "grant";
  }
  return "?";
}

std::optional<DecisionKind> decisionKindFromCode(std::int64_t code) {
  switch (code) {
    case 0: return DecisionKind::StateChange;
    case 1: return DecisionKind::Drop;
    case 2: return DecisionKind::BarrierTimeout;
    case 3: return DecisionKind::Repartition;
    case 4: return DecisionKind::Grant;
    default: return std::nullopt;
  }
}

bool marksTimeline(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::StateChange:
    case DecisionKind::Drop:
    case DecisionKind::BarrierTimeout: return true;
    case DecisionKind::Repartition:
    case DecisionKind::Grant: return false;
  }
  return false;
}

}  // namespace dasp
