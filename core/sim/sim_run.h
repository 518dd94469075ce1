// SPDX-License-Identifier: MIT
#pragma once
// Internal to the virtual-cluster engine (core/sim/sim_*.cpp): one simulated run, SimRun,
// and the event, link and worker records it keeps. Not included outside core/sim/.
#include "core/results/divergence.h"
#include "core/sim/sim_engine.h"

#include "core/common/build_info.h"
#include "core/params/gradient_backlog.h"
#include "core/params/gradient_guard.h"
#include "core/params/parameter_store.h"
#include "core/params/shard_layout.h"
#include "core/results/recovery_metrics.h"
#include "core/policy/sync_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <random>

namespace dasp::sim_detail {

using RE = v1::RunEvent;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Ev : std::uint8_t {
  PushSend,      // a = rank: a worker's push leaves it (modelled server links: its place in
                 // the servers' queue is taken in the order pushes are sent)
  PushArrive,    // a = rank: a worker's push (and its next pull) reaches the server
  ServerDone,    // the server finished taking in a push: answer parked pulls, take the next
  ServerUp,      // a restarted server (or a promoted replica) answers
  Tick,          // the policy's deadline (barrier timeouts)
  Evaluate,      // a = index: the evaluator's periodic evaluation
  FaultFire,     // a = drill index
  FaultEnd,      // a = drill index: restart / resume
  WorkerUp,      // a = rank: a restarted worker joins again
  OutageCompute, // a = rank: a stateless worker computed a gradient while no server answered
  BacklogArrive, // a = rank: its flushed outage backlog reached the restarted server
  SilenceCheck,  // a = rank: a silent (paused) worker is declared down
  SpeedChange,   // a = rank: a scheduled speed change (recorded as an event)
  MaxSeconds,    // stop.max_seconds
};

struct Event {
  double t;
  std::uint64_t seq;
  Ev kind;
  int a;
  std::uint32_t gen;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const { return x.t > y.t || (x.t == y.t && x.seq > y.seq); }
};

struct Link {
  double latencyS = 0;
  double bytesPerS = 1e9;
  double transfer(double bytes) const { return latencyS + bytes / bytesPerS; }
};

// A link as the spec resolves it (withDefaults fills the cluster's link for engine sim; an
// unset bandwidth is not limited, as in the real worker's emulation).
inline Link linkOf(const v1::LinkSpec& link) {
  Link l;
  l.latencyS = link.latency_ms() / 1000.0;
  l.bytesPerS = link.has_mbit() && link.mbit() > 0 ? link.mbit() * 1e6 / 8.0 : std::numeric_limits<double>::infinity();
  return l;
}

struct Worker {
  std::string name;
  std::unique_ptr<GradientSource> source;
  std::vector<float> gradient;  // computed at the pull release, from the parameters sent
  std::vector<float> held;      // a copy when the policy holds the gradient past the next release
  v1::SpeedProfile speed;
  Link link;
  int host = -1;  // its host (SimRun::m_hostLinks, a way unset there unlimited); -1: none
  std::mt19937_64 rng;
  std::normal_distribution<double> normal{0.0, 1.0};
  std::uint32_t gen = 0;  // bumped when the worker's iteration in flight is void (killed, server lost)
  std::uint32_t silenceGen = 0;  // bumped when a pending silence check no longer applies
  enum class Phase { Parked, InFlight, Offline, Dead } phase = Phase::Parked;
  bool paused = false;
  double pausedAt = 0;
  bool deferred = false;  // its push fell due while paused
  double deferredRemaining = 0;
  double parkedSince = 0, releaseT = 0, pullS = 0, computeS = 0, pushS = 0, loss = 0, lastWait = 0;
  std::int64_t recordedBatch = 0;  // the batch_size series: a row per change
  std::int64_t baseVersion = 0;
  double lastContact = 0;
  int speedIndex = 0;  // next scheduled change to record
  std::int64_t pulls = 0, pushes = 0;
  // recovery STATELESS: the parameters of its last pull, which it computes on through an
  // outage, and the gradients it computed while no server answered.
  std::vector<float> heldParams;
  std::unique_ptr<Backlog> backlog;
};

struct OpenFault {
  FaultRecord record;
  bool awaitingResume = false;  // resumedAtS not yet seen
};

inline std::string secondsText(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", t);
  return b;
}

// One simulated run. Owns the cluster's state; everything happens in handle() on one thread.
class SimRun {
 public:
  SimRun(ExperimentSpec spec, SimCompute& compute, const SimOptions& options)
      : m_spec(std::move(spec)), m_compute(compute), m_options(options), m_divergence(m_spec.stop().divergence()) {}

  Result<RunSummary> run();

 private:
  // --- set-up ----------------------------------------------------------------------------
  Status prepare();
  Status openStore();
  void schedule(double t, Ev kind, int a = 0, std::uint32_t gen = 0) {
    m_queue.push(Event{t, m_seq++, kind, a, gen});
  }

  // --- the event handlers ----------------------------------------------------------------
  void handle(const Event& e);
  void onPushArrive(int rank, double t);
  void serveNext(double t);
  void onServerDone(double t);
  void onTick(double t);
  void onEvaluate(int index, double t);
  void onFaultFire(int index, double t);
  void onFaultEnd(int index, double t);
  void onServerUp(double t);
  void onWorkerUp(int rank, double t);
  void onSilenceCheck(int rank, double t);
  void onSpeedChange(int rank, double t);

  // --- the server's work -----------------------------------------------------------------
  std::int64_t offerToPolicy(int rank, double t);
  std::int64_t applyOutput(double t);
  void emitDecisions();
  void releaseParked(double t);
  void release(int rank, double t);
  void park(int rank, double t);
  void markDown(int rank, double t, const std::string& why);
  void markUp(int rank, double t, const std::string& why);
  void scheduleTick();
  double nominalIterationSeconds(Worker& w, double t);
  double scaledToBatch(const Worker& w, double nominalS) const;
  double replicationDelay() const;
  // Modelled server links (sim.server_link, ps.shards): when a push sent at `t0` has
  // reached the servers, and when a pull released at `t` has reached its worker; each
  // takes its turn on the shards' links. Without them: the worker's own link only.
  double pushArrival(const Worker& w, double t0);
  double pullSeconds(const Worker& w, double t);
  bool serverAnswers() const { return m_serverUp && !m_serverPaused; }
  void serverLost(double t, const std::string& node);
  // `how`: RESTORED, STARTED_FRESH or PROMOTED (of `promoted`), said in `text`.
  void restartServerState(double t, EventCode how, const std::string& text, const std::string& promoted = {});
  void evaluate(double t, ParameterEvaluator& evaluator);
  void noteUpdateForFaults(double t);
  void noteDetection(double t);
  void checkpointIfDue(double t);
  // Version `v` was made at server time `t` (evaluations are stamped with it).
  void noteVersionMade(std::int64_t v, double t) {
    if (static_cast<std::int64_t>(m_versionTime.size()) <= v) m_versionTime.resize(static_cast<std::size_t>(v) + 1);
    m_versionTime[static_cast<std::size_t>(v)] = t;
  }
  // recovery STATELESS (sim_stateless.cpp): a worker that finds no server computes on the
  // parameters it holds, into its backlog (`keepInFlight`: the gradient of its failed push
  // first); the restarted server adopts the highest version a worker holds; each worker
  // flushes its backlog, applied in one step by the backlog rule, before it pulls again.
  void startOutageWork(int rank, double t, bool keepInFlight);
  void onOutageCompute(int rank, double t);
  void adoptFromWorkers(double t);
  bool flushBacklog(int rank, double t);
  void onBacklogArrive(int rank, double t);

  // --- recording -------------------------------------------------------------------------
  void recordIteration(int rank, double t);
  // The same typed rows the runner records (kind, code, the node acted on); `detail` in
  // its wording, for people.
  void recordEvent(double t, EventKind kind, EventCode code, const std::string& node, const std::string& detail,
                   const std::string& target = {}) {
    if (m_recorder) m_recorder->record(EventRow{m_runId, t, kind, node, detail, code, target});
  }
  void say(const std::string& line) {
    if (m_options.log) m_options.log(line);
  }
  std::pair<double, double> openWaitAndCompute() const;
  Result<RunSummary> finish(const std::string& failure);

  ExperimentSpec m_spec;
  SimCompute& m_compute;
  const SimOptions& m_options;
  std::unique_ptr<RunRecorder> m_recorder;
  std::int64_t m_runId = 0;

  std::priority_queue<Event, std::vector<Event>, Later> m_queue;
  std::uint64_t m_seq = 0;
  std::int64_t m_events = 0;
  double m_now = 0;

  std::vector<Worker> m_workers;
  std::unique_ptr<ParameterStore> m_store;
  std::unique_ptr<SyncPolicy> m_policy;
  std::unique_ptr<GradientGuard> m_guard;  // strategy.gradient_guard; fresh with each server
  PolicyOutput m_out;
  std::vector<const float*> m_gradientOf;
  std::vector<std::int64_t> m_baseVersionOf;
  std::vector<const float*> m_applyPtrs;
  std::vector<double> m_applyWeights;
  std::vector<double> m_versionTime;
  std::vector<int> m_parked;
  std::deque<std::pair<int, std::uint32_t>> m_pushQueue;
  double m_bytes = 0;  // one parameter (or gradient) vector
  Link m_serverLink;
  // ps.shards and sim.server_link: every shard gets its range of every push and sends its
  // range of every pull, over a link of its own, and applies its range of every update;
  // the shards see the same traffic in the same order, so the largest range stands for
  // all. Off (one shard, an unlimited link): pushes and pulls cost the workers' links only.
  int m_shards = 1;
  bool m_modelServerLinks = false;
  Link m_shardLink;
  double m_shardBytes = 0;      // the largest range, in bytes
  double m_shardParams = 0;     // and in parameters
  double m_shardInFree = 0;     // when the shards' links take the next push in
  double m_shardOutFree = 0;    // ... and send the next pull out
  // launch.hosts[].downlink and uplink: a host's link shared by its workers, one transfer
  // at a time each way (pulls in after each worker's own link, pushes out before it); a way
  // the spec leaves unset is not limited. In launch.hosts order.
  struct HostLink {
    Link down, up;
    double downFree = 0, upFree = 0;  // when it takes the next pull in, the next push out
  };
  std::vector<HostLink> m_hostLinks;
  bool m_hostLinked = false;  // some host has a link of its own

  bool m_serverUp = true, m_serverPaused = false, m_busy = false;
  // As the server: parked pulls are re-checked after an update or when the policy says so;
  // otherwise only the pusher's own pull is.
  bool m_recheck = false;
  int m_lastPusher = -1;
  std::uint32_t m_serverGen = 0;
  double m_pendingCost = 0;
  double m_tickAt = kInf;
  double m_chainStallUntil = 0;
  bool m_chain = false;
  bool m_stateless = false;
  std::vector<float> m_backlogSum;
  std::vector<bool> m_replicaAlive;  // chain: replica i alive
  std::vector<int> m_chainOrder;     // chain: alive replicas, head first
  // Checkpoint / chain snapshot the next server incarnation starts from.
  std::vector<float> m_snapParams, m_snapMomentum;
  std::int64_t m_snapVersion = -1;
  // The highest version the current server has acknowledged to a worker (sent it with a
  // released pull); -1 before the first, and again after a restart or promotion.
  std::int64_t m_ackedVersion = -1;
  double m_lastCheckpointT = 0;

  // Figures (the same as the real runner's EventRecording).
  std::int64_t m_gradients = 0, m_samples = 0, m_applied = 0, m_dropped = 0, m_maxStaleness = 0;
  double m_waitSum = 0, m_computeSum = 0, m_stalenessSum = 0;
  std::optional<double> m_targetT;
  DivergenceMonitor m_divergence;  // the losses seen, as the runner watches them
  bool m_haveEvaluation = false;
  double m_lastAccuracy = 0, m_lastLoss = 0;
  std::int64_t m_lastEvaluatedVersion = -1;
  std::vector<EvalPoint> m_evalPoints;
  std::vector<OpenFault> m_faults;      // fired drills
  std::vector<int> m_faultSlot;         // drill index -> m_faults index (-1 = not fired)
  std::vector<bool> m_pendingRestart;   // per worker: a drill will bring it back
  bool m_serverRestartPending = false;
  int m_serverFault = -1;  // m_faults index of the latest server drill
  std::int64_t m_serverBytesIn = 0, m_serverBytesOut = 0;
  std::string m_failure;
  std::string m_stopReason;
};

}  // namespace dasp::sim_detail
