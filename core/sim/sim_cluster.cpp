// SPDX-License-Identifier: MIT
// The virtual cluster's work: workers' iterations, the server taking in pushes and
// applying the policy's output, evaluations and the rows recorded for them.
#include "core/sim/sim_run.h"

#include "core/spec/speed_profile.h"

namespace dasp::sim_detail {

// --- workers ------------------------------------------------------------------------------

// This iteration's compute time for the spec's batch (its jitter drawn now).
double SimRun::nominalIterationSeconds(Worker& w, double t) {
  const double slowdown = slowdownAt(w.speed, t);
  const double baseS = w.speed.base_iteration_ms() > 0 ? w.speed.base_iteration_ms() / 1000.0
                                                       : m_spec.sim().compute_ms() / 1000.0;
  return slowdown * baseS * jitterFactor(w.speed, w.normal, w.rng);
}

// Compute scales with the batch, as real compute does (equal batches: a factor of 1).
double SimRun::scaledToBatch(const Worker& w, double nominalS) const {
  return nominalS * (static_cast<double>(w.source->batchSize()) / static_cast<double>(m_spec.batch_size()));
}

// With per-update chain forwarding a worker's pull waits until the tail holds the update:
// each further replica adds a transfer and an apply.
double SimRun::replicationDelay() const {
  if (!m_chain || m_spec.recovery().forward_every() > 1 || m_chainOrder.size() < 2) return 0.0;
  const double perHop = m_serverLink.transfer(m_bytes) +
                        m_shardParams * m_spec.sim().apply_ns_per_param() * 1e-9;
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
  m_ackedVersion = std::max(m_ackedVersion, m_store->version());
  if (m_stateless) w.heldParams.assign(m_store->parameters(), m_store->parameters() + m_store->size());
  w.pullS = pullSeconds(w, t) + replicationDelay();
  const double nominalS = nominalIterationSeconds(w, t + w.pullS);
  // Under a compute budget the worker computes what fits in it at this iteration's speed.
  const ComputeBudget budget = m_policy->computeBudgetFor(rank);
  const int batch = budget.seconds > 0 ? anytimeBatch(budget, nominalS / static_cast<double>(m_spec.batch_size()))
                                       : m_policy->batchFor(rank);
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
  w.computeS = scaledToBatch(w, nominalS);
  w.pushS = w.link.transfer(m_bytes);
  w.phase = Worker::Phase::InFlight;
  if (m_modelServerLinks) {
    schedule(t + w.pullS + w.computeS, Ev::PushSend, rank, w.gen);
  } else {
    schedule(t + w.pullS + w.computeS + w.pushS, Ev::PushArrive, rank, w.gen);
  }
}

double SimRun::pushArrival(const Worker& w, double t0) {
  double sent = t0;  // when it has left its host
  if (w.host >= 0 && std::isfinite(m_hostLinks[static_cast<std::size_t>(w.host)].up.bytesPerS)) {
    HostLink& h = m_hostLinks[static_cast<std::size_t>(w.host)];
    h.upFree = std::max(h.upFree, t0) + m_bytes / h.up.bytesPerS;
    sent = h.upFree + h.up.latencyS;
  }
  double arrival = sent + w.link.transfer(m_bytes);  // then through the worker's own link
  if (std::isfinite(m_shardLink.bytesPerS)) {
    const double start = std::max(m_shardInFree, sent + m_shardLink.latencyS);
    m_shardInFree = start + m_shardBytes / m_shardLink.bytesPerS;
    arrival = std::max(arrival, m_shardInFree);
  }
  // Sharded: the other shards' block sums come back before shard 0 takes the push (the
  // gradient guard judges the whole gradient), one more round trip of the worker's link.
  if (m_shards > 1) arrival += 2 * w.link.latencyS;
  return arrival;
}

// A pull's time: its own link, the shards' link out, then its host's link in. A host's link
// takes pulls in the order they are answered (each worker's own link differs little from
// its host-mates' where the profile sets one).
double SimRun::pullSeconds(const Worker& w, double t) {
  double seconds = w.link.transfer(m_bytes);
  if (std::isfinite(m_shardLink.bytesPerS)) {
    const double start = std::max(m_shardOutFree, t);
    m_shardOutFree = start + m_shardBytes / m_shardLink.bytesPerS;
    seconds = std::max(seconds, m_shardOutFree + m_shardLink.latencyS - t);
  }
  if (w.host >= 0 && std::isfinite(m_hostLinks[static_cast<std::size_t>(w.host)].down.bytesPerS)) {
    HostLink& h = m_hostLinks[static_cast<std::size_t>(w.host)];
    h.downFree = std::max(h.downFree, t + seconds) + m_bytes / h.down.bytesPerS;
    seconds = h.downFree + h.down.latencyS - t;
  }
  return seconds;
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
    // The push fails: nobody answers. The worker retries when a server is back (a
    // stateless one keeps the gradient and computes on meanwhile).
    w.phase = Worker::Phase::Offline;
    noteDetection(t);
    if (m_stateless) {
      startOutageWork(rank, t, true);
      return;
    }
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
  // The server's gradient guard, as handlePush applies it: a refused gradient never
  // reaches the policy (the worker pulls again), a clipped one is scaled down.
  const auto decision = m_guard->check(gradientNorm(w.gradient.data(), m_store->size()));
  const bool refused = decision.refused();
  if (refused || decision.verdict == GradientGuard::Verdict::Clip) {
    recordEvent(t, RE::REJECT, refused ? RE::GRADIENT_REFUSED : RE::GRADIENT_CLIPPED, w.name,
                describeDecision(decision, rank));
  }
  if (decision.verdict == GradientGuard::Verdict::Clip) {
    const auto scale = static_cast<float>(decision.scale);
    for (auto& v : w.gradient) v *= scale;
  }
  std::int64_t applied = 0;
  if (!refused) applied = offerToPolicy(rank, t);
  m_lastPusher = -1;
  if (gen == w.gen && w.phase != Worker::Phase::Dead) {
    m_parked.push_back(rank);
    m_lastPusher = rank;
  }
  m_busy = true;
  // Every shard takes in the push and applies its range of the updates at once: the
  // largest range's apply is the server's time (one shard: the whole model).
  const double cost = m_spec.sim().push_overhead_ms() / 1000.0 +
                      static_cast<double>(applied) * m_shardParams * m_spec.sim().apply_ns_per_param() * 1e-9;
  schedule(t + cost, Ev::ServerDone, 0, m_serverGen);
}

// A guarded push goes to the policy, and its updates are applied; returns the number of
// gradients applied.
std::int64_t SimRun::offerToPolicy(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  const auto r = static_cast<std::size_t>(rank);
  if (m_policy->state(rank) == ParallelState::Down) markUp(rank, t, "pushed again after being marked down");
  m_gradientOf[r] = w.gradient.data();
  m_baseVersionOf[r] = w.baseVersion;
  m_out.clear();
  m_policy->onPushedBatch(rank, w.source->batchSize());
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
  return applied;
}

void SimRun::onServerDone(double t) {
  m_busy = false;
  if (!serverAnswers()) return;
  if (m_recheck || t < m_chainStallUntil) {
    // On a host's shared link the order of the answers is who waits. The real server
    // answers the pusher in its own call (PushPull) before it wakes the parked pulls; so
    // does the engine there. (Elsewhere the order changes no time, and it stays as it was.)
    const auto pusher = std::find(m_parked.begin(), m_parked.end(), m_lastPusher);
    if (m_hostLinked && pusher != m_parked.end()) std::rotate(m_parked.begin(), pusher, std::next(pusher));
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
    noteVersionMade(v, t);
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
    m_recorder->record(DecisionRow{m_runId, d.t, node, what, d.reason, d.kind});
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
  m_divergence.onTestLoss(row.tS, v, e.loss);
}

// --- recording ----------------------------------------------------------------------------

void SimRun::recordIteration(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  ++m_gradients;
  m_samples += w.source->batchSize();
  m_waitSum += w.lastWait;
  m_computeSum += w.computeS;
  m_divergence.onTrainLoss(t, w.baseVersion, w.loss);
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
  if (const std::int64_t batch = w.source->batchSize(); batch != w.recordedBatch) {
    w.recordedBatch = batch;
    m_recorder->record(SampleRow{m_runId, w.name, "batch_size", t, v, static_cast<double>(batch)});
  }
}

void SimRun::onSpeedChange(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  recordEvent(t, RE::SPEED, RE::CODE_UNSPECIFIED, w.name, "slowdown " + std::to_string(slowdownAt(w.speed, t)) + " (scheduled)");
}
}  // namespace dasp::sim_detail
