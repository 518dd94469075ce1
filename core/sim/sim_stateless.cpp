// SPDX-License-Identifier: MIT
// The virtual cluster's stateless recovery (recovery STATELESS), as the real nodes do it
// (net/client/nodes.cpp, net/server/ps_recovery.cpp): through an outage each worker keeps
// computing gradients on the parameters of its last pull, into a bounded backlog (the
// gradient of a push that failed first); the restarted server adopts the highest version a
// rejoining worker holds, with momentum from zero; then each worker flushes its backlog,
// which the server applies in one step by recovery.backlog_rule, and pulls again.
// One difference from the real worker: a gradient still being computed when the server
// comes back is not added to the backlog (the engine's iteration ends at the restart).
#include "core/params/backlog_rule.h"
#include "core/sim/sim_run.h"

namespace dasp::sim_detail {

void SimRun::startOutageWork(int rank, double t, bool keepInFlight) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  w.phase = Worker::Phase::Offline;
  if (w.heldParams.empty()) return;  // it never pulled: nothing to compute on
  const auto& rec = m_spec.recovery();
  if (!w.backlog) {
    w.backlog = std::make_unique<Backlog>(static_cast<std::size_t>(rec.backlog_max_gradients()),
                                          rec.backlog_max_mb() * 1e6, w.heldParams.size());
  }
  if (keepInFlight) {
    float* into = w.backlog->next();
    std::copy(w.gradient.begin(), w.gradient.end(), into);
    w.backlog->commit(w.baseVersion, t);
    if (m_serverFault >= 0) ++m_faults[static_cast<std::size_t>(m_serverFault)].record.gradientsDuringOutage;
  }
  schedule(t + scaledToBatch(w, nominalIterationSeconds(w, t)), Ev::OutageCompute, rank, w.gen);
}

void SimRun::onOutageCompute(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  if (m_serverUp || w.phase != Worker::Phase::Offline || !w.backlog) return;
  float* into = w.backlog->next();
  auto loss = w.source->computeGradient(w.heldParams.data(), into);
  if (!loss) {
    m_failure = w.name + ": " + loss.message();
    return;
  }
  w.backlog->commit(w.baseVersion, t);
  if (m_serverFault >= 0) ++m_faults[static_cast<std::size_t>(m_serverFault)].record.gradientsDuringOutage;
  schedule(t + scaledToBatch(w, nominalIterationSeconds(w, t)), Ev::OutageCompute, rank, w.gen);
}

// The highest version any live worker holds, with its parameters; none: the initial ones.
void SimRun::adoptFromWorkers(double t) {
  int from = -1;
  for (std::size_t r = 0; r < m_workers.size(); ++r) {
    const auto& w = m_workers[r];
    if (w.phase == Worker::Phase::Dead || w.heldParams.empty()) continue;
    if (from < 0 || w.baseVersion > m_workers[static_cast<std::size_t>(from)].baseVersion) from = static_cast<int>(r);
  }
  if (from < 0) {
    m_store->restore(m_compute.initialParameters.data(), nullptr, 0);
    restartServerState(t, RE::STARTED_FRESH,
                       "no rejoining worker offered parameters; starting from the initial parameters (version 0)");
    return;
  }
  const auto& w = m_workers[static_cast<std::size_t>(from)];
  m_store->restore(w.heldParams.data(), nullptr, w.baseVersion);  // momentum restarts from zero
  restartServerState(t, RE::ADOPTED,
                     "adopted version " + std::to_string(w.baseVersion) + " from " + w.name +
                         " (the highest any rejoining worker held); momentum restarts from zero");
}

// Sends a rejoined worker's backlog, one push per gradient over its link; false: none.
bool SimRun::flushBacklog(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  if (!w.backlog || w.backlog->empty()) return false;  // (only a stateless run has backlogs)
  w.phase = Worker::Phase::Offline;
  const double sent = static_cast<double>(w.backlog->size()) * w.link.transfer(m_bytes);
  schedule(t + sent, Ev::BacklogArrive, rank, w.gen);
  return true;
}

void SimRun::onBacklogArrive(int rank, double t) {
  auto& w = m_workers[static_cast<std::size_t>(rank)];
  if (!m_serverUp) {
    startOutageWork(rank, t, false);  // the server failed again: the backlog waits on
    return;
  }
  const auto n = static_cast<std::size_t>(m_store->size());
  m_backlogSum.assign(n, 0.0f);
  std::int64_t oldestBase = m_store->version();
  // Each push passes the server's gradient guard, as in handlePush: a refused one never
  // reaches the backlog's sum, nor its count.
  std::int64_t accepted = 0;
  for (std::size_t i = 0; i < w.backlog->size(); ++i) {
    const auto& item = w.backlog->at(i);
    const auto decision = m_guard->check(gradientNorm(item.gradient.data(), m_store->size()));
    if (decision.refused()) continue;
    ++accepted;
    const auto scale = static_cast<float>(decision.verdict == GradientGuard::Verdict::Clip ? decision.scale : 1.0);
    for (std::size_t k = 0; k < n; ++k) m_backlogSum[k] += scale * item.gradient[k];
    oldestBase = std::min(oldestBase, item.baseVersion);
  }
  const std::int64_t base = m_store->version();
  const BacklogStep step =
      backlogStep(m_spec.recovery(), accepted, learningRateAt(m_spec.optimizer(), base));
  const float* g = m_backlogSum.data();
  m_store->apply(&g, &step.weight, 1, step.lr);
  m_policy->setVersion(m_store->version());
  noteVersionMade(m_store->version(), t);
  m_applied += accepted;
  m_maxStaleness = std::max(m_maxStaleness, base - oldestBase);
  if (m_serverFault >= 0) {
    m_faults[static_cast<std::size_t>(m_serverFault)].record.gradientsDropped += w.backlog->dropped();
  }
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", step.lr);
  recordEvent(t, RE::RECOVERY, RE::BACKLOG, "server",
              w.name + ": applied a backlog of " + std::to_string(accepted) + " gradients in one step (rule " + step.rule +
                  ", lr " + lr + "; " + std::to_string(w.backlog->dropped()) + " dropped by the bound)",
              w.name);
  w.backlog->clear();
  noteUpdateForFaults(t);
  checkpointIfDue(t);
  m_recheck = true;
  park(rank, t);
  releaseParked(t);
}

}  // namespace dasp::sim_detail
