// SPDX-License-Identifier: MIT
// The virtual cluster's fault drills: kills and pauses, detection, restarts and the
// recovery modes (checkpoint, chain promotion; stateless adoption in sim_stateless.cpp), as
// the real runner's.
#include "core/sim/sim_run.h"

namespace dasp::sim_detail {

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
  // Updates lost are counted against what the workers were told, as the runner counts them.
  if (m_ackedVersion >= 0) open.record.ackedBefore = m_ackedVersion;
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
  if (m_stateless) {
    // A queued push failed with the server: the worker keeps its gradient.
    for (const auto& [rank, gen] : m_pushQueue) {
      if (gen == m_workers[static_cast<std::size_t>(rank)].gen) startOutageWork(rank, t, true);
    }
  } else {
    slot.record.gradientsDiscarded += static_cast<std::int64_t>(m_pushQueue.size());
  }
  m_pushQueue.clear();
  for (int r : m_parked) {
    m_workers[static_cast<std::size_t>(r)].phase = Worker::Phase::Offline;
    if (m_stateless) startOutageWork(r, t, false);
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
  m_policy->setVersion(m_store->version());  // the restored, promoted or adopted version
  m_guard = std::make_unique<GradientGuard>(m_spec.strategy().gradient_guard());
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
  m_ackedVersion = -1;  // the recovered server acknowledges afresh
  recordEvent(t, RE::RECOVERY, how, "server", text, promoted);
  for (int r = 0; r < n; ++r) {
    auto& w = m_workers[static_cast<std::size_t>(r)];
    if (w.phase == Worker::Phase::Dead) continue;
    ++w.gen;  // an iteration computed for the old server is not pushed to the new one
    if (flushBacklog(r, t)) continue;
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
  if (m_stateless) {
    adoptFromWorkers(t);
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
}  // namespace dasp::sim_detail
