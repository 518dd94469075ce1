// SPDX-License-Identifier: MIT
#include "net/runner/run_drills.h"
#include "core/common/durations.h"

#include "net/client/ps_client.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace dasp::net {

namespace pb = dasp::ps::v1;
using RE = v1::RunEvent;

namespace {

// CPU-seconds a live process has used so far (/proc/PID/stat utime + stime); 0 if gone.
double processCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 3; i <= 13; ++i) fields >> skip;  // state … cmajflt
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  const long tick = sysconf(_SC_CLK_TCK);
  return tick > 0 ? (utime + stime) / static_cast<double>(tick) : 0;
}

}  // namespace

RunDrills::RunDrills(std::int64_t runId, const ExperimentSpec& spec, RunNodes& nodes, ChainMaster& chain,
                     const ServerControl& control, FaultTracker& tracker, RunRecorder& recorder,
                     std::function<void(const std::string&)> say)
    : m_runId(runId), m_spec(spec), m_nodes(nodes), m_chain(chain), m_control(control), m_tracker(tracker),
      m_recorder(recorder), m_say(std::move(say)),
      m_isChain(chainsWholeServers(spec)), m_isShardChain(chainsShards(spec)) {}

std::map<pid_t, double> RunDrills::cpuSnapshot() {
  std::map<pid_t, double> out;
  for (auto& [name, child] : m_nodes.processes()) {
    if (child->running() && !child->remote()) out[child->pid()] = processCpuSeconds(child->pid());
  }
  return out;
}

// Kill or pause a node, or cut a worker's link (SIGUSR1: its LinkCut, net/client/link_emulation.h).
ActionOutcome RunDrills::fire(int index, const v1::FaultSpec& fault, double t) {
  const std::string target = m_chain.resolve(fault.node());
  NodeProcess* child = m_nodes.process(target);
  if (child == nullptr || !child->running()) return notApplied(target + " is not running; fault not applied");
  m_cpuAtFault[index] = cpuSnapshot();
  // A killed shard of a chained sharded server recovers as a chain's head does: when its
  // replica is promoted (shard 0's PROMOTED event).
  m_tracker.fired(index, t, target, m_nodes.isServer(target), m_isChain || m_isShardChain, m_nodes.rankOf(target));
  switch (fault.action()) {
    case v1::FaultSpec::KILL:
      m_expectedExit.insert(target);
      child->signal(SIGKILL);
      stopShardZeroWith(target);
      return signalled(RE::KILL, target);
    case v1::FaultSpec::DISCONNECT:
      child->signal(SIGUSR1);
      return signalled(RE::DISCONNECT, target);
    default:
      child->signal(SIGSTOP);
      return signalled(RE::PAUSE, target);
  }
}

// A sharded server's shard 1..S-1 was killed: shard 0 goes with it (its decisions since
// the checkpoint every shard will restore are undone anyway) and restarts after it.
void RunDrills::stopShardZeroWith(const std::string& target) {
  if (m_spec.ps().shards() <= 1 || m_isShardChain || target == "server" || !m_nodes.isServer(target)) return;
  NodeProcess* shardZero = m_nodes.process("server");
  if (shardZero == nullptr || !shardZero->running()) return;
  m_expectedExit.insert("server");
  shardZero->signal(SIGKILL);
  m_stoppedWith[target] = "server";
  m_say("run " + std::to_string(m_runId) + ": server (shard 0) stopped with " + target +
        "; both restart, and every shard restores one version");
}

void RunDrills::fireDue(double t) {
  for (const auto& due : m_tracker.due(t)) {
    const std::string target = due.restart ? m_tracker.targetOf(due.index) : m_chain.resolve(due.spec.node());
    if (exitPending(target)) {
      m_tracker.defer(due.index, due.restart);  // due again at the next call
      continue;
    }
    const Report report{due.spec.node(), due.index};
    if (!due.restart) {
      reportDrill(report, t, fire(due.index, due.spec, t));
    } else if (due.spec.action() == v1::FaultSpec::PAUSE || due.spec.action() == v1::FaultSpec::DISCONNECT) {
      const bool pause = due.spec.action() == v1::FaultSpec::PAUSE;
      if (NodeProcess* child = m_nodes.process(target)) child->signal(pause ? SIGCONT : SIGUSR2);
      m_tracker.restarted(due.index, t);
      reportDrill(report, t, signalled(pause ? RE::RESUME : RE::RECONNECT, target));
    } else {
      m_tracker.restarted(due.index, t);  // before: the new server's first updates count
      if (auto what = restartNode(target, t, report)) reportRestart(report, t, std::move(*what));
    }
  }
}

void RunDrills::reportDrill(const Report& report, double t, ActionOutcome what) {
  if (report.drill < 0) {
    m_recorder.record(actionRow(m_runId, t, RE::CONTROL, report.node, std::move(what)));
    return;
  }
  m_say("run " + std::to_string(m_runId) + ": drill " + std::to_string(report.drill + 1) + " at " +
        std::to_string(t).substr(0, 6) + " s: " + what.text);
  m_recorder.record(actionRow(m_runId, t, RE::FAULT, report.node, std::move(what)));
}

void RunDrills::reportRestart(const Report& report, double t, ActionOutcome what) {
  if (report.drill >= 0) m_tracker.addDetail(report.drill, what.text);
  reportDrill(report, t, std::move(what));
}

std::optional<ActionOutcome> RunDrills::restartNode(const std::string& name, double t, const Report& report) {
  if (NodeProcess* child = m_nodes.process(name)) {
    if (child->running()) return ActionOutcome{RE::RESTART_REFUSED, name, name + " is still running; not restarted"};
    child->waitFor(5.0);
  }
  const auto mode = m_spec.recovery().mode();
  if (m_nodes.isServer(name)) {
    std::vector<std::string> extra{"--replica"};
    if (!m_isChain) {
      // The wall clock with it: the server counts its own start-up, libraries included.
      extra = {"--resume-at", std::to_string(t), "--resume-wall", std::to_string(wallClockSeconds())};
      if (mode == v1::RecoverySpec::CHECKPOINT) extra.push_back("--restore");
      if (mode == v1::RecoverySpec::STATELESS || mode == v1::RecoverySpec::LOCAL) extra.push_back("--adopt");
    }
    // A killed shard first, then shard 0 stopped with it: shard 0 asks every shard for
    // its checkpoints when it starts.
    std::vector<std::string> servers{name};
    if (auto with = m_stoppedWith.find(name); with != m_stoppedWith.end()) {
      servers.push_back(with->second);
      m_stoppedWith.erase(with);
    }
    for (const auto& server : servers) {
      if (NodeProcess* child = m_nodes.process(server); child != nullptr && server != name) child->waitFor(5.0);
      if (auto st = m_nodes.launchServer(server, m_nodes.portOf(server), extra); !st) {
        return restartFailed(server, st.message());
      }
      m_starting.push_back({server, report, deadlineIn<std::chrono::steady_clock>(m_nodes.startTimeoutS())});
    }
    return std::nullopt;
  }
  if (const int rank = m_nodes.rankOf(name); rank >= 0) {
    auto st = m_nodes.startWorker(rank);
    return st ? restarted(name, "; it rejoins with its rank") : restartFailed(name, st.message());
  }
  if (name == "evaluator") {
    auto st = m_nodes.startEvaluator();
    return st ? restarted(name, "") : restartFailed(name, st.message());
  }
  return notApplied("unknown node " + name);
}

ActionOutcome RunDrills::serverRestarted(const std::string& name, const std::string& address) {
  if (m_isChain) return m_chain.rejoin(name, address);
  return restarted(name, " (recovery " + recoveryName(m_spec.recovery().mode()) + ")");
}

void RunDrills::completeStarts(double t) {
  for (auto it = m_starting.begin(); it != m_starting.end();) {
    const auto start = m_nodes.serverStart(it->server);
    std::optional<ActionOutcome> what;
    if (start.state == RunNodes::ServerStart::State::Listening) {
      what = serverRestarted(it->server, start.address);
    } else if (start.state == RunNodes::ServerStart::State::Failed) {
      what = restartFailed(it->server, start.why);
    } else if (std::chrono::steady_clock::now() >= it->deadline) {
      what = restartFailed(it->server, it->server + " did not start: timed out");
    }
    if (!what) {
      ++it;
      continue;
    }
    const Report report = it->report;
    it = m_starting.erase(it);
    reportRestart(report, t, std::move(*what));
  }
}

void RunDrills::abandonStarts(double t) {
  for (const auto& start : m_starting) {
    reportRestart(start.report, t, restartFailed(start.server, start.server + " was still starting when the run ended"));
  }
  m_starting.clear();
}

ActionOutcome RunDrills::changeSpeed(const RunControl::Action& action, int rank) {
  if (rank < 0) return notApplied("cannot change the speed of " + action.node + ": not a worker");
  pb::ControlRequest creq;
  creq.set_action(pb::ControlRequest::SET_SLOWDOWN);
  creq.set_rank(rank);
  creq.set_slowdown(action.kind == RunControl::Kind::Restore ? 0.0 : action.factor);
  pb::ControlReply crep;
  auto st = m_control.head(creq, crep);
  if (!st.ok()) return notApplied("speed change of " + action.node + " failed: " + describe(st));
  return speedSet(action.node, action.kind == RunControl::Kind::Restore, action.factor);
}

// Pause or kill by hand: recorded like a drill.
ActionOutcome RunDrills::signalByHand(const RunControl::Action& action, double t) {
  const bool kill = action.kind == RunControl::Kind::Kill;
  const std::string target = m_chain.resolve(action.node);
  NodeProcess* child = m_nodes.process(target);
  if (child == nullptr || !child->running()) return notApplied(action.node + " is not running");
  v1::FaultSpec fault;
  fault.set_node(target);
  fault.set_action(kill ? v1::FaultSpec::KILL : v1::FaultSpec::PAUSE);
  fault.set_at_s(t);
  const int index = m_tracker.addManual(fault, t, target, m_nodes.isServer(target), m_isChain);
  m_cpuAtFault[index] = cpuSnapshot();
  if (kill) m_expectedExit.insert(target);
  child->signal(kill ? SIGKILL : SIGSTOP);
  if (kill) stopShardZeroWith(target);
  return signalled(kill ? RE::KILL : RE::PAUSE, target);
}

std::optional<ActionOutcome> RunDrills::apply(const RunControl::Action& action, double t) {
  switch (action.kind) {
    case RunControl::Kind::SlowDown:
    case RunControl::Kind::Restore:
      return changeSpeed(action, m_nodes.rankOf(action.node));
    case RunControl::Kind::Pause:
    case RunControl::Kind::Kill:
      return signalByHand(action, t);
    case RunControl::Kind::Resume: {
      NodeProcess* child = m_nodes.process(action.node);
      if (child == nullptr || !child->running()) return notApplied(action.node + " is not running");
      child->signal(SIGCONT);
      m_tracker.restartedManual(action.node, t);
      return signalled(RE::RESUME, action.node);
    }
    case RunControl::Kind::Restart:
      m_tracker.restartedManual(action.node, t);
      return restartNode(action.node, t, Report{action.node, -1});
  }
  return notApplied("unknown action");
}

void RunDrills::takeCpuFigures() {
  for (int index : m_tracker.resumedWithoutCpu()) {
    double cpu = 0;
    const auto& before = m_cpuAtFault[index];
    for (auto& [name, child] : m_nodes.processes()) {
      if (!child->running() || child->remote()) continue;  // a remote node's CPU is not visible here
      const auto was = before.find(child->pid());
      cpu += processCpuSeconds(child->pid()) - (was == before.end() ? 0.0 : was->second);
    }
    m_tracker.setCpu(index, cpu);
  }
}

}  // namespace dasp::net
