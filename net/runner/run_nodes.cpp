// SPDX-License-Identifier: MIT
#include "net/runner/run_nodes.h"
#include "core/common/durations.h"

#include "net/security/bind_address.h"

#include <signal.h>

#include <algorithm>
#include <chrono>

namespace dasp::net {

RunNodes::RunNodes(Config config, OutputPump& pump, RunRecorder& recorder, NodeLines& lines)
    : m_config(std::move(config)), m_pump(pump), m_recorder(recorder), m_lines(lines) {}

bool RunNodes::isServer(const std::string& node) const {
  const auto& s = m_config.serverNames;
  return std::find(s.begin(), s.end(), node) != s.end();
}

const char* RunNodes::roleOf(const std::string& node) const {
  return isServer(node) ? "server" : node == "evaluator" ? "evaluator" : "worker";
}

int RunNodes::rankOf(const std::string& node) const {
  const auto& w = m_config.workerNames;
  const auto it = std::find(w.begin(), w.end(), node);
  return it == w.end() ? -1 : static_cast<int>(it - w.begin());
}

std::string RunNodes::nameOf(int rank) const {
  const auto& w = m_config.workerNames;
  return rank >= 0 && rank < static_cast<int>(w.size()) ? w[static_cast<std::size_t>(rank)] : std::string("server");
}

Status RunNodes::launch(const std::string& name, const std::vector<std::string>& args) {
  NodeStart start;
  start.name = name;
  start.host = m_config.placement->hostOf(name);
  start.args = args;
  start.env = m_config.env;
  if (const auto slot = m_config.placement->gpuSlot.find(name); slot != m_config.placement->gpuSlot.end()) {
    start.env["DASP_GPU_SLOT"] = std::to_string(slot->second);
  }
  auto child = m_config.launcher->start(start);
  if (!child) return child.status();
  m_pump.add(name, child.value()->stdoutFd(), false);
  m_pump.add(name, child.value()->stderrFd(), true);
  NodeRow row;
  row.runId = m_config.runId;
  row.node = name;
  row.role = roleOf(name);
  row.host = start.host.name();
  row.pid = child.value()->pid();
  m_recorder.record(row);
  m_children[name] = std::move(child).value();
  return Status::ok();
}

std::string RunNodes::bindAddressOf(const std::string& name) const {
  return serverBindAddress(*m_config.spec,
                           m_config.placement->placed ? m_config.placement->hostOf(name).address() : std::string());
}

Status RunNodes::launchServer(const std::string& name, const std::string& port, const std::vector<std::string>& extra) {
  {
    std::lock_guard<std::mutex> lock(m_lines.mu);
    m_lines.listen.erase(name);
  }
  // The server binds to its host's address (127.0.0.1 without placement) unless the
  // spec says otherwise; nodes dial that host.
  const auto& spec = *m_config.spec;
  const auto& host = m_config.placement->hostOf(name);
  std::vector<std::string> args{"server", "--spec", m_config.specPathOn[host.name()], "--workers",
                                std::to_string(m_config.workerNames.size()), "--bind", bindAddressOf(name), "--port",
                                port, "--name", name};
  // launch.payload_port: replica i's payload socket on payload_port + i, on every start
  // (a restarted server keeps it, as it keeps its port).
  const int payloadPort = spec.launch().payload_port();
  const auto index = std::find(m_config.serverNames.begin(), m_config.serverNames.end(), name) - m_config.serverNames.begin();
  if (payloadPort > 0) args.insert(args.end(), {"--payload-port", std::to_string(payloadPort + index)});
  args.insert(args.end(), m_config.tlsServerArgs.begin(), m_config.tlsServerArgs.end());
  const int shards = spec.ps().shards();
  if (!m_config.checkpointDir.empty()) {
    // Each shard checkpoints its range in a directory of its own (two may share a host).
    const bool ownDir = shards > 1 && index > 0;
    args.insert(args.end(), {"--checkpoint-dir", m_config.checkpointDir + (ownDir ? "/" + name : std::string())});
  }
  if (shards > 1) {
    // Shards 1..S-1 (and their replicas) are started first; shard 0 then streams its
    // decisions to each of them.
    const ShardProcess me = shardProcessOf(name);
    args.insert(args.end(), {"--shards", std::to_string(shards), "--shard", std::to_string(me.shard)});
    if (me.replica) args.push_back("--replica");
    if (name == m_config.serverNames.front()) {
      std::string peers, replicas;
      for (std::size_t k = 1; k < m_config.serverNames.size(); ++k) {
        const std::string& other = m_config.serverNames[k];
        const ShardProcess it = shardProcessOf(other);
        if (it.replica) {
          replicas += (replicas.empty() ? "" : ",") + std::to_string(it.shard) + "=" + m_serverAddress[other];
        } else {
          peers += (peers.empty() ? "" : ",") + m_serverAddress[other];
        }
      }
      args.insert(args.end(), {"--shard-peers", peers});
      if (!replicas.empty()) args.insert(args.end(), {"--shard-replicas", replicas});
    }
  }
  args.insert(args.end(), extra.begin(), extra.end());
  const auto record = recordArgs(name);
  args.insert(args.end(), record.begin(), record.end());
  return launch(name, args);
}

RunNodes::ServerStart RunNodes::serverStart(const std::string& name) {
  NodeProcess* child = process(name);
  if (child == nullptr) return {ServerStart::State::Failed, "", name + " was never started"};
  child->poll();
  std::lock_guard<std::mutex> lock(m_lines.mu);
  const auto listening = m_lines.listen.find(name);
  if (listening != m_lines.listen.end() && !listening->second.empty()) {
    const auto& host = m_config.placement->hostOf(name);
    const std::string& at = listening->second;
    m_serverAddress[name] = serverDialAddress(bindAddressOf(name), host, at.substr(at.rfind(':') + 1));
    return {ServerStart::State::Listening, m_serverAddress[name], ""};
  }
  if (child->running()) return {ServerStart::State::Starting, "", ""};
  return {ServerStart::State::Failed, "",
          name + " did not start: " + child->exitInfo()->describe() +
              (m_lines.serverStderrTail.empty() ? "" : " (" + m_lines.serverStderrTail + ")")};
}

Result<std::string> RunNodes::startServer(const std::string& name, const std::string& port,
                                          const std::vector<std::string>& extra) {
  if (auto st = launchServer(name, port, extra); !st) return st;
  const auto until = deadlineIn<std::chrono::steady_clock>(m_config.startTimeoutS);
  while (true) {
    auto start = serverStart(name);
    if (start.state == ServerStart::State::Listening) return start.address;
    if (start.state == ServerStart::State::Failed) return Status::error(start.why);
    if (std::chrono::steady_clock::now() >= until) return Status::error(name + " did not start: timed out");
    std::unique_lock<std::mutex> lock(m_lines.mu);
    m_lines.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
}

Status RunNodes::startServers(bool chain) {
  const auto& names = m_config.serverNames;
  for (int i = static_cast<int>(names.size()) - 1; i >= 0; --i) {
    std::vector<std::string> extra;
    if (chain && i > 0) extra.push_back("--replica");
    if (chain && i + 1 < static_cast<int>(names.size())) {
      extra.insert(extra.end(), {"--chain-next", m_serverAddress[names[static_cast<std::size_t>(i) + 1]]});
    }
    // launch.server_port: replica i listens on server_port + i (0: any free port).
    const int fixedPort = m_config.spec->launch().server_port();
    auto started = startServer(names[static_cast<std::size_t>(i)],
                               fixedPort > 0 ? std::to_string(fixedPort + i) : std::string("0"), extra);
    if (!started) return started.status();
  }
  // Clients dial the chain's servers in order, or shard 0 (which names the other shards).
  m_serverList.clear();
  for (const auto& name : names) {
    if (!m_serverList.empty() && !chain) break;
    m_serverList += (m_serverList.empty() ? "" : ",") + m_serverAddress[name];
  }
  return Status::ok();
}

std::string RunNodes::portOf(const std::string& server) {
  const auto& a = m_serverAddress[server];
  return a.substr(a.rfind(':') + 1);
}

// cluster.transport for one worker: a worker on another host than the head server always
// uses TCP; on its host AUTO means shared memory where it can be had (else TCP).
std::string RunNodes::transportOf(int rank) const {
  const std::string& worker = m_config.workerNames[static_cast<std::size_t>(rank)];
  if (m_config.placement->hostOf(worker).name() != m_config.placement->hostOf(m_config.serverNames.front()).name()) {
    return "tcp";
  }
  switch (m_config.spec->cluster().transport()) {
    case v1::ClusterSpec::TCP: return "tcp";
    case v1::ClusterSpec::UNIX: return "unix";
    case v1::ClusterSpec::SHM: return "shm";
    default: return "auto";
  }
}

std::vector<std::string> RunNodes::workerArgs(int rank) const {
  std::vector<std::string> args{"worker", "--server", m_serverList, "--rank", std::to_string(rank), "--name",
                                m_config.workerNames[static_cast<std::size_t>(rank)], "--connect-timeout",
                                std::to_string(m_config.spec->recovery().reconnect_timeout_s()),
                                "--transport", transportOf(rank)};
  args.insert(args.end(), m_config.tlsClientArgs.begin(), m_config.tlsClientArgs.end());
  return args;
}

std::vector<std::string> RunNodes::evaluatorArgs() const {
  std::vector<std::string> args{"evaluator", "--server", m_serverList, "--connect-timeout",
                                std::to_string(m_config.spec->recovery().reconnect_timeout_s())};
  args.insert(args.end(), m_config.tlsClientArgs.begin(), m_config.tlsClientArgs.end());
  return args;
}

std::vector<std::string> RunNodes::recordArgs(const std::string& name) {
  if (m_config.recordDir.empty()) return {};
  const int n = m_starts[name]++;
  return {"--record", m_config.recordDir + "/" + name + "." + std::to_string(n) + ".record"};
}

Status RunNodes::startWorker(int rank) {
  auto args = workerArgs(rank);
  const auto record = recordArgs(nameOf(rank));
  args.insert(args.end(), record.begin(), record.end());
  return launch(nameOf(rank), args);
}

Status RunNodes::startEvaluator() { return launch("evaluator", evaluatorArgs()); }

NodeProcess* RunNodes::process(const std::string& name) {
  const auto it = m_children.find(name);
  return it == m_children.end() ? nullptr : it->second.get();
}

void RunNodes::finish(double graceS, double serverGraceS) {
  const auto until = deadlineIn<std::chrono::steady_clock>(graceS);
  auto left = [&until] {
    return std::max(0.0, std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count());
  };
  for (auto& [name, child] : m_children) {
    if (isServer(name)) continue;
    if (!child->waitFor(left())) child->signal(SIGKILL);
  }
  for (auto& [name, child] : m_children) {
    if (isServer(name)) continue;
    child->waitFor(5.0);
  }
  // The servers in their order: shard 0 (or the chain's head) first, so that every other
  // shard has carried out its whole log when it is stopped.
  for (const auto& name : m_config.serverNames) {
    NodeProcess* child = process(name);
    if (child == nullptr) continue;
    child->signal(SIGTERM);
    if (!child->waitFor(serverGraceS)) {
      child->signal(SIGKILL);
      child->waitFor(5.0);
    }
  }
}

void RunNodes::recordFinalRows() {
  for (auto& [name, child] : m_children) {
    NodeRow row;
    row.runId = m_config.runId;
    row.node = name;
    row.role = roleOf(name);
    row.host = m_config.placement->hostOf(name).name();
    row.pid = child->pid();
    if (const auto& e = child->exitInfo()) {
      row.exitCode = e->exitCode;
      row.signal = e->signal;
      row.cpuS = e->cpuS;
      row.maxRssKb = e->maxRssKb;
    }
    {
      std::lock_guard<std::mutex> lock(m_lines.mu);
      if (auto it = m_lines.bytes.find(name); it != m_lines.bytes.end()) {
        row.bytesSent = it->second.first;
        row.bytesReceived = it->second.second;
      }
      if (auto it = m_lines.slurmSteps.find(name); it != m_lines.slurmSteps.end()) row.slurmStep = it->second;
    }
    m_recorder.record(row);
  }
}

}  // namespace dasp::net
