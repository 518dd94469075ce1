// SPDX-License-Identifier: MIT
#pragma once
// NodeStatusTracker: what a run's events say about each node — up, down (killed, exited,
// declared down, left the chain), paused, restarting (restarted, until the server says it
// restored / adopted / started fresh, or the worker rejoined), promoted (a chain replica
// that became the head) — with a chain replica's role (head / replica / tail), the last
// news of the node and, for a server, its last checkpoint. It reads only the typed fields
// of the events (kind, code, node, target); the detail text is kept as the news, for people.
//
// It is the one place that knows how events move a node's status: the GUI's live panel
// feeds it the run's events (live, and up to the cursor in a replay). Events are applied
// in the order given; the caller orders them by time.
//
// Threading: a plain value; used by one thread at a time.

#include "core/store/run_store.h"

#include <map>
#include <string>
#include <vector>

namespace dasp {

enum class NodeCondition : std::uint8_t {
  Running,     // as usual: a worker's lane state tells more; a server or evaluator is UP
  Down,
  Paused,
  Restarting,
  Promoted,
  Disconnected,  // its link to the servers is cut (a DISCONNECT drill) until RECONNECT
};
// "UP", "DOWN", "PAUSED", "RESTARTING", "PROMOTED", "CUT OFF".
const char* toString(NodeCondition condition);

enum class ChainRole : std::uint8_t { None, Head, Replica, Tail };
// "", "head", "replica", "tail".
const char* toString(ChainRole role);

struct NodeStatus {
  NodeCondition condition = NodeCondition::Running;
  ChainRole role = ChainRole::None;
  std::string news;        // "<t> s: <detail>" of the last event about the node
  std::string checkpoint;  // "<t> s: <detail>" of the last checkpoint written (a server)
  bool recovered = false;  // back (restored, adopted, rejoined) since it went down
  std::int64_t refused = 0;  // its pushes the server refused (not applied; it went on); not clips
};

class NodeStatusTracker {
 public:
  NodeStatusTracker() = default;
  // `services`: the run's server rows ("server", or "server-0" … head first, when `chain`)
  // and "evaluator"; a chain's replicas start as head, replica…, tail.
  NodeStatusTracker(const std::vector<std::string>& services, bool chain);

  // Updates the status of the node(s) the event is about.
  void apply(const EventRow& e);

  // Every node an event was about, and the services.
  const std::map<std::string, NodeStatus>& nodes() const { return m_nodes; }
  // The node's status; null when no event was about it and it is not a service.
  const NodeStatus* find(const std::string& node) const;

 private:
  // "server" of a chain is its current head.
  std::string resolve(const std::string& name) const;
  bool isServer(const std::string& name) const;
  void applyAction(const EventRow& e, const std::string& news);
  void applyRecovery(const EventRow& e, const std::string& news);

  bool m_chain = false;
  std::map<std::string, NodeStatus> m_nodes;
};

}  // namespace dasp
