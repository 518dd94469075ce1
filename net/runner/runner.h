// SPDX-License-Identifier: MIT
#pragma once
// ExperimentRunner: the single owner of a distributed run. It starts `dasp server` (or a
// chain of server replicas, acting as the chain's configuration master), the workers and
// the evaluator as local processes, carries out the spec's fault drills (kill / pause a
// node, restart it; a restarted server recovers as spec.recovery says) and records their
// recovery metrics, subscribes to the server's event stream,
// writes everything into the run store (the only writer), stops the run at the spec's
// stop condition (or when cancelled), shuts every process down and returns a summary.
// `dasp run` and the workbench are two faces of it.
// Threading: run() blocks its caller; cancel through the atomic flag from any thread.
// Event callbacks run on the runner's watch thread.

#include "core/results/recovery_metrics.h"
#include "core/results/run_summary.h"
#include "core/common/result.h"
#include "core/spec/spec.h"
#include "dasp/ps/v1/parameter_server.pb.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>
#include <optional>
#include <string>

namespace dasp::net {

// Live actions on a running experiment, requested from any thread (the GUI's buttons).
// The runner carries them out on its own thread, records each as a run event (kind
// "control"), and reports failures as events too.
class RunControl {
 public:
  enum class Kind { SlowDown, Restore, Pause, Resume, Kill, Restart };
  struct Action {
    Kind kind;
    std::string node;   // "worker-2", "server", "evaluator"
    double factor = 1;  // SlowDown: new slowdown factor of the node
  };
  void slowDown(const std::string& node, double factor) { push({Kind::SlowDown, node, factor}); }
  void restore(const std::string& node) { push({Kind::Restore, node, 0}); }
  void pause(const std::string& node) { push({Kind::Pause, node, 0}); }
  void resume(const std::string& node) { push({Kind::Resume, node, 0}); }
  void kill(const std::string& node) { push({Kind::Kill, node, 0}); }
  // Starts a killed node again (a server resumes the run under the spec's recovery mode).
  void restart(const std::string& node) { push({Kind::Restart, node, 0}); }
  // For the runner: everything requested since the last call.
  std::vector<Action> take() {
    std::lock_guard<std::mutex> lock(m_mu);
    std::vector<Action> out;
    out.swap(m_actions);
    return out;
  }

 private:
  void push(Action a) {
    std::lock_guard<std::mutex> lock(m_mu);
    m_actions.push_back(std::move(a));
  }
  std::mutex m_mu;
  std::vector<Action> m_actions;
};

struct RunnerOptions {
  std::string daspBinary;   // the `dasp` executable that runs the nodes
  std::string dbPath;       // run store file
  std::string tags;         // stored with the run
  const std::atomic<bool>* cancel = nullptr;
  // Sees every event batch from the servers, on their watch threads (for live views): the
  // head's, a sharded server's other shards' (SHARD_LOAD), and the workers' OFFLINE_WORK
  // that the runner relays from their output (on its output thread), so calls may be
  // concurrent.
  std::function<void(std::int64_t runId, const dasp::ps::v1::EventBatch&)> onEvents;
  // Progress lines for a terminal.
  std::function<void(const std::string&)> log;
  double startTimeoutS = 60;  // server start and worker joins
  RunControl* control = nullptr;  // live actions (may be null)
  // Called once the run exists in the store (on the runner's thread).
  std::function<void(std::int64_t runId)> onRunCreated;
  // Non-empty: every server and worker start writes an update record
  // (core/params/update_record.h) into RECORD_DIR/run-ID/NODE.N.record (N: the node's start,
  // from 0). The path is the same on every host: a placed node writes on its own.
  std::string recordDir;
};

// The figures of a finished run (shared with the simulator: core/results/run_summary.h).
using ::dasp::RunSummary;

// Runs one experiment (the spec's own strategy; suites are expanded by the caller).
Result<RunSummary> runExperiment(const ExperimentSpec& spec, const RunnerOptions& options);

}  // namespace dasp::net
