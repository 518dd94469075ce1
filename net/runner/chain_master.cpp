// SPDX-License-Identifier: MIT
#include "net/runner/chain_master.h"

#include "net/client/ps_client.h"

#include <algorithm>

namespace dasp::net {

namespace pb = dasp::ps::v1;

ChainMaster::ChainMaster(std::int64_t runId, RunNodes& nodes, EventWatcher& watcher, const ServerControl& control,
                         RunRecorder& recorder, std::function<void(const std::string&)> say)
    : m_runId(runId), m_nodes(nodes), m_watcher(watcher), m_control(control), m_recorder(recorder),
      m_say(std::move(say)) {}

bool ChainMaster::leave(const std::string& name, double t) {
  const auto pos = std::find(m_order.begin(), m_order.end(), name);
  if (pos == m_order.end()) return true;
  const bool wasHead = pos == m_order.begin();
  const auto index = static_cast<std::size_t>(pos - m_order.begin());
  m_order.erase(pos);
  if (m_order.empty()) return false;
  pb::ControlReply rep;
  pb::ControlRequest req;
  std::string what;
  if (wasHead) {
    req.set_action(pb::ControlRequest::PROMOTE);
    req.set_t_s(t);
    auto st = m_control.at(m_nodes.addressOf(m_order.front()), req, rep);
    what = st.ok() ? name + " left the chain; " + rep.detail()
                   : name + " left the chain; promoting " + m_order.front() + " failed: " + describe(st);
    m_watcher.setHead(m_nodes.addressOf(m_order.front()));
  } else {
    req.set_action(pb::ControlRequest::SET_NEXT);
    req.set_address(index < m_order.size() ? m_nodes.addressOf(m_order[index]) : std::string());
    auto st = m_control.at(m_nodes.addressOf(m_order[index - 1]), req, rep);
    what = st.ok() ? name + " left the chain; " + rep.detail()
                   : name + " left the chain; re-linking " + m_order[index - 1] + " failed: " + describe(st);
  }
  m_say("run " + std::to_string(m_runId) + ": " + what);
  m_recorder.record(EventRow{m_runId, t, v1::RunEvent::RECOVERY, name, what, v1::RunEvent::LEFT_CHAIN, {}});
  return true;
}

ActionOutcome ChainMaster::rejoin(const std::string& name, const std::string& address) {
  pb::ControlRequest req;
  req.set_action(pb::ControlRequest::SET_NEXT);
  req.set_address(address);
  pb::ControlReply rep;
  const std::string tail = m_order.back();
  auto st = m_control.at(m_nodes.addressOf(tail), req, rep);
  if (!st.ok()) return restarted(name, ", but linking it after " + tail + " failed: " + describe(st));
  m_order.push_back(name);
  return restarted(name, "; it rejoins the chain at the tail after " + tail + " and catches up");
}

}  // namespace dasp::net
