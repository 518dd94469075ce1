// SPDX-License-Identifier: MIT
#pragma once
// Internal to the runner (net/run_session.*): faults on a running experiment.

#include "core/store/run_store.h"
#include "net/runner/action_outcome.h"
#include "net/runner/chain_master.h"
#include "net/runner/fault_tracker.h"
#include "net/runner/run_nodes.h"
#include "net/runner/run_watch.h"
#include "net/runner/runner.h"

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dasp::net {

// The faults of a run: the spec's drills as they fall due (kill or pause a node, then
// restart or resume it) and the GUI's live actions (a worker's speed through the server,
// pause / resume / kill by signal, restart), each kept in the FaultTracker with the CPU
// the cluster spent until it recovered. A restarted server resumes the run as
// spec.recovery says; a chain replica rejoins at the tail.
// A server's restart does not hold up the runner's loop: its process starts, and the
// restart is completed (the chain re-linked, the event recorded) by completeStarts() once
// it listens. A process takes up to a second to start on a loaded machine, and meanwhile
// the loop must still fire the next drill, promote a replica when a head dies and stop
// the run on time. A drill on a node whose kill is still in flight (its exit not yet
// handled) waits for the exit: in a chain, "server" then names the promoted head.
// Threading: the runner's thread.
class RunDrills {
 public:
  RunDrills(std::int64_t runId, const ExperimentSpec& spec, RunNodes& nodes, ChainMaster& chain,
            const ServerControl& control, FaultTracker& tracker, RunRecorder& recorder,
            std::function<void(const std::string&)> say);

  // Carries out the drills due at run time `t`, each recorded as a "fault" event.
  void fireDue(double t);
  // A live action from the GUI: what was done (or why not); none while a server it
  // restarts is starting (completeStarts() records the outcome).
  std::optional<ActionOutcome> apply(const RunControl::Action& action, double t);
  // Completes the server restarts under way: a server that listens rejoins (a chain
  // replica at the tail) and its restart is recorded; one that exited or did not listen
  // in time is recorded as a failed restart.
  void completeStarts(double t);
  // The run ends: the restarts still under way are recorded as not completed.
  void abandonStarts(double t);
  // The CPU figures of drills whose recovery was seen since the last call.
  void takeCpuFigures();
  // `name` was killed on purpose (a drill or by hand); true once per such kill.
  bool takeExpectedExit(const std::string& name) { return m_expectedExit.erase(name) > 0; }
  // `name` (a sharded server's shard 0) was stopped with a killed shard and restarts with it.
  bool restartsWithAShard(const std::string& name) const {
    return std::any_of(m_stoppedWith.begin(), m_stoppedWith.end(), [&](const auto& s) { return s.second == name; });
  }

 private:
  // Where a restart's outcome is reported: a drill's "fault" event (and its detail), or
  // a live action's "control" event.
  struct Report {
    std::string node;  // the node the drill or action named
    int drill = -1;    // the drill's index; -1 for a live action
  };
  struct PendingStart {
    std::string server;
    Report report;
    std::chrono::steady_clock::time_point deadline;
  };
  ActionOutcome fire(int index, const v1::FaultSpec& fault, double t);
  void stopShardZeroWith(const std::string& target);
  // The restart's outcome, or none while a server it started is starting.
  std::optional<ActionOutcome> restartNode(const std::string& name, double t, const Report& report);
  // A listening server takes its place: a chain replica at the tail, any other as recovery says.
  ActionOutcome serverRestarted(const std::string& name, const std::string& address);
  // A drill's outcome: said and recorded as a "fault" event (a live action's: recorded).
  void reportDrill(const Report& report, double t, ActionOutcome what);
  // The same, and a drill's restart also goes into its record's detail.
  void reportRestart(const Report& report, double t, ActionOutcome what);
  // Killed on purpose, and its exit not yet handled.
  bool exitPending(const std::string& name) const { return m_expectedExit.count(name) > 0; }
  ActionOutcome changeSpeed(const RunControl::Action& action, int rank);
  ActionOutcome signalByHand(const RunControl::Action& action, double t);
  std::map<pid_t, double> cpuSnapshot();

  std::int64_t m_runId;
  const ExperimentSpec& m_spec;
  RunNodes& m_nodes;
  ChainMaster& m_chain;
  const ServerControl& m_control;
  FaultTracker& m_tracker;
  RunRecorder& m_recorder;
  std::function<void(const std::string&)> m_say;
  bool m_isChain;       // a chain of whole servers (ChainMaster)
  bool m_isShardChain;  // chain replication per shard (shard 0 promotes a shard's replica)
  std::map<int, std::map<pid_t, double>> m_cpuAtFault;  // drill index -> CPU-s by pid at the fault
  std::set<std::string> m_expectedExit;
  // A sharded server: a killed shard -> shard 0, stopped with it (its decisions, and the
  // version it would serve, are rolled back at the restart), restarted after it.
  std::map<std::string, std::string> m_stoppedWith;
  std::vector<PendingStart> m_starting;  // server restarts whose process has not listened yet
};

}  // namespace dasp::net
