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

#include <functional>
#include <map>
#include <set>
#include <string>

namespace dasp::net {

// The faults of a run: the spec's drills as they fall due (kill or pause a node, then
// restart or resume it) and the GUI's live actions (a worker's speed through the server,
// pause / resume / kill by signal, restart), each kept in the FaultTracker with the CPU
// the cluster spent until it recovered. A restarted server resumes the run as
// spec.recovery says; a chain replica rejoins at the tail. Threading: the runner's thread.
class RunDrills {
 public:
  RunDrills(std::int64_t runId, const ExperimentSpec& spec, RunNodes& nodes, ChainMaster& chain,
            const ServerControl& control, FaultTracker& tracker, RunRecorder& recorder,
            std::function<void(const std::string&)> say);

  // Carries out the drills due at run time `t`, each recorded as a "fault" event.
  void fireDue(double t);
  // A live action from the GUI: what was done (or why not).
  ActionOutcome apply(const RunControl::Action& action, double t);
  // The CPU figures of drills whose recovery was seen since the last call.
  void takeCpuFigures();
  // `name` was killed on purpose (a drill or by hand); true once per such kill.
  bool takeExpectedExit(const std::string& name) { return m_expectedExit.erase(name) > 0; }

 private:
  ActionOutcome fire(int index, const v1::FaultSpec& fault, double t);
  ActionOutcome restartNode(const std::string& name, double t);
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
  bool m_isChain;
  std::map<int, std::map<pid_t, double>> m_cpuAtFault;  // drill index -> CPU-s by pid at the fault
  std::set<std::string> m_expectedExit;
};

}  // namespace dasp::net
