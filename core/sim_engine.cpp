// SPDX-License-Identifier: MIT
#include "core/sim_engine.h"

#include "core/build_info.h"
#include "core/parameter_store.h"
#include "core/recovery_metrics.h"
#include "core/sync_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <random>

namespace dasp {

Result<double> measureComputeMs(GradientSource& source, const std::vector<float>& parameters, int calls) {
  if (static_cast<std::int64_t>(parameters.size()) != source.parameterCount()) {
    return Status::error("sim: the model has " + std::to_string(source.parameterCount()) +
                         " parameters, the initial parameters " + std::to_string(parameters.size()));
  }
  std::vector<float> gradient(parameters.size());
  for (int i = 0; i < 3; ++i) {
    if (auto r = source.computeGradient(parameters.data(), gradient.data()); !r) return r.status();
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    if (auto r = source.computeGradient(parameters.data(), gradient.data()); !r) return r.status();
  }
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
  return ms.count() / std::max(1, calls);
}

namespace {

using RE = v1::RunEvent;

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Ev : std::uint8_t {
  PushArrive,    // a = rank: a worker's push (and its next pull) reaches the server
  ServerDone,    // the server finished taking in a push: answer parked pulls, take the next
  ServerUp,      // a restarted server (or a promoted replica) answers
  Tick,          // the policy's deadline (barrier timeouts)
  Evaluate,      // a = index: the evaluator's periodic evaluation
  FaultFire,     // a = drill index
  FaultEnd,      // a = drill index: restart / resume
  WorkerUp,      // a = rank: a restarted worker joins again
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
Link linkOf(const v1::LinkSpec& link) {
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
  std::int64_t baseVersion = 0;
  double lastContact = 0;
  int speedIndex = 0;  // next scheduled change to record
  std::int64_t pulls = 0, pushes = 0;
};

struct OpenFault {
  FaultRecord record;
  bool awaitingResume = false;  // resumedAtS not yet seen
};

std::string secondsText(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", t);
  return b;
}

// One simulated run. Owns the cluster's state; everything happens in handle() on one thread.
class SimRun {
 public:
  SimRun(ExperimentSpec spec, SimCompute& compute, const SimOptions& options)
      : m_spec(std::move(spec)), m_compute(compute), m_options(options) {}

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
  std::int64_t applyOutput(double t);
  void emitDecisions();
  void releaseParked(double t);
  void release(int rank, double t);
  void park(int rank, double t);
  void markDown(int rank, double t, const std::string& why);
  void markUp(int rank, double t, const std::string& why);
  void scheduleTick();
  double iterationSeconds(Worker& w, double t);
  double replicationDelay() const;
  bool serverAnswers() const { return m_serverUp && !m_serverPaused; }
  void serverLost(double t, const std::string& node);
  // `how`: RESTORED, STARTED_FRESH or PROMOTED (of `promoted`), said in `text`.
  void restartServerState(double t, EventCode how, const std::string& text, const std::string& promoted = {});
  void evaluate(double t, ParameterEvaluator& evaluator);
  void noteUpdateForFaults(double t);
  void noteDetection(double t);
  void checkpointIfDue(double t);

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
  std::vector<bool> m_replicaAlive;  // chain: replica i alive
  std::vector<int> m_chainOrder;     // chain: alive replicas, head first
  // Checkpoint / chain snapshot the next server incarnation starts from.
  std::vector<float> m_snapParams, m_snapMomentum;
  std::int64_t m_snapVersion = -1;
  double m_lastCheckpointT = 0;

  // Figures (the same as the real runner's EventRecording).
  std::int64_t m_gradients = 0, m_samples = 0, m_applied = 0, m_dropped = 0, m_maxStaleness = 0;
  double m_waitSum = 0, m_computeSum = 0, m_stalenessSum = 0;
  std::optional<double> m_targetT;
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

Status SimRun::openStore() {
  if (m_options.dbPath.empty()) return Status::ok();
  auto store = RunStore::open(m_options.dbPath);
  if (!store) return store.status();
  NewRun run;
  run.kind = "sim";
  run.engine = "sim";
  run.name = m_spec.name().empty() ? "run" : m_spec.name();
  run.specJson = specToJson(m_spec, false);
  run.model = m_spec.sim().gradients() == v1::SimSpec::POLICY_ONLY ? "softmax (policy-only)" : m_spec.model().name();
  run.dataset = m_spec.dataset().name();
  run.strategy = m_spec.strategy().name();
  run.recovery = recoveryName(m_spec.recovery().mode());
  run.seed = static_cast<std::int64_t>(m_spec.seed());
  run.tags = m_options.tags;
  run.codeVersion = codeVersion();
  auto created = store.value()->createRun(run);
  if (!created) return created.status();
  m_runId = created.value();
  auto recorder = RunRecorder::open(m_options.dbPath, m_runId);
  if (!recorder) return recorder.status();
  m_recorder = std::move(recorder).value();
  if (m_options.onRunCreated) m_options.onRunCreated(m_runId);
  return Status::ok();
}

Status SimRun::prepare() {
  const auto nodes = expandWorkers(m_spec);
  const int n = static_cast<int>(nodes.size());
  if (n <= 0) return Status::error("cluster: no workers");
  if (!m_compute.makeSource) return Status::error("sim: no gradient source");
  if (m_compute.evaluator == nullptr) return Status::error("sim: no evaluator");
  const std::int64_t p = static_cast<std::int64_t>(m_compute.initialParameters.size());
  if (p <= 0) return Status::error("sim: the model has no parameters");
  m_bytes = static_cast<double>(p) * sizeof(float);

  // The measured compute cost goes into the spec before the run is stored: the stored
  // spec then reruns the same run.
  bool needCompute = false;
  for (const auto& node : nodes) {
    needCompute = needCompute || !(node.speed().base_iteration_ms() > 0 || m_spec.cluster().base_iteration_ms() > 0);
  }
  if (needCompute && !(m_spec.sim().compute_ms() > 0)) {
    auto probe = m_compute.makeSource(0, n);
    if (!probe) return probe.status();
    auto ms = measureComputeMs(*probe.value(), m_compute.initialParameters);
    if (!ms) return ms.status();
    m_spec.mutable_sim()->set_compute_ms(ms.value());
    say("sim: measured compute " + std::to_string(ms.value()) + " ms per iteration (sim.compute_ms)");
  }

  m_workers.resize(static_cast<std::size_t>(n));
  m_serverLink = linkOf(m_spec.cluster().link());
  for (int r = 0; r < n; ++r) {
    auto& w = m_workers[static_cast<std::size_t>(r)];
    const auto& node = nodes[static_cast<std::size_t>(r)];
    w.name = node.name().empty() ? "worker-" + std::to_string(r) : node.name();
    w.speed = node.speed();
    if (!(w.speed.base_iteration_ms() > 0) && m_spec.cluster().base_iteration_ms() > 0) {
      w.speed.set_base_iteration_ms(m_spec.cluster().base_iteration_ms());
    }
    w.link = linkOf(effectiveLink(node, m_spec));
    w.rng.seed(m_spec.seed() * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(r) * 7919ULL + 17);
    auto source = m_compute.makeSource(r, n);
    if (!source) return source.status().withContext(w.name);
    if (source.value()->parameterCount() != p) {
      return Status::error(w.name + ": the model has " + std::to_string(source.value()->parameterCount()) +
                           " parameters, the initial parameters " + std::to_string(p));
    }
    w.source = std::move(source).value();
    w.gradient.assign(static_cast<std::size_t>(p), 0.0f);
  }
  m_gradientOf.assign(static_cast<std::size_t>(n), nullptr);
  m_baseVersionOf.assign(static_cast<std::size_t>(n), 0);
  m_pendingRestart.assign(static_cast<std::size_t>(n), false);
  m_faultSlot.assign(static_cast<std::size_t>(m_spec.faults_size()), -1);

  m_store = std::make_unique<ParameterStore>(m_compute.initialParameters, m_spec.optimizer().momentum(),
                                             m_spec.optimizer().weight_decay());
  auto policy = makePolicy(m_spec.strategy(), m_spec.batch_size());
  if (!policy) return policy.status();
  m_policy = std::move(policy).value();
  m_policy->reset(n, 0.0);
  m_versionTime.assign(1, 0.0);
  m_chain = m_spec.recovery().mode() == v1::RecoverySpec::CHAIN;
  if (m_chain) {
    m_replicaAlive.assign(static_cast<std::size_t>(m_spec.recovery().replicas()), true);
    for (int i = 0; i < m_spec.recovery().replicas(); ++i) m_chainOrder.push_back(i);
  }
  return Status::ok();
}

Result<RunSummary> SimRun::run() {
  const auto wallStart = std::chrono::steady_clock::now();
  if (auto st = prepare(); !st) return st;
  if (auto st = openStore(); !st) return st;
  const int n = static_cast<int>(m_workers.size());

  // The run starts with every worker's pull parked, as the real server starts when all
  // have joined.
  recordEvent(0.0, RE::CONTROL, RE::CODE_UNSPECIFIED, "cluster", "start: all " + std::to_string(n) + " workers joined (virtual clock)");
  for (int r = 0; r < n; ++r) {
    auto& w = m_workers[static_cast<std::size_t>(r)];
    w.phase = Worker::Phase::Parked;
    m_parked.push_back(r);
    if (w.speed.changes_size() > 0) {
      for (int c = 0; c < w.speed.changes_size(); ++c) schedule(w.speed.changes(c).at_s(), Ev::SpeedChange, r);
    }
  }
  const auto& stop = m_spec.stop();
  const auto& eval = m_spec.evaluation();
  if (eval.every_s() > 0) schedule(0.0, Ev::Evaluate, 0);
  if (eval.every_s() <= 0) evaluate(0.0, *m_compute.evaluator);
  for (int i = 0; i < m_spec.faults_size(); ++i) schedule(m_spec.faults(i).at_s(), Ev::FaultFire, i);
  if (stop.max_seconds() > 0) schedule(stop.max_seconds(), Ev::MaxSeconds);
  releaseParked(0.0);
  scheduleTick();

  auto lastLog = std::chrono::steady_clock::now();
  const double trainCount = static_cast<double>(std::max<std::int64_t>(1, m_compute.trainCount));
  while (m_failure.empty() && m_stopReason.empty()) {
    if (m_queue.empty()) {
      // Nothing can happen any more (every worker gone, or a dead server never restarted);
      // with max_seconds its event would still be queued.
      m_failure = "nothing left to simulate at t = " + secondsText(m_now) +
                  " s: no live worker and no server that answers, and no restart is scheduled";
      break;
    }
    const Event e = m_queue.top();
    m_queue.pop();
    m_now = e.t;
    handle(e);
    ++m_events;
    if (m_targetT && stop.stop_at_target()) m_stopReason = "target";
    else if (stop.max_updates() > 0 && m_store->version() >= stop.max_updates()) m_stopReason = "max_updates";
    else if (stop.epochs() > 0 && static_cast<double>(m_samples) / trainCount >= stop.epochs()) m_stopReason = "epochs";
    if ((m_events & 1023) == 0) {
      if (m_options.cancel && m_options.cancel->load()) m_stopReason = "cancelled";
      const auto now = std::chrono::steady_clock::now();
      if (now - lastLog > std::chrono::seconds(5)) {
        lastLog = now;
        say("sim run " + std::to_string(m_runId) + ": t " + secondsText(m_now) + " s, version " +
            std::to_string(m_store->version()) + ", accuracy " + std::to_string(m_lastAccuracy));
      }
    }
  }
  if (m_failure.empty()) {
    // The final evaluation on the whole test set, like the real evaluator's at stop.
    ParameterEvaluator* final = m_compute.finalEvaluator ? m_compute.finalEvaluator : m_compute.evaluator;
    if (final != m_compute.evaluator || m_lastEvaluatedVersion != m_store->version()) evaluate(m_now, *final);
  }
  auto summary = finish(m_failure);
  if (summary) summary->wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
  return summary;
}

void SimRun::handle(const Event& e) {
  switch (e.kind) {
    case Ev::PushArrive: {
      auto& w = m_workers[static_cast<std::size_t>(e.a)];
      if (e.gen != w.gen || w.phase != Worker::Phase::InFlight) return;  // a void iteration
      if (w.paused) {
        w.deferred = true;
        w.deferredRemaining = e.t - std::max(w.pausedAt, w.releaseT);
        return;
      }
      onPushArrive(e.a, e.t);
      break;
    }
    case Ev::ServerDone:
      if (e.gen == m_serverGen) onServerDone(e.t);
      break;
    case Ev::ServerUp:
      if (e.gen == m_serverGen) onServerUp(e.t);
      break;
    case Ev::Tick:
      onTick(e.t);
      break;
    case Ev::Evaluate:
      onEvaluate(e.a, e.t);
      break;
    case Ev::FaultFire:
      onFaultFire(e.a, e.t);
      break;
    case Ev::FaultEnd:
      onFaultEnd(e.a, e.t);
      break;
    case Ev::WorkerUp:
      onWorkerUp(e.a, e.t);
      break;
    case Ev::SilenceCheck:
      if (e.gen == m_workers[static_cast<std::size_t>(e.a)].silenceGen) onSilenceCheck(e.a, e.t);
      break;
    case Ev::SpeedChange:
      onSpeedChange(e.a, e.t);
      break;
    case Ev::MaxSeconds:
      m_stopReason = "max_seconds";
      break;
  }
  scheduleTick();
}

// --- workers ------------------------------------------------------------------------------

double SimRun::iterationSeconds(Worker& w, double t) {
  const double slowdown = slowdownAt(w.speed, t);
  const double baseS = w.speed.base_iteration_ms() > 0 ? w.speed.base_iteration_ms() / 1000.0
                                                       : m_spec.sim().compute_ms() / 1000.0;
  double factor = 1.0;
  if (w.speed.jitter() > 0) factor = std::max(0.1, 1.0 + w.speed.jitter() * w.normal(w.rng));
  // Compute scales with the batch, as real compute does (equal batches: a factor of 1).
  const double batchFactor = static_cast<double>(w.source->batchSize()) / static_cast<double>(m_spec.batch_size());
  return slowdown * baseS * factor * batchFactor;
}

// With per-update chain forwarding a worker's pull waits until the tail holds the update:
// each further replica adds a transfer and an apply.
double SimRun::replicationDelay() const {
  if (!m_chain || m_spec.recovery().forward_every() > 1 || m_chainOrder.size() < 2) return 0.0;
  const double perHop = m_serverLink.transfer(m_bytes) +
                        static_cast<double>(m_store->size()) * m_spec.sim().apply_ns_per_param() * 1e-9;
  return static_cast<double>(m_chainOrder.size() - 1) * perHop;
}

// The server answers `rank`'s pull: the worker computes its gradient on the parameters it
// is sent (now: they are the server's current ones) and its push arrives after the pull
// transfer, its iteration time and the push transfer.
void SimRun::release(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  w.lastWait = std::max(0.0, t - w.parkedSince);
  w.releaseT = t;
  w.lastContact = t;
  m_policy->onPullReleased(rank, m_store->version(), t);
  w.baseVersion = m_store->version();
  const int batch = m_policy->batchFor(rank);
  if (batch > 0 && batch != w.source->batchSize() && !w.source->setBatchSize(batch)) {
    m_failure = w.name + ": its gradient source cannot compute a batch of " + std::to_string(batch);
    return;
  }
  auto loss = w.source->computeGradient(m_store->parameters(), w.gradient.data());
  if (!loss) {
    m_failure = w.name + ": " + loss.message();
    return;
  }
  w.loss = loss.value();
  ++w.pulls;
  m_serverBytesOut += static_cast<std::int64_t>(m_bytes);
  w.pullS = w.link.transfer(m_bytes) + replicationDelay();
  w.computeS = iterationSeconds(w, t + w.pullS);
  w.pushS = w.link.transfer(m_bytes);
  w.phase = Worker::Phase::InFlight;
  schedule(t + w.pullS + w.computeS + w.pushS, Ev::PushArrive, rank, w.gen);
}

void SimRun::park(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  w.phase = Worker::Phase::Parked;
  w.parkedSince = t;
  m_parked.push_back(rank);
}

void SimRun::releaseParked(double t) {
  if (!serverAnswers() || m_busy) return;  // a busy server answers when it is done
  if (t < m_chainStallUntil) {
    schedule(m_chainStallUntil, Ev::Tick);
    return;
  }
  m_recheck = false;
  std::size_t keep = 0;
  for (std::size_t i = 0; i < m_parked.size(); ++i) {
    const int r = m_parked[i];
    if (m_failure.empty() && m_policy->mayProceed(r, t)) {
      release(r, t);
    } else {
      m_parked[keep++] = r;
    }
  }
  m_parked.resize(keep);
}

void SimRun::onPushArrive(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  w.lastContact = t;
  if (!m_serverUp) {
    // The push fails: nobody answers. The worker retries when a server is back.
    w.phase = Worker::Phase::Offline;
    noteDetection(t);
    for (auto& f : m_faults) {
      if (f.awaitingResume) ++f.record.gradientsDiscarded;
    }
    return;
  }
  ++w.pushes;
  m_serverBytesIn += static_cast<std::int64_t>(m_bytes);
  recordIteration(rank, t);
  m_pushQueue.emplace_back(rank, w.gen);
  w.phase = Worker::Phase::Parked;  // its pull rides on the push (pushPull)
  w.parkedSince = t;
  if (!m_busy && !m_serverPaused) serveNext(t);
}

// Takes in the next queued push at `t`: the policy decides, updates are applied, and the
// server stays busy for the modelled cost; the pusher's pull is parked.
void SimRun::serveNext(double t) {
  if (m_pushQueue.empty() || m_busy || !serverAnswers()) return;
  const auto [rank, gen] = m_pushQueue.front();
  m_pushQueue.pop_front();
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  const auto r = static_cast<std::size_t>(rank);
  if (m_policy->state(rank) == ParallelState::Down) markUp(rank, t, "pushed again after being marked down");
  m_gradientOf[r] = w.gradient.data();
  m_baseVersionOf[r] = w.baseVersion;
  m_out.clear();
  const PushOutcome outcome = m_policy->onPush(rank, w.baseVersion, t, m_out);
  bool consumed = false;
  for (const auto& g : m_out.gradients) consumed = consumed || g.rank == rank;
  const std::int64_t applied = applyOutput(t);
  if (outcome == PushOutcome::Held && !consumed) {
    // The worker computes its next gradient into `gradient` once released: keep this one.
    if (w.held.size() != w.gradient.size()) w.held.assign(w.gradient.size(), 0.0f);
    std::copy(w.gradient.begin(), w.gradient.end(), w.held.begin());
    m_gradientOf[r] = w.held.data();
  } else if (!w.held.empty()) {
    // As the server does: the rank's slot points at its held gradient again (a round may
    // still hold an earlier gradient of a rank whose newer push was dropped).
    m_gradientOf[r] = w.held.data();
  }
  m_lastPusher = -1;
  if (gen == w.gen && w.phase != Worker::Phase::Dead) {
    m_parked.push_back(rank);
    m_lastPusher = rank;
  }
  m_busy = true;
  const double cost = m_spec.sim().push_overhead_ms() / 1000.0 +
                      static_cast<double>(applied) * static_cast<double>(m_store->size()) *
                          m_spec.sim().apply_ns_per_param() * 1e-9;
  schedule(t + cost, Ev::ServerDone, 0, m_serverGen);
}

void SimRun::onServerDone(double t) {
  m_busy = false;
  if (!serverAnswers()) return;
  if (m_recheck || t < m_chainStallUntil) {
    releaseParked(t);
  } else if (m_lastPusher >= 0 && m_policy->mayProceed(m_lastPusher, t)) {
    // The pusher's pull was parked last: it is found from the back.
    const auto it = std::find(m_parked.rbegin(), m_parked.rend(), m_lastPusher);
    if (it != m_parked.rend()) {
      m_parked.erase(std::next(it).base());
      release(m_lastPusher, t);
    }
  }
  m_lastPusher = -1;
  serveNext(t);
}

// Applies every update of m_out (the server's applyOutputLocked); returns the number of
// gradients applied.
std::int64_t SimRun::applyOutput(double t) {
  const auto& opt = m_spec.optimizer();
  const bool mean = opt.lr_convention() == v1::OptimizerSpec::MEAN;
  const std::size_t updates = m_out.updateCount();
  std::int64_t applied = 0;
  for (std::size_t u = 0; u < updates; ++u) {
    const std::size_t begin = m_out.updateBegin[u];
    const std::size_t end = u + 1 < updates ? m_out.updateBegin[u + 1] : m_out.gradients.size();
    const std::int64_t base = m_store->version();
    m_applyPtrs.clear();
    m_applyWeights.clear();
    const double m = static_cast<double>(end - begin);
    for (std::size_t g = begin; g < end; ++g) {
      const auto& ref = m_out.gradients[g];
      m_applyPtrs.push_back(m_gradientOf[static_cast<std::size_t>(ref.rank)]);
      m_applyWeights.push_back(mean && m > 0 ? ref.scale / m : ref.scale);
    }
    m_store->apply(m_applyPtrs.data(), m_applyWeights.data(), static_cast<int>(m_applyPtrs.size()),
                   learningRateAt(opt, base));
    const std::int64_t v = m_store->version();
    if (static_cast<std::int64_t>(m_versionTime.size()) <= v) m_versionTime.resize(static_cast<std::size_t>(v) + 1);
    m_versionTime[static_cast<std::size_t>(v)] = t;
    applied += static_cast<std::int64_t>(end - begin);
    for (std::size_t g = begin; g < end; ++g) {
      const auto& ref = m_out.gradients[g];
      const std::int64_t staleness = base - m_baseVersionOf[static_cast<std::size_t>(ref.rank)];
      ++m_applied;
      m_stalenessSum += static_cast<double>(staleness);
      m_maxStaleness = std::max(m_maxStaleness, staleness);
      if (m_recorder) {
        m_recorder->record(SampleRow{m_runId, m_workers[static_cast<std::size_t>(ref.rank)].name, "staleness", t, v,
                                     static_cast<double>(staleness)});
      }
    }
    noteUpdateForFaults(t);
    checkpointIfDue(t);
    const auto& eval = m_spec.evaluation();
    if (eval.every_s() <= 0 && eval.every_steps() > 0 && v % eval.every_steps() == 0) {
      evaluate(t, *m_compute.evaluator);
    }
  }
  m_dropped += static_cast<std::int64_t>(m_out.dropped.size());
  if (m_out.recheckPulls || updates > 0) m_recheck = true;
  emitDecisions();
  return applied;
}

void SimRun::emitDecisions() {
  if (!m_recorder) return;
  for (const auto& d : m_out.decisions) {
    std::string what = toString(d.kind);
    if (d.kind == DecisionKind::StateChange) what += std::string(" ") + toString(d.from) + "->" + toString(d.to);
    if (d.kind == DecisionKind::Drop || d.kind == DecisionKind::Grant) what += " " + std::to_string(d.value);
    const std::string node = d.rank < 0 ? "cluster" : m_workers[static_cast<std::size_t>(d.rank)].name;
    m_recorder->record(DecisionRow{m_runId, d.t, node, what, d.reason});
  }
}

void SimRun::scheduleTick() {
  if (!serverAnswers()) return;
  const double deadline = m_policy->nextDeadline();
  if (std::isfinite(deadline) && deadline < m_tickAt) {
    m_tickAt = deadline;
    schedule(std::max(deadline, m_now), Ev::Tick);
  }
}

void SimRun::onTick(double t) {
  if (t >= m_tickAt) m_tickAt = kInf;
  if (!serverAnswers()) return;
  if (t >= m_policy->nextDeadline()) {
    m_out.clear();
    m_policy->onTick(t, m_out);
    applyOutput(t);
  }
  releaseParked(t);
}

void SimRun::markDown(int rank, double t, const std::string& why) {
  if (!serverAnswers() || m_policy->state(rank) == ParallelState::Down) return;
  m_out.clear();
  m_policy->onWorkerDown(rank, t, m_out);
  applyOutput(t);
  recordEvent(t, RE::NODE, RE::NODE_DOWN, m_workers[static_cast<std::size_t>(rank)].name, "DOWN: " + why);
  releaseParked(t);
}

void SimRun::markUp(int rank, double t, const std::string& why) {
  m_out.clear();
  m_policy->onWorkerUp(rank, t, m_out);
  applyOutput(t);
  recordEvent(t, RE::NODE, RE::NODE_UP, m_workers[static_cast<std::size_t>(rank)].name, "UP: " + why);
}

// --- evaluation ---------------------------------------------------------------------------

void SimRun::onEvaluate(int index, double t) {
  const double every = m_spec.evaluation().every_s();
  // The evaluator cannot pull from a server that does not answer: that tick is skipped.
  if (serverAnswers()) evaluate(t, *m_compute.evaluator);
  // Evaluations alone keep no run alive: with no worker left (or a dead server never
  // restarted) the queue drains and the run ends.
  bool alive = m_serverUp || m_serverRestartPending;
  bool anyWorker = false;
  for (std::size_t r = 0; r < m_workers.size(); ++r) {
    anyWorker = anyWorker || m_workers[r].phase != Worker::Phase::Dead || m_pendingRestart[r];
  }
  if (alive && anyWorker) schedule(static_cast<double>(index + 1) * every, Ev::Evaluate, index + 1);
}

void SimRun::evaluate(double t, ParameterEvaluator& evaluator) {
  const Evaluation e = evaluator.evaluate(m_store->parameters());
  const std::int64_t v = m_store->version();
  EvaluationRow row;
  row.runId = m_runId;
  row.tS = m_versionTime[std::min(m_versionTime.size() - 1, static_cast<std::size_t>(v))];
  row.version = v;
  row.updates = v;
  row.samples = m_samples;
  row.loss = e.loss;
  row.accuracy = e.accuracy;
  if (m_recorder) m_recorder->record(row);
  if (m_options.onEvaluation) m_options.onEvaluation(row);
  m_haveEvaluation = true;
  m_lastAccuracy = e.accuracy;
  m_lastLoss = e.loss;
  m_lastEvaluatedVersion = v;
  m_evalPoints.push_back(EvalPoint{t, v, e.accuracy});
  const double target = m_spec.stop().target_accuracy();
  if (target > 0 && e.accuracy >= target && !m_targetT) m_targetT = row.tS;
}

// --- recording ----------------------------------------------------------------------------

void SimRun::recordIteration(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  ++m_gradients;
  m_samples += w.source->batchSize();
  m_waitSum += w.lastWait;
  m_computeSum += w.computeS;
  if (!m_recorder) return;
  const std::string parallel = toString(m_policy->state(rank));
  const double pullEnd = w.releaseT + w.pullS;
  const double computeEnd = std::min(t, pullEnd + w.computeS);
  auto interval = [&](const char* state, double t0, double t1) {
    if (t1 > t0) m_recorder->record(StateIntervalRow{m_runId, w.name, state, parallel, t0, t1});
  };
  interval("WAIT", w.releaseT - w.lastWait, w.releaseT);
  interval("PULL", w.releaseT, pullEnd);
  interval("COMPUTE", pullEnd, computeEnd);
  interval("PUSH", computeEnd, t);
  const std::int64_t v = w.baseVersion;
  m_recorder->record(SampleRow{m_runId, w.name, "wait_s", t, v, w.lastWait});
  m_recorder->record(SampleRow{m_runId, w.name, "train_loss", t, v, w.loss});
  m_recorder->record(SampleRow{m_runId, w.name, "compute_s", t, v, w.computeS});
}

void SimRun::onSpeedChange(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  recordEvent(t, RE::SPEED, RE::CODE_UNSPECIFIED, w.name, "slowdown " + std::to_string(slowdownAt(w.speed, t)) + " (scheduled)");
}

// --- faults -------------------------------------------------------------------------------

void SimRun::noteDetection(double t) {
  for (auto& f : m_faults) {
    if (f.awaitingResume && !f.record.detectedAtS) f.record.detectedAtS = t;
  }
}

void SimRun::noteUpdateForFaults(double t) {
  for (auto& f : m_faults) {
    if (!f.awaitingResume) continue;
    // Training progresses again: for a server fault only once the server is back.
    f.record.resumedAtS = t;
    f.awaitingResume = false;
  }
}

void SimRun::checkpointIfDue(double t) {
  const auto& rec = m_spec.recovery();
  const std::int64_t v = m_store->version();
  bool due = false;
  if (rec.mode() == v1::RecoverySpec::CHECKPOINT) {
    due = (rec.checkpoint_every_updates() > 0 && v % rec.checkpoint_every_updates() == 0) ||
          (rec.checkpoint_every_s() > 0 && t - m_lastCheckpointT >= rec.checkpoint_every_s());
  } else if (m_chain && rec.forward_every() > 1) {
    due = v % rec.forward_every() == 0;  // the replicas hold the state of every K-th update
  }
  if (!due) return;
  const auto p = static_cast<std::size_t>(m_store->size());
  m_snapParams.assign(m_store->parameters(), m_store->parameters() + p);
  m_snapMomentum = m_store->momentumBuffer();
  m_snapVersion = v;
  m_lastCheckpointT = t;
  if (rec.mode() == v1::RecoverySpec::CHECKPOINT) {
    recordEvent(t, RE::RECOVERY, RE::CHECKPOINT, "server", "checkpoint: v" + std::to_string(v));
  }
}

void SimRun::onFaultFire(int index, double t) {
  const auto& f = m_spec.faults(index);
  const bool kill = f.action() == v1::FaultSpec::KILL;
  OpenFault open;
  open.record.index = static_cast<int>(m_faults.size());
  open.record.node = f.node();
  open.record.action = kill ? "kill" : "pause";
  open.record.atS = t;
  open.record.versionBefore = m_store->version();
  open.awaitingResume = true;
  m_faultSlot[static_cast<std::size_t>(index)] = static_cast<int>(m_faults.size());
  m_faults.push_back(open);
  recordEvent(t, RE::FAULT, kill ? RE::KILL : RE::PAUSE, f.node(), open.record.action + " " + f.node(), f.node());
  say("sim run " + std::to_string(m_runId) + ": drill " + std::to_string(index + 1) + " at " + secondsText(t) + " s: " +
      open.record.action + " " + f.node());
  if (f.has_restart_after_s()) schedule(t + f.restart_after_s(), Ev::FaultEnd, index);

  const bool serverNode = f.node() == "server" || f.node().rfind("server-", 0) == 0;
  if (!serverNode) {
    const auto it = std::find_if(m_workers.begin(), m_workers.end(), [&](const Worker& w) { return w.name == f.node(); });
    if (it == m_workers.end()) return;
    const int rank = static_cast<int>(it - m_workers.begin());
    auto& w = *it;
    auto& slot = m_faults.back();
    if (kill) {
      ++w.gen;  // the iteration in flight dies with the process
      w.phase = Worker::Phase::Dead;
      w.paused = false;
      m_parked.erase(std::remove(m_parked.begin(), m_parked.end(), rank), m_parked.end());
      m_pushQueue.erase(std::remove_if(m_pushQueue.begin(), m_pushQueue.end(),
                                       [rank](const std::pair<int, std::uint32_t>& q) { return q.first == rank; }),
                        m_pushQueue.end());
      m_pendingRestart[static_cast<std::size_t>(rank)] = f.has_restart_after_s();
      // The runner sees the process exit and marks the worker down at once.
      slot.record.detectedAtS = t;
      markDown(rank, t, "killed (drill)");
    } else {
      w.paused = true;
      w.pausedAt = t;
      const double silence = m_spec.strategy().barrier_timeout_s();
      schedule(std::max(t, w.lastContact) + silence, Ev::SilenceCheck, rank, w.silenceGen);
    }
    return;
  }

  auto& slot = m_faults.back();
  m_serverFault = static_cast<int>(m_faults.size()) - 1;
  if (!kill) {
    m_serverPaused = true;
    return;
  }
  if (m_chain) {
    int replica = 0;
    if (f.node() != "server") replica = std::stoi(f.node().substr(7));
    else if (!m_chainOrder.empty()) replica = m_chainOrder.front();
    slot.record.node = "server-" + std::to_string(replica);
    if (!m_replicaAlive[static_cast<std::size_t>(replica)]) return;
    m_replicaAlive[static_cast<std::size_t>(replica)] = false;
    const bool head = !m_chainOrder.empty() && m_chainOrder.front() == replica;
    m_chainOrder.erase(std::remove(m_chainOrder.begin(), m_chainOrder.end(), replica), m_chainOrder.end());
    const double failover = m_spec.sim().failover_ms() / 1000.0;
    if (!head) {
      // The chain is relinked around the dead replica; pulls wait for the tail meanwhile.
      m_chainStallUntil = std::max(m_chainStallUntil, t + failover);
      slot.record.detectedAtS = t + failover;
      slot.record.versionAfter = m_store->version();
      slot.record.detail = "relinked the chain around server-" + std::to_string(replica);
      return;
    }
    serverLost(t, slot.record.node);
    if (!m_chainOrder.empty()) {
      m_serverRestartPending = true;
      schedule(t + failover, Ev::ServerUp, 0, m_serverGen);
    }
    return;
  }
  serverLost(t, "server");
  m_serverRestartPending = f.has_restart_after_s();
}

// The head is gone: pushes in its queue and every parked pull fail; the workers retry.
void SimRun::serverLost(double t, const std::string& node) {
  m_serverUp = false;
  m_serverPaused = false;
  m_busy = false;
  ++m_serverGen;
  m_tickAt = kInf;
  auto& slot = m_faults[static_cast<std::size_t>(m_serverFault)];
  slot.record.gradientsDiscarded += static_cast<std::int64_t>(m_pushQueue.size());
  m_pushQueue.clear();
  for (int r : m_parked) {
    m_workers[static_cast<std::size_t>(r)].phase = Worker::Phase::Offline;
  }
  if (!m_parked.empty()) {
    // A parked pull's connection breaks at once.
    slot.record.detectedAtS = t + m_workers[static_cast<std::size_t>(m_parked.front())].link.latencyS;
  }
  m_parked.clear();
  recordEvent(t, RE::NODE, RE::NODE_DOWN, node, "DOWN: killed (drill)");
}

void SimRun::onFaultEnd(int index, double t) {
  const auto& f = m_spec.faults(index);
  const int slotIndex = m_faultSlot[static_cast<std::size_t>(index)];
  if (slotIndex < 0) return;
  auto& slot = m_faults[static_cast<std::size_t>(slotIndex)];
  slot.record.restartAtS = t;
  const bool kill = f.action() == v1::FaultSpec::KILL;
  const bool serverNode = f.node() == "server" || f.node().rfind("server-", 0) == 0;
  const double restart = m_spec.sim().restart_ms() / 1000.0;
  if (!serverNode) {
    const auto it = std::find_if(m_workers.begin(), m_workers.end(), [&](const Worker& w) { return w.name == f.node(); });
    if (it == m_workers.end()) return;
    const int rank = static_cast<int>(it - m_workers.begin());
    if (kill) {
      recordEvent(t, RE::FAULT, RE::RESTARTED, f.node(), "restarted " + f.node(), f.node());
      schedule(t + restart, Ev::WorkerUp, rank);
      return;
    }
    auto& w = *it;
    w.paused = false;
    ++w.silenceGen;
    recordEvent(t, RE::FAULT, RE::RESUME, f.node(), "resume " + f.node(), f.node());
    if (w.deferred) {
      w.deferred = false;
      schedule(t + w.deferredRemaining, Ev::PushArrive, rank, w.gen);
    } else if (w.phase == Worker::Phase::InFlight) {
      // Its push had not fallen due yet: it arrives later by the pause (the event on the
      // old schedule is voided). A push already queued at the server, or a parked pull,
      // keeps its place.
      ++w.gen;
      const double arrival = w.releaseT + w.pullS + w.computeS + w.pushS;
      schedule(t + std::max(0.0, arrival - std::max(w.pausedAt, w.releaseT)), Ev::PushArrive, rank, w.gen);
    }
    return;
  }
  if (!kill) {
    m_serverPaused = false;
    recordEvent(t, RE::FAULT, RE::RESUME, f.node(), "resume " + f.node(), f.node());
    // Silence measured across the server's own pause is not the workers'.
    for (auto& w : m_workers) w.lastContact = std::max(w.lastContact, t);
    releaseParked(t);
    serveNext(t);
    return;
  }
  if (m_chain) {
    const std::string node = slot.record.node;
    const int replica = std::stoi(node.substr(7));
    if (m_replicaAlive[static_cast<std::size_t>(replica)]) return;  // this drill found it alive
    recordEvent(t, RE::FAULT, RE::RESTARTED, node, "restarted " + node + " (joins the chain at the tail)", node);
    m_replicaAlive[static_cast<std::size_t>(replica)] = true;
    m_chainOrder.push_back(replica);
    if (!m_serverUp && !m_serverRestartPending) {
      m_serverRestartPending = true;
      schedule(t + restart, Ev::ServerUp, 0, m_serverGen);
    }
    return;
  }
  recordEvent(t, RE::FAULT, RE::RESTARTED, "server", "restarted server", "server");
  schedule(t + restart, Ev::ServerUp, 0, m_serverGen);
}

// A server answers again: restored as the recovery mode says, with a fresh policy; every
// worker waiting for it pulls.
void SimRun::restartServerState(double t, EventCode how, const std::string& text, const std::string& promoted) {
  const int n = static_cast<int>(m_workers.size());
  auto policy = makePolicy(m_spec.strategy(), m_spec.batch_size());
  if (!policy) {
    m_failure = policy.message();
    return;
  }
  m_policy = std::move(policy).value();
  m_policy->reset(n, t);
  for (int r = 0; r < n; ++r) {
    if (m_workers[static_cast<std::size_t>(r)].phase == Worker::Phase::Dead) {
      m_out.clear();
      m_policy->onWorkerDown(r, t, m_out);
    }
  }
  // Versions are made again from the restored one on: it exists as of now.
  const std::int64_t v = m_store->version();
  m_versionTime.resize(static_cast<std::size_t>(v) + 1);
  m_versionTime[static_cast<std::size_t>(v)] = t;
  m_serverUp = true;
  m_serverPaused = false;
  m_serverRestartPending = false;
  m_tickAt = kInf;
  auto& slot = m_faults[static_cast<std::size_t>(m_serverFault)];
  slot.record.versionAfter = v;
  slot.record.detail = text;
  recordEvent(t, RE::RECOVERY, how, "server", text, promoted);
  for (int r = 0; r < n; ++r) {
    auto& w = m_workers[static_cast<std::size_t>(r)];
    if (w.phase == Worker::Phase::Dead) continue;
    ++w.gen;  // an iteration computed for the old server is not pushed to the new one
    park(r, t);
    w.parkedSince = t;
  }
  releaseParked(t);
}

void SimRun::onServerUp(double t) {
  const auto& rec = m_spec.recovery();
  if (m_chain) {
    if (m_chainOrder.empty()) return;
    const std::string head = "server-" + std::to_string(m_chainOrder.front());
    std::string how = "promoted " + head + " at v" + std::to_string(m_store->version());
    if (rec.forward_every() > 1 && m_snapVersion >= 0) {
      m_store->restore(m_snapParams.data(), m_snapMomentum.data(), m_snapVersion);
      how = "promoted " + head + " with the state of v" + std::to_string(m_snapVersion);
    } else if (rec.forward_every() > 1) {
      m_store->restore(m_compute.initialParameters.data(), nullptr, 0);
      how = "promoted " + head + " before any state was forwarded (v0)";
    }
    restartServerState(t, RE::PROMOTED, how, head);
    return;
  }
  if (rec.mode() == v1::RecoverySpec::CHECKPOINT && m_snapVersion >= 0) {
    m_store->restore(m_snapParams.data(), m_snapMomentum.data(), m_snapVersion);
    restartServerState(t, RE::RESTORED, "restored checkpoint v" + std::to_string(m_snapVersion));
    return;
  }
  m_store->restore(m_compute.initialParameters.data(), nullptr, 0);
  restartServerState(t, RE::STARTED_FRESH,
                     rec.mode() == v1::RecoverySpec::CHECKPOINT ? "no checkpoint yet: started from the initial parameters"
                                                                : "started from the initial parameters (recovery none)");
}

void SimRun::onWorkerUp(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  if (w.phase != Worker::Phase::Dead) return;
  m_pendingRestart[static_cast<std::size_t>(rank)] = false;
  ++w.gen;
  if (serverAnswers()) markUp(rank, t, "restarted worker rejoined");
  w.lastContact = t;
  if (!m_serverUp) {
    w.phase = Worker::Phase::Offline;
    return;
  }
  park(rank, t);
  releaseParked(t);
}

// The server's silence rule: a worker that has neither pushed nor pulled for
// barrier_timeout_s while others wait is declared down.
void SimRun::onSilenceCheck(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  if (!w.paused) return;
  if (m_parked.empty() || !serverAnswers()) {
    // Nobody waits for it, or no server watches: look again later.
    schedule(t + m_spec.strategy().barrier_timeout_s(), Ev::SilenceCheck, rank, w.silenceGen);
    return;
  }
  for (auto& f : m_faults) {
    if (f.awaitingResume && f.record.node == w.name && !f.record.detectedAtS) f.record.detectedAtS = t;
  }
  markDown(rank, t, "silent for longer than strategy.barrier_timeout_s");
}

// --- the end ------------------------------------------------------------------------------

Result<RunSummary> SimRun::finish(const std::string& failure) {
  RunSummary s;
  s.runId = m_runId;
  s.engine = "sim";
  s.strategy = m_spec.strategy().name();
  s.recovery = recoveryName(m_spec.recovery().mode());
  s.seed = m_spec.seed();
  s.workers = static_cast<int>(m_workers.size());
  s.stopReason = failure.empty() ? m_stopReason : "failed";
  s.timeToTargetS = m_targetT;
  s.finalAccuracy = m_lastAccuracy;
  s.finalLoss = m_lastLoss;
  s.seconds = m_now;
  s.updates = m_store ? m_store->version() : 0;
  s.gradients = m_gradients;
  s.applied = m_applied;
  s.dropped = m_dropped;
  s.meanWaitS = m_gradients > 0 ? m_waitSum / static_cast<double>(m_gradients) : 0;
  s.waitFraction = m_waitSum + m_computeSum > 0 ? m_waitSum / (m_waitSum + m_computeSum) : 0;
  s.meanStaleness = m_applied > 0 ? m_stalenessSum / static_cast<double>(m_applied) : 0;
  s.maxStaleness = m_maxStaleness;
  s.epochs = static_cast<double>(m_samples) / static_cast<double>(std::max<std::int64_t>(1, m_compute.trainCount));
  s.simEvents = m_events;
  s.speedChangeDip = speedChangeDip(m_spec, m_evalPoints);
  if (!m_faults.empty()) {
    std::vector<FaultRecord> records;
    for (const auto& f : m_faults) records.push_back(f.record);
    s.faults = computeRecoveryMetrics(records, m_evalPoints, s.finalAccuracy);
  }
  const RunStatus status = !failure.empty() ? RunStatus::Failed
                           : m_stopReason == "cancelled" ? RunStatus::Stopped
                                                         : RunStatus::Completed;
  s.status = toString(status);
  if (m_recorder) {
    auto node = [&](const std::string& name, const char* role, std::int64_t sent, std::int64_t received) {
      NodeRow row;
      row.runId = m_runId;
      row.node = name;
      row.role = role;
      row.host = "virtual";
      row.bytesSent = sent;
      row.bytesReceived = received;
      m_recorder->record(row);
    };
    node("server", "server", m_serverBytesOut, m_serverBytesIn);
    for (const auto& w : m_workers) {
      node(w.name, "worker", w.pushes * static_cast<std::int64_t>(m_bytes), w.pulls * static_cast<std::int64_t>(m_bytes));
    }
    node("evaluator", "evaluator", 0, static_cast<std::int64_t>(m_evalPoints.size()) * static_cast<std::int64_t>(m_bytes));
    if (!s.faults.empty()) m_recorder->recordFaults(s.faults);
    m_recorder->setSummary(summaryRows(s, m_spec));
    auto finished = m_recorder->finish(status, failure);
    if (!failure.empty()) return Status::error("run " + std::to_string(m_runId) + ": " + failure);
    if (!finished) return finished;
  } else if (!failure.empty()) {
    return Status::error(failure);
  }
  return s;
}

}  // namespace

Result<RunSummary> runSimulation(ExperimentSpec spec, SimCompute& compute, const SimOptions& options) {
  if (spec.engine() != "sim") return Status::error("engine: runSimulation needs engine \"sim\" (got '" + spec.engine() + "')");
  if (auto st = validateSpec(spec); !st) return st;
  SimRun run(std::move(spec), compute, options);
  return run.run();
}

}  // namespace dasp
