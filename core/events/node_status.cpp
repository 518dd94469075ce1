// SPDX-License-Identifier: MIT
#include "core/events/node_status.h"

#include <cstdio>

namespace dasp {

namespace {
using RE = v1::RunEvent;
}  // namespace

const char* toString(NodeCondition condition) {
  switch (condition) {
    case NodeCondition::Running: return "UP";
    case NodeCondition::Down: return "DOWN";
    case NodeCondition::Paused: return "PAUSED";
    case NodeCondition::Restarting: return "RESTARTING";
    case NodeCondition::Promoted: return "PROMOTED";
    case NodeCondition::Disconnected: return "CUT OFF";
  }
  return "?";
}

const char* toString(ChainRole role) {
  switch (role) {
    case ChainRole::None: return "";
    case ChainRole::Head: return "head";
    case ChainRole::Replica: return "replica";
    case ChainRole::Tail: return "tail";
  }
  return "";
}

NodeStatusTracker::NodeStatusTracker(const std::vector<std::string>& services, bool chain) : m_chain(chain) {
  const std::size_t replicas = services.empty() ? 0 : services.size() - 1;  // the last is the evaluator
  for (std::size_t i = 0; i < services.size(); ++i) {
    NodeStatus& st = m_nodes[services[i]];
    if (!chain || i >= replicas) continue;
    st.role = i == 0 ? ChainRole::Head : i + 1 == replicas ? ChainRole::Tail : ChainRole::Replica;
  }
}

const NodeStatus* NodeStatusTracker::find(const std::string& node) const {
  const auto it = m_nodes.find(node);
  return it == m_nodes.end() ? nullptr : &it->second;
}

std::string NodeStatusTracker::resolve(const std::string& name) const {
  if (!m_chain || name != "server") return name;
  for (const auto& [node, st] : m_nodes) {
    if (st.role == ChainRole::Head) return node;
  }
  return name;
}

bool NodeStatusTracker::isServer(const std::string& name) const {
  return name == "server" || name.rfind("server-", 0) == 0;
}

void NodeStatusTracker::apply(const EventRow& e) {
  char at[48];
  std::snprintf(at, sizeof at, "%.1f s: ", e.tS);
  const std::string news = at + e.detail;
  switch (e.kind) {
    case RE::NODE: {
      NodeStatus& st = m_nodes[resolve(e.node)];
      if (e.code == RE::NODE_DOWN) {
        st.condition = NodeCondition::Down;
      } else if (e.code == RE::NODE_UP) {
        st.condition = NodeCondition::Running;
        st.recovered = true;
      }
      st.news = news;
      return;
    }
    case RE::FAULT:
    case RE::CONTROL:
      applyAction(e, news);
      return;
    case RE::EXIT: {
      NodeStatus& st = m_nodes[resolve(e.node)];
      st.condition = NodeCondition::Down;
      st.recovered = false;
      st.news = news;
      return;
    }
    case RE::RECOVERY:
      applyRecovery(e, news);
      return;
    case RE::REJECT: {
      if (e.node == "server" || e.node == "cluster") return;  // a refused call, not a worker's push
      NodeStatus& st = m_nodes[resolve(e.node)];
      if (e.code != RE::GRADIENT_CLIPPED) ++st.refused;  // a clipped gradient was applied
      st.news = news;
      return;
    }
    default:
      return;
  }
}

// A drill or live action (the runner's, or the engine's drills).
void NodeStatusTracker::applyAction(const EventRow& e, const std::string& news) {
  const std::string node = resolve(e.subject());
  switch (e.code) {
    case RE::KILL:
    case RE::PAUSE:
    case RE::RESUME:
    case RE::DISCONNECT:
    case RE::RECONNECT: {
      NodeStatus& st = m_nodes[node];
      st.condition = e.code == RE::KILL         ? NodeCondition::Down
                     : e.code == RE::PAUSE      ? NodeCondition::Paused
                     : e.code == RE::DISCONNECT ? NodeCondition::Disconnected
                                                : NodeCondition::Running;
      if (e.code == RE::KILL) st.recovered = false;
      st.news = news;
      return;
    }
    case RE::RESTARTED: {
      NodeStatus& st = m_nodes[node];
      st.news = news;
      if (m_chain && isServer(node)) {
        st.condition = NodeCondition::Running;  // rejoined the chain at the tail
        for (auto& [name, other] : m_nodes) {
          if (other.role == ChainRole::Tail) other.role = ChainRole::Replica;
        }
        st.role = ChainRole::Tail;
      } else if (node == "evaluator" || st.recovered) {
        st.condition = NodeCondition::Running;  // (the server's news of its recovery may come first)
      } else {
        st.condition = NodeCondition::Restarting;  // until the server recovered / the worker rejoined
      }
      return;
    }
    case RE::RESTART_REFUSED:
      if (auto it = m_nodes.find(node); it != m_nodes.end()) it->second.news = news;
      return;
    default:
      return;
  }
}

// The server's recovery steps, and the runner's chain changes as the chain's master.
void NodeStatusTracker::applyRecovery(const EventRow& e, const std::string& news) {
  switch (e.code) {
    case RE::LEFT_CHAIN: {
      NodeStatus& st = m_nodes[e.node];
      st.condition = NodeCondition::Down;
      st.role = ChainRole::None;
      st.news = news;
      return;
    }
    case RE::PROMOTED: {
      for (auto& [name, other] : m_nodes) {
        if (other.role == ChainRole::Head) other.role = ChainRole::Replica;
      }
      NodeStatus& st = m_nodes[e.subject()];
      st.condition = NodeCondition::Promoted;
      st.role = ChainRole::Head;
      st.news = news;
      return;
    }
    case RE::CHAIN_TAIL:
    case RE::CHAIN_LINK:
      if (auto it = m_nodes.find(e.subject()); it != m_nodes.end()) {
        if (e.code == RE::CHAIN_TAIL && it->second.role != ChainRole::Head) it->second.role = ChainRole::Tail;
        it->second.news = news;
      }
      return;
    default:
      break;
  }
  NodeStatus& st = m_nodes[resolve(e.node)];
  if (e.code == RE::CHECKPOINT) {  // routine: kept apart from the last news
    st.checkpoint = news;
    return;
  }
  st.news = news;
  if (e.code == RE::RESTORED || e.code == RE::ADOPTED || e.code == RE::STARTED_FRESH) {
    st.condition = NodeCondition::Running;
    st.recovered = true;
  } else if (e.code == RE::ADOPTING) {
    st.condition = NodeCondition::Restarting;
  }
}

}  // namespace dasp
