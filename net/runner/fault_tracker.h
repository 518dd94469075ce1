// SPDX-License-Identifier: MIT
#pragma once
// FaultTracker: the runner's book of a run's fault drills (spec.faults). It says which
// drill is due (a kill or pause, then its restart or resume) and observes what follows:
// from the server's event stream the version before the fault, the recovered server's
// starting version (restored / promoted / adopted) and the first update after it, the
// evaluation series; from the nodes' recovery lines (net/client/recovery_line.h) when the
// outage was noticed, the highest version the failed server had acknowledged to any
// worker (updates lost are counted against it), and what the workers did meanwhile.
// records() turns it into core's FaultRecords.
// A server PAUSE keeps the server's state: its versionAfter is the version it resumed
// from (the first update after the resume, less one). A worker's DISCONNECT (its link
// cut) is detected by the server marking it down or by the worker's own stalled call,
// whichever comes first; it resumes with the worker's first push that reaches the
// server after the link is back, and its versionAfter is the server's version then.
//
// Threading: every method may be called from any thread (the runner's loop, its watch
// thread and its output pump); one mutex guards the state.

#include "core/results/recovery_metrics.h"
#include "core/spec/spec.h"
#include "net/client/recovery_line.h"
#include "dasp/ps/v1/parameter_server.pb.h"

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dasp::net {

class FaultTracker {
 public:
  explicit FaultTracker(const std::vector<v1::FaultSpec>& faults);

  struct Due {
    int index = 0;
    v1::FaultSpec spec;
    bool restart = false;  // false: fire the fault; true: restart / resume the node
  };
  // Drills due at run time `now`, in order; each is returned once.
  std::vector<Due> due(double now);
  // The runner carried out drill `index` at `t` on `target` (the node it resolved to).
  // `rank`: the target's worker rank (-1 for other nodes).
  void fired(int index, double t, const std::string& target, bool serverFault, bool chain = false, int rank = -1);
  void restarted(int index, double t);
  // Drill `index` (its fault, or its `restart`) was returned by due() but not carried
  // out: the next due() returns it again.
  void defer(int index, bool restart);
  // The node drill `index` was fired on.
  std::string targetOf(int index) const;
  void addDetail(int index, const std::string& text);
  // A fault done by hand (the GUI's kill / pause), recorded like a drill; returns its index.
  int addManual(const v1::FaultSpec& spec, double t, const std::string& target, bool serverFault, bool chain = false);
  // The node was restarted / resumed by hand: closes its latest open manual fault.
  void restartedManual(const std::string& node, double t);
  // A KILL of `node` whose restart has not happened yet.
  bool restartPending(const std::string& node) const;
  // Drills whose first update after the fault was seen but whose CPU figure is not taken.
  std::vector<int> resumedWithoutCpu() const;
  void setCpu(int index, double cpuS);

  // The server's events (rank → node name through `nodeName`).
  void observe(const dasp::ps::v1::EventBatch& batch, const std::function<std::string(int)>& nodeName);
  // A node's recovery line (net/client/recovery_line.h), read at run time `now`.
  void observeRecovery(const std::string& node, const RecoveryReport& report, double now);

  std::int64_t currentVersion() const;
  std::vector<FaultRecord> records() const;
  // Every evaluation at the time its version was made (EvaluationReport.version_t_s),
  // in that order.
  std::vector<EvalPoint> evaluations() const;
  bool any() const { return !m_drills.empty(); }

 private:
  struct Drill {
    v1::FaultSpec spec;
    bool firedDone = false;
    bool restartDone = false;
    bool serverFault = false;
    bool cpuTaken = false;
    bool manual = false;
    bool timed = false;  // fired() has set the fault's time
    bool chain = false;  // a chain head's kill: training resumes at the promotion
    int rank = -1;       // the target worker's rank
    bool linkLinesDone = false;  // DISCONNECT: the worker's "reconnected" line was seen
    FaultRecord record;
  };
  // The latest fired drill on a server (outage lines and recovery events belong to it).
  Drill* latestServerDrillLocked(double t);
  // The open DISCONNECT drill of worker `node` at `t` (its outage lines belong to it).
  Drill* openDisconnectLocked(const std::string& node, double t);
  // A server PAUSE or a worker DISCONNECT: the node keeps its state through the fault.
  static bool keepsState(const Drill& d) {
    return d.spec.action() == v1::FaultSpec::DISCONNECT || (d.serverFault && d.spec.action() == v1::FaultSpec::PAUSE);
  }

  mutable std::mutex m_mu;
  std::vector<Drill> m_drills;
  std::int64_t m_version = 0;
  std::vector<EvalPoint> m_evaluations;
};

}  // namespace dasp::net
