// SPDX-License-Identifier: MIT
// The virtual-cluster engine: a run's set-up, its event loop and its end (the cluster's
// work is in sim_cluster.cpp, the fault drills in sim_faults.cpp).
#include "core/sim/sim_run.h"

namespace dasp::sim_detail {

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
  // What the links and the server's apply are charged for: the model, or sim.payload_parameters.
  const std::int64_t payload = m_spec.sim().has_payload_parameters() ? m_spec.sim().payload_parameters() : p;
  m_bytes = static_cast<double>(payload) * sizeof(float);

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
  m_shards = std::max(1, m_spec.ps().shards());
  auto layout = shardLayout(payload, m_shards);
  if (!layout) return layout.status();
  std::int64_t largest = 0;
  for (int s = 0; s < m_shards; ++s) largest = std::max(largest, layout->size(s));
  m_shardParams = static_cast<double>(largest);
  m_shardBytes = m_shardParams * sizeof(float);
  m_shardLink = linkOf(m_spec.sim().server_link());
  const Link unlimited{0.0, std::numeric_limits<double>::infinity()};
  for (const auto& host : m_spec.launch().hosts()) {
    m_hostLinks.push_back({host.has_downlink() ? linkOf(host.downlink()) : unlimited,
                           host.has_uplink() ? linkOf(host.uplink()) : unlimited});
    m_hostLinked = m_hostLinked || host.has_downlink() || host.has_uplink();
  }
  m_modelServerLinks =
      m_shards > 1 || std::isfinite(m_shardLink.bytesPerS) || m_shardLink.latencyS > 0 || m_hostLinked;
  for (int r = 0; r < n; ++r) {
    auto& w = m_workers[static_cast<std::size_t>(r)];
    const auto& node = nodes[static_cast<std::size_t>(r)];
    w.name = node.name().empty() ? "worker-" + std::to_string(r) : node.name();
    w.speed = node.speed();
    if (!(w.speed.base_iteration_ms() > 0) && m_spec.cluster().base_iteration_ms() > 0) {
      w.speed.set_base_iteration_ms(m_spec.cluster().base_iteration_ms());
    }
    w.link = linkOf(effectiveLink(node, m_spec));
    w.host = workerHostIndex(m_spec, static_cast<std::size_t>(r));
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
  m_guard = std::make_unique<GradientGuard>(m_spec.strategy().gradient_guard());
  m_versionTime.assign(1, 0.0);
  m_chain = m_spec.recovery().mode() == v1::RecoverySpec::CHAIN;
  m_stateless = m_spec.recovery().mode() == v1::RecoverySpec::STATELESS;
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
    if (m_divergence.divergence()) m_stopReason = "diverged";
    else if (m_targetT && stop.stop_at_target()) m_stopReason = "target";
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
  if (m_failure.empty() && !m_divergence.divergence()) {
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
    case Ev::PushSend: {
      auto& w = m_workers[static_cast<std::size_t>(e.a)];
      if (e.gen != w.gen || w.phase != Worker::Phase::InFlight) return;  // a void iteration
      if (w.paused) {
        // Sent when it resumes: the rest of its iteration and its transfer then.
        w.deferred = true;
        w.deferredRemaining = e.t - std::max(w.pausedAt, w.releaseT) + w.pushS;
        return;
      }
      schedule(pushArrival(w, e.t), Ev::PushArrive, e.a, w.gen);
      break;
    }
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
    case Ev::OutageCompute:
      if (e.gen == m_workers[static_cast<std::size_t>(e.a)].gen) onOutageCompute(e.a, e.t);
      break;
    case Ev::BacklogArrive:
      if (e.gen == m_workers[static_cast<std::size_t>(e.a)].gen) onBacklogArrive(e.a, e.t);
      break;
    case Ev::MaxSeconds:
      m_stopReason = "max_seconds";
      break;
  }
  scheduleTick();
}

// --- the end ------------------------------------------------------------------------------

// What the iterations in progress at the end have waited and computed so far: a wait is
// counted when its iteration completes, so without these a run that ends on its first
// round (every worker waiting for it) would show no wait at all.
std::pair<double, double> SimRun::openWaitAndCompute() const {
  double wait = 0, compute = 0;
  for (const auto& w : m_workers) {
    if (w.phase == Worker::Phase::Parked) {
      wait += std::max(0.0, m_now - w.parkedSince);
    } else if (w.phase == Worker::Phase::InFlight) {
      wait += w.lastWait;
      compute += std::clamp(m_now - w.releaseT - w.pullS, 0.0, w.computeS);
    }
  }
  return {wait, compute};
}

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
  const auto [openWait, openCompute] = openWaitAndCompute();
  const double wait = m_waitSum + openWait, busy = wait + m_computeSum + openCompute;
  s.waitFraction = busy > 0 ? wait / busy : 0;
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
  const RunStatus status = !failure.empty()               ? RunStatus::Failed
                           : m_stopReason == "cancelled"  ? RunStatus::Stopped
                           : m_divergence.divergence()    ? RunStatus::Diverged
                                                          : RunStatus::Completed;
  s.status = toString(status);
  if (status == RunStatus::Diverged) s.divergence = m_divergence.divergence();
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
    if (s.divergence) {
      say("sim run " + std::to_string(m_runId) + ": diverged: " + s.divergence->describeWithLoss());
      recordEvent(s.divergence->tS, RE::TRAINING, RE::DIVERGED, "cluster", "diverged: " + s.divergence->describeWithLoss());
    }
    auto finished = m_recorder->finish(status, failure, s.divergence);
    if (!failure.empty()) return Status::error("run " + std::to_string(m_runId) + ": " + failure);
    if (!finished) return finished;
  } else if (!failure.empty()) {
    return Status::error(failure);
  }
  return s;
}
}  // namespace dasp::sim_detail

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

Result<RunSummary> runSimulation(ExperimentSpec spec, SimCompute& compute, const SimOptions& options) {
  if (spec.engine() != "sim") return Status::error("engine: runSimulation needs engine \"sim\" (got '" + spec.engine() + "')");
  if (auto st = validateSpec(spec); !st) return st;
  sim_detail::SimRun run(std::move(spec), compute, options);
  return run.run();
}

}  // namespace dasp
