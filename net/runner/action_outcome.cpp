// SPDX-License-Identifier: MIT
#include "net/runner/action_outcome.h"

#include <utility>

namespace dasp::net {

namespace {

using RE = v1::RunEvent;

std::string spokenNode(const std::string& node) { return node == "evaluator" ? "the evaluator" : node; }

}  // namespace

ActionOutcome notApplied(std::string text) { return {RE::NOT_APPLIED, {}, std::move(text)}; }

ActionOutcome signalled(EventCode code, const std::string& target) {
  const char* verb = code == RE::KILL         ? "kill "
                     : code == RE::PAUSE      ? "pause "
                     : code == RE::DISCONNECT ? "cut the link of "
                     : code == RE::RECONNECT  ? "restore the link of "
                                              : "resume ";
  return {code, target, verb + target};
}

ActionOutcome speedSet(const std::string& worker, bool restore, double factor) {
  return {RE::SPEED_SET, worker,
          restore ? "restore " + worker + " to its own speed profile" : "slow " + worker + " to x" + std::to_string(factor)};
}

ActionOutcome restarted(const std::string& node, const std::string& how) {
  return {RE::RESTARTED, node, "restarted " + spokenNode(node) + how};
}

ActionOutcome restartFailed(const std::string& node, const std::string& why) {
  return {RE::RESTART_REFUSED, node, "restart of " + spokenNode(node) + " failed: " + why};
}

EventRow actionRow(std::int64_t runId, double t, EventKind kind, const std::string& node, ActionOutcome done) {
  return EventRow{runId, t, kind, node, std::move(done.text), done.code, std::move(done.target)};
}

}  // namespace dasp::net
