// SPDX-License-Identifier: MIT
// The wordings matched here are those of dasp up to schema version 2 (net/runner.cpp,
// net/server/ps_server.cpp, net/runner/event_recording.cpp, core/sim/sim_engine.cpp at the time); see
// core/events/legacy_events.h for why this is the only reader of `detail`.
#include "core/events/legacy_events.h"

#include <sstream>
#include <vector>

namespace dasp {

namespace {

using RE = v1::RunEvent;

bool startsWith(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string withoutPunctuation(std::string word) {
  while (!word.empty() && (word.back() == ';' || word.back() == ',' || word.back() == ':')) word.pop_back();
  return word;
}

// The node named after a verb: "restarted server-0; …" → "server-0", "restarted the
// evaluator" → "evaluator".
std::string nodeAfter(const std::vector<std::string>& w, std::size_t at) {
  if (w.size() <= at) return {};
  return withoutPunctuation(w[at] == "the" && w.size() > at + 1 ? w[at + 1] : w[at]);
}

// The runner's fault drills and live actions ("kill X", "restarted X; …", ...).
LegacyMeaning runnerAction(const std::string& detail) {
  const auto w = words(detail);
  if (w.size() < 2) return {};
  if (w.size() == 2 && w[0] == "kill") return {RE::KILL, w[1]};
  if (w.size() == 2 && w[0] == "pause") return {RE::PAUSE, w[1]};
  if (w.size() == 2 && w[0] == "resume") return {RE::RESUME, w[1]};
  if (w[0] == "restarted") return {RE::RESTARTED, nodeAfter(w, 1)};
  if (startsWith(detail, "restart of ")) return {RE::RESTART_REFUSED, nodeAfter(w, 2)};
  if (endsWith(detail, "; not restarted")) return {RE::RESTART_REFUSED, w[0]};
  if (w[0] == "slow" || (w[0] == "restore" && w.size() > 2)) return {RE::SPEED_SET, w[1]};
  if (detail.find(" is not running") != std::string::npos || startsWith(detail, "unknown ") ||
      startsWith(detail, "speed change of ") || startsWith(detail, "cannot change the speed of ")) {
    return {RE::NOT_APPLIED, {}};
  }
  return {};
}

// The server's "<step>: text" rows, the runner's chain changes and the engine's wording.
LegacyMeaning recoveryStep(const std::string& detail) {
  if (detail.find(" left the chain") != std::string::npos) return {RE::LEFT_CHAIN, {}};
  const auto colon = detail.find(": ");
  const std::string step = colon == std::string::npos ? std::string() : detail.substr(0, colon);
  const std::string text = colon == std::string::npos ? detail : detail.substr(colon + 2);
  const auto w = words(text);
  const std::string first = w.empty() ? std::string() : w[0];
  if (step == "promoted") return {RE::PROMOTED, first};
  if (step == "chain") return {endsWith(text, "is now the tail") ? RE::CHAIN_TAIL : RE::CHAIN_LINK, first};
  static const RE::Code kSteps[] = {RE::RESTORED,           RE::BACKLOG,  RE::CHECKPOINT, RE::CHECKPOINT_FAILED,
                                    RE::REPLICA_UNREACHABLE, RE::ADOPTING, RE::ADOPTED,    RE::STARTED_FRESH};
  for (RE::Code code : kSteps) {
    if (step == recoveryStepName(code)) return {code, {}};
  }
  // The engine (core/sim/sim_engine.cpp) wrote its modelled recovery without a step word.
  const auto all = words(detail);
  if (startsWith(detail, "promoted ") && all.size() > 1) return {RE::PROMOTED, all[1]};
  if (startsWith(detail, "restored checkpoint ")) return {RE::RESTORED, {}};
  if (detail.find("started from the initial parameters") != std::string::npos) return {RE::STARTED_FRESH, {}};
  return {};
}

}  // namespace

LegacyMeaning classifyLegacyEvent(EventKind kind, const std::string& detail) {
  switch (kind) {
    case RE::NODE:
      if (startsWith(detail, "UP")) return {RE::NODE_UP, {}};
      if (startsWith(detail, "DOWN")) return {RE::NODE_DOWN, {}};
      return {};
    case RE::FAULT:
    case RE::CONTROL:
      return runnerAction(detail);
    case RE::EXIT:
      return {RE::EXITED, {}};
    case RE::RECOVERY:
      return recoveryStep(detail);
    default:
      return {};
  }
}

}  // namespace dasp
