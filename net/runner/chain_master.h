// SPDX-License-Identifier: MIT
#pragma once
// Internal to the runner (net/run_session.*): the runner as the chain's configuration
// master.

#include "core/store/run_store.h"
#include "net/runner/action_outcome.h"
#include "net/runner/run_nodes.h"
#include "net/runner/run_watch.h"

#include <functional>
#include <string>
#include <vector>

namespace dasp::net {

// The live servers of a run in chain order (head first; one server without a chain) and
// the reconfiguration when one leaves or comes back: a replica that exited leaves the
// chain; if it was the head, the next one is promoted (its state is what the chain
// acknowledged) and the event stream follows it, else its predecessor forwards to its
// successor. A restarted replica rejoins at the tail and catches up from it.
// Threading: the runner's thread.
class ChainMaster {
 public:
  ChainMaster(std::int64_t runId, RunNodes& nodes, EventWatcher& watcher, const ServerControl& control,
              RunRecorder& recorder, std::function<void(const std::string&)> say);

  void reset(std::vector<std::string> order) { m_order = std::move(order); }
  // The node a fault on "server" means: the head now.
  std::string resolve(const std::string& node) const { return node == "server" ? m_order.front() : node; }
  // `name` exited at run time `t`. False when no replica is left.
  bool leave(const std::string& name, double t);
  // Restarted replica `name`, listening at `address`, is linked after the tail.
  ActionOutcome rejoin(const std::string& name, const std::string& address);

 private:
  std::int64_t m_runId;
  RunNodes& m_nodes;
  EventWatcher& m_watcher;
  const ServerControl& m_control;
  RunRecorder& m_recorder;
  std::function<void(const std::string&)> m_say;
  std::vector<std::string> m_order;
};

}  // namespace dasp::net
