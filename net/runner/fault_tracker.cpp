// SPDX-License-Identifier: MIT
#include "net/runner/fault_tracker.h"

#include <algorithm>

namespace dasp::net {
namespace {

namespace pb = dasp::ps::v1;

}  // namespace

FaultTracker::FaultTracker(const std::vector<v1::FaultSpec>& faults) {
  for (const auto& f : faults) {
    Drill d;
    d.spec = f;
    m_drills.push_back(d);
  }
  std::stable_sort(m_drills.begin(), m_drills.end(),
                   [](const Drill& a, const Drill& b) { return a.spec.at_s() < b.spec.at_s(); });
  for (std::size_t i = 0; i < m_drills.size(); ++i) {
    auto& r = m_drills[i].record;
    r.index = static_cast<int>(i);
    r.node = m_drills[i].spec.node();
    r.action = faultActionName(m_drills[i].spec.action());
  }
}

std::vector<FaultTracker::Due> FaultTracker::due(double now) {
  std::lock_guard<std::mutex> lock(m_mu);
  std::vector<Due> out;
  for (std::size_t i = 0; i < m_drills.size(); ++i) {
    auto& d = m_drills[i];
    if (!d.firedDone && now >= d.spec.at_s()) {
      out.push_back({static_cast<int>(i), d.spec, false});
      d.firedDone = true;
    } else if (d.firedDone && !d.restartDone && d.spec.has_restart_after_s() &&
               now >= d.record.atS + d.spec.restart_after_s()) {
      out.push_back({static_cast<int>(i), d.spec, true});
      d.restartDone = true;
    }
  }
  return out;
}

void FaultTracker::fired(int index, double t, const std::string& target, bool serverFault, bool chain, int rank) {
  std::lock_guard<std::mutex> lock(m_mu);
  auto& d = m_drills[static_cast<std::size_t>(index)];
  d.rank = rank;
  d.record.atS = t;
  d.record.node = target;
  d.record.versionBefore = m_version;
  d.serverFault = serverFault;
  d.chain = chain;
  d.timed = true;
}

void FaultTracker::restarted(int index, double t) {
  std::lock_guard<std::mutex> lock(m_mu);
  m_drills[static_cast<std::size_t>(index)].record.restartAtS = t;
}

void FaultTracker::defer(int index, bool restart) {
  std::lock_guard<std::mutex> lock(m_mu);
  auto& d = m_drills[static_cast<std::size_t>(index)];
  (restart ? d.restartDone : d.firedDone) = false;
}

std::string FaultTracker::targetOf(int index) const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_drills[static_cast<std::size_t>(index)].record.node;
}

void FaultTracker::addDetail(int index, const std::string& text) {
  std::lock_guard<std::mutex> lock(m_mu);
  auto& detail = m_drills[static_cast<std::size_t>(index)].record.detail;
  detail += (detail.empty() ? "" : "; ") + text;
}

bool FaultTracker::restartPending(const std::string& node) const {
  std::lock_guard<std::mutex> lock(m_mu);
  for (const auto& d : m_drills) {
    if (d.firedDone && !d.restartDone && d.record.node == node && d.record.action == "kill" &&
        (d.spec.has_restart_after_s() || d.manual)) {
      return true;
    }
  }
  return false;
}

int FaultTracker::addManual(const v1::FaultSpec& spec, double t, const std::string& target, bool serverFault,
                            bool chain) {
  std::lock_guard<std::mutex> lock(m_mu);
  Drill d;
  d.spec = spec;
  d.spec.clear_restart_after_s();
  d.manual = true;
  d.firedDone = true;
  d.timed = true;
  d.serverFault = serverFault;
  d.chain = chain;
  d.record.index = static_cast<int>(m_drills.size());
  d.record.node = target;
  d.record.action = faultActionName(spec.action());
  d.record.atS = t;
  d.record.versionBefore = m_version;
  d.record.detail = "by hand";
  m_drills.push_back(d);
  return d.record.index;
}

void FaultTracker::restartedManual(const std::string& node, double t) {
  std::lock_guard<std::mutex> lock(m_mu);
  for (auto it = m_drills.rbegin(); it != m_drills.rend(); ++it) {
    if (it->manual && !it->restartDone && it->record.node == node) {
      it->restartDone = true;
      it->record.restartAtS = t;
      return;
    }
  }
}

std::vector<int> FaultTracker::resumedWithoutCpu() const {
  std::lock_guard<std::mutex> lock(m_mu);
  std::vector<int> out;
  for (std::size_t i = 0; i < m_drills.size(); ++i) {
    if (m_drills[i].record.resumedAtS && !m_drills[i].cpuTaken) out.push_back(static_cast<int>(i));
  }
  return out;
}

void FaultTracker::setCpu(int index, double cpuS) {
  std::lock_guard<std::mutex> lock(m_mu);
  auto& d = m_drills[static_cast<std::size_t>(index)];
  d.record.cpuS = cpuS;
  d.cpuTaken = true;
}

FaultTracker::Drill* FaultTracker::openDisconnectLocked(const std::string& node, double t) {
  Drill* open = nullptr;
  for (auto& d : m_drills) {
    if (d.timed && d.spec.action() == v1::FaultSpec::DISCONNECT && d.record.node == node && d.record.atS <= t + 1e-9 &&
        !d.linkLinesDone) {
      open = &d;
    }
  }
  return open;
}

FaultTracker::Drill* FaultTracker::latestServerDrillLocked(double t) {
  Drill* latest = nullptr;
  for (auto& d : m_drills) {
    if (d.timed && d.serverFault && d.record.atS <= t + 1e-9) latest = &d;
  }
  return latest;
}

void FaultTracker::observe(const pb::EventBatch& batch, const std::function<std::string(int)>& nodeName) {
  std::lock_guard<std::mutex> lock(m_mu);
  for (const auto& e : batch.events()) {
    switch (e.kind()) {
      case pb::ClusterEvent::ITERATION:
        // A cut-off worker is back when a push of its own reaches the server.
        for (auto& d : m_drills) {
          if (d.timed && d.spec.action() == v1::FaultSpec::DISCONNECT && !d.record.resumedAtS && d.rank >= 0 &&
              e.rank() == d.rank && d.record.restartAtS && e.t_s() >= *d.record.restartAtS) {
            d.record.resumedAtS = e.t_s();
            d.record.versionAfter = m_version;
          }
        }
        break;
      case pb::ClusterEvent::APPLY:
        m_version = e.version();
        for (auto& d : m_drills) {
          if (d.spec.action() == v1::FaultSpec::DISCONNECT) continue;  // resumes with its own push (above)
          // Training progresses again with the first update after the fault: on a worker
          // fault, any later update; on a chain head's death, one of the promoted head; on
          // any other server fault, one made after the restart (or resume), never an
          // update of the old server delivered late.
          if (!d.timed || d.record.resumedAtS || e.t_s() <= d.record.atS) continue;
          if (d.serverFault) {
            if (d.chain && d.record.action == "kill") {
              if (!d.record.versionAfter) continue;
            } else if (!d.record.restartAtS || e.t_s() < *d.record.restartAtS) {
              continue;
            }
          }
          d.record.resumedAtS = e.t_s();
          // A paused server goes on from the version it held: this update is its next.
          if (keepsState(d) && !d.record.versionAfter) d.record.versionAfter = e.version() - 1;
        }
        break;
      case pb::ClusterEvent::EVALUATION:
        // At the time its version was made: an evaluation taken before a fault may be
        // reported only after it, to the restarted server.
        if (e.accuracy() == e.accuracy()) m_evaluations.push_back({e.version_t_s(), e.version(), e.accuracy()});
        break;
      case pb::ClusterEvent::NODE:
        if (e.code() != v1::RunEvent::NODE_DOWN) break;
        for (auto& d : m_drills) {
          if (d.timed && d.record.node == nodeName(e.rank()) && e.t_s() >= d.record.atS &&
              (!d.record.detectedAtS || e.t_s() < *d.record.detectedAtS)) {
            d.record.detectedAtS = e.t_s();
          }
        }
        break;
      case pb::ClusterEvent::RECOVERY: {
        const auto what = e.code();
        if (what != v1::RunEvent::RESTORED && what != v1::RunEvent::STARTED_FRESH && what != v1::RunEvent::ADOPTED &&
            what != v1::RunEvent::PROMOTED) {
          break;
        }
        if (Drill* d = latestServerDrillLocked(e.t_s())) {
          if (!d->record.versionAfter) {
            d->record.versionAfter = e.version();
            d->record.detail += (d->record.detail.empty() ? "" : "; ") + e.detail();
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

void FaultTracker::observeRecovery(const std::string& node, const RecoveryReport& report, double now) {
  // Progress lines show the work on the lanes; the reconnected line sums it up.
  if (report.kind == RecoveryReport::Kind::OutageProgress) return;
  std::lock_guard<std::mutex> lock(m_mu);
  // A cut-off worker's own lines belong to its DISCONNECT drill; every other outage line
  // to the latest server fault.
  Drill* d = openDisconnectLocked(node, now);
  if (d == nullptr) d = latestServerDrillLocked(now);
  if (d == nullptr) return;
  if (report.kind == RecoveryReport::Kind::OutageDetected) {
    if (!d->record.detectedAtS || now < *d->record.detectedAtS) d->record.detectedAtS = now;
    // What the failed server acknowledged: the highest version any worker was told.
    if (report.ackedVersion >= 0) {
      d->record.ackedBefore = std::max(d->record.ackedBefore.value_or(0), report.ackedVersion);
    }
  } else {
    if (d->spec.action() == v1::FaultSpec::DISCONNECT) d->linkLinesDone = true;
    d->record.gradientsDuringOutage += report.computed;
    d->record.gradientsDropped += report.dropped;
    d->record.gradientsDiscarded += report.discarded;
  }
}

std::int64_t FaultTracker::currentVersion() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_version;
}

std::vector<FaultRecord> FaultTracker::records() const {
  std::lock_guard<std::mutex> lock(m_mu);
  std::vector<FaultRecord> out;
  for (const auto& d : m_drills) {
    if (d.firedDone) out.push_back(d.record);
  }
  return out;
}

std::vector<EvalPoint> FaultTracker::evaluations() const {
  std::lock_guard<std::mutex> lock(m_mu);
  std::vector<EvalPoint> out = m_evaluations;
  // In the order of their versions' times (one reported late comes in among the others).
  std::stable_sort(out.begin(), out.end(), [](const EvalPoint& a, const EvalPoint& b) { return a.tS < b.tS; });
  return out;
}

}  // namespace dasp::net
