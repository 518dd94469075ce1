// SPDX-License-Identifier: MIT
#pragma once
// Internal to the runner: one distributed run from start to summary (runExperiment in
// net/runner/runner.h is its public face).

#include "core/store/run_store.h"
#include "net/runner/chain_master.h"
#include "net/runner/event_recording.h"
#include "net/runner/fault_tracker.h"
#include "net/launch/launcher.h"
#include "net/launch/slurm_allocation.h"
#include "net/security/node_security.h"
#include "net/launch/process.h"
#include "net/runner/run_drills.h"
#include "net/runner/run_nodes.h"
#include "net/runner/run_watch.h"
#include "net/runner/runner.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dasp::net {

// One distributed run, in the order run() goes through it:
//   open()        the run's row and recorder (a run we cannot record is not started);
//   prepare()     its directory, node security (token, TLS), the launcher and hosts;
//   startNodes()  the servers (RunNodes), the event stream (EventWatcher), the workers
//                 and the evaluator;
//   watch()       until the stop condition, with the drills and live actions (RunDrills),
//                 node exits and chain reconfiguration (ChainMaster);
//   stopNodes()   stop through the server, the evaluator's final evaluation, shut-down;
//   summarize()   the figures, recovery metrics and final rows into the store.
// Members are declared so that they are destroyed in a safe order: the processes before
// the output pump that reads them, and the launcher (it removes remote run directories)
// last. Threading: run() on the caller's thread; the watch thread and the pump's thread
// only reach the recorder, the tracker, the clock and NodeLines (each thread-safe).
class RunSession {
 public:
  RunSession(const ExperimentSpec& spec, const RunnerOptions& options);
  ~RunSession();
  Result<RunSummary> run();

 private:
  Status checkFaultNodes() const;
  Status open();
  Status prepare();
  Status prepareSecurity();
  Status prepareLauncher();
  Status startNodes();
  std::string watch();  // the stop reason; m_failure when the run failed
  void applyLiveActions(double runT);
  void handleExits(double runT);
  void handleExit(const std::string& name, NodeProcess& child, double runT);
  // Cancelled by a signal: the stop reason, or the flag set since (scancel signals the
  // runner and every job step at once, and a step's exit may be seen first).
  bool isCancelled(const std::string& stopReason) const;
  void stopNodes(bool cancelled);
  // The run store's disk filled up, or has room again: said and recorded as an event (held
  // with the other rows until it can be written).
  void noteStoreHealth(double runT);
  Result<RunSummary> summarize(const std::string& stopReason);
  // The run failed before it trained: records it, cleans up, names the run.
  Status failRun(const std::string& problem);
  void onLine(const std::string& node, bool isStderr, const std::string& line);
  void relayOfflineWork(const std::string& node, const RecoveryReport& report, double now);
  std::optional<SummaryRow> measuredProfileRow();
  void say(const std::string& text) const;
  bool isServer(const std::string& node) const;
  // Chain replication per shard: shard 0 goes on without this shard or replica (a replica
  // takes a shard's place; shard 0 itself exits when none is left).
  bool shardChainGoesOn(const std::string& server) const;

  ExperimentSpec m_spec;  // a SLURM spec without hosts gets its allocation's (run())
  const RunnerOptions& m_options;
  std::vector<std::string> m_workerNames;
  std::vector<std::string> m_serverNames;
  bool m_chain = false;  // a chain of whole servers (a sharded server's chains are its shards')

  std::unique_ptr<RunStore> m_store;
  std::unique_ptr<RunRecorder> m_recorder;
  std::int64_t m_runId = 0;
  std::string m_recovery;  // recoveryName of the spec's mode
  std::string m_dir;       // the run's local directory
  std::optional<Placement> m_placement;
  NodeSecurity m_security;
  std::map<std::string, std::string> m_nodeEnv;  // every node's environment (the run token)
  std::unique_ptr<SlurmAllocation> m_allocation;  // the hosts-less SLURM run's own, until the launcher takes it
  std::unique_ptr<NodeLauncher> m_launcher;       // outlives the processes (see above)
  std::map<std::string, std::string> m_specPathOn;

  RunClock m_clock;
  FaultTracker m_tracker;
  NodeLines m_lines;
  std::unique_ptr<OutputPump> m_pump;
  std::unique_ptr<RunNodes> m_nodes;
  std::unique_ptr<EventRecording> m_recording;
  std::unique_ptr<EventWatcher> m_watcher;
  // A sharded server's shards 1..S-1 and their replicas: their SHARD_LOAD events (shard 0's
  // come with the rest).
  std::vector<std::unique_ptr<EventWatcher>> m_shardWatchers;
  std::unique_ptr<ServerControl> m_control;
  std::unique_ptr<ChainMaster> m_chainMaster;
  std::unique_ptr<RunDrills> m_drills;

  std::string m_failure;
  std::map<std::string, bool> m_reportedExit;
  bool m_storeFull = false;
};

}  // namespace dasp::net
