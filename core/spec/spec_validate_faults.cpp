// SPDX-License-Identifier: MIT
// validateSpec's checks of fault tolerance: the recovery modes' fields and the fault drills.
#include "core/spec/spec_validate_parts.h"
#include "core/spec/spec_text.h"

#include "core/params/shard_layout.h"

#include <algorithm>
#include <cmath>

namespace dasp::spec_validate {

using namespace spec_text;

Status validateRecoveries(const ExperimentSpec& spec) {
  auto checkRecovery = [&](const v1::RecoverySpec& r, const std::string& prefix) -> Status {
    if (r.has_checkpoint_every_updates() && r.checkpoint_every_updates() < 0) {
      return bad(prefix + "checkpoint_every_updates", "must be >= 0");
    }
    if (!(r.checkpoint_every_s() >= 0)) return bad(prefix + "checkpoint_every_s", "must be >= 0");
    if (r.mode() == v1::RecoverySpec::CHECKPOINT && r.has_checkpoint_every_updates() &&
        r.checkpoint_every_updates() == 0 && r.checkpoint_every_s() <= 0) {
      return bad(prefix + "checkpoint_every_updates", "0 needs checkpoint_every_s > 0 (otherwise nothing is saved)");
    }
    if (r.has_checkpoint_keep() && r.checkpoint_keep() < 1) return bad(prefix + "checkpoint_keep", "must be >= 1");
    if (r.has_replicas() && (r.replicas() < 2 || r.replicas() > 16)) {
      return bad(prefix + "replicas", "must be in [2, 16] (got " + std::to_string(r.replicas()) + ")");
    }
    if (r.has_forward_every() && r.forward_every() < 1) return bad(prefix + "forward_every", "must be >= 1");
    if (r.has_backlog_max_gradients() && r.backlog_max_gradients() < 1) {
      return bad(prefix + "backlog_max_gradients", "must be >= 1");
    }
    if (r.has_backlog_max_mb() && !(r.backlog_max_mb() > 0)) return bad(prefix + "backlog_max_mb", "must be > 0");
    if (r.has_backlog_lr_scale() && !(r.backlog_lr_scale() > 0 && r.backlog_lr_scale() <= 1)) {
      return bad(prefix + "backlog_lr_scale", "must be in (0, 1] (got " + num(r.backlog_lr_scale()) + ")");
    }
    if (r.has_backlog_lr_threshold() && r.backlog_lr_threshold() < 0) {
      return bad(prefix + "backlog_lr_threshold", "must be >= 0");
    }
    if (r.has_backlog_clip_gradients() && r.backlog_clip_gradients() < 1) {
      return bad(prefix + "backlog_clip_gradients",
                 "must be >= 1 (got " + std::to_string(r.backlog_clip_gradients()) + ")");
    }
    if (r.has_local_max_steps() && r.local_max_steps() < 1) return bad(prefix + "local_max_steps", "must be >= 1");
    if (r.local_copies() && r.mode() != v1::RecoverySpec::CHAIN) {
      return bad(prefix + "local_copies", "is for mode CHAIN (a head's failover); mode LOCAL always trains local "
                                          "copies, and the other modes have no failover (got mode " +
                                              recoveryName(r.mode()) + ")");
    }
    if (r.has_reconnect_timeout_s() && !(r.reconnect_timeout_s() > 0)) {
      return bad(prefix + "reconnect_timeout_s", "must be > 0");
    }
    if (r.has_call_timeout_s() && !(r.call_timeout_s() > 0 && r.call_timeout_s() <= 3600)) {
      return bad(prefix + "call_timeout_s", "must be in (0, 3600] seconds (got " + num(r.call_timeout_s()) + ")");
    }
    return Status::ok();
  };
  if (auto st = checkRecovery(spec.recovery(), "recovery."); !st) return st;
  for (int i = 0; i < spec.suite_size(); ++i) {
    if (auto st = checkRecovery(spec.suite(i).recovery(), "suite[" + std::to_string(i) + "].recovery."); !st) return st;
  }
  return Status::ok();
}

Status validateFaults(const ExperimentSpec& spec) {
  // Fault drills name nodes of this run: server (the head; shard 0), server-N (chain
  // replicas), shard-N (a sharded server's other shards) and shard-N-rK (their replicas
  // under chain replication per shard), evaluator, or a worker.
  std::vector<std::string> nodes{"server", "evaluator"};
  std::vector<std::string> workers;
  for (const auto& w : expandWorkers(spec)) workers.push_back(w.name());
  const bool chain = spec.recovery().mode() == v1::RecoverySpec::CHAIN;
  const int replicas = spec.recovery().has_replicas() ? spec.recovery().replicas() : 3;
  const int shards = std::min(spec.ps().shards(), kMaxShards);  // (out of range: validateShards names it)
  for (int r = 0; chain && shards <= 1 && r < replicas; ++r) nodes.push_back("server-" + std::to_string(r));
  for (int s = 1; s < shards; ++s) {
    nodes.push_back("shard-" + std::to_string(s));
    for (int r = 1; chain && r < std::min(replicas, 16); ++r) {
      nodes.push_back("shard-" + std::to_string(s) + "-r" + std::to_string(r));
    }
  }
  nodes.insert(nodes.end(), workers.begin(), workers.end());
  for (int i = 0; i < spec.faults_size(); ++i) {
    const auto& f = spec.faults(i);
    const std::string field = "faults[" + std::to_string(i) + "]";
    if (!contains(nodes, f.node())) {
      return bad(field + ".node", "no node '" + f.node() + "' in this run (nodes: " + joined(nodes) + ")");
    }
    if (!(f.at_s() >= 0)) return bad(field + ".at_s", "must be >= 0 (got " + num(f.at_s()) + ")");
    if (f.has_restart_after_s() && !(f.restart_after_s() >= 0 && std::isfinite(f.restart_after_s()))) {
      return bad(field + ".restart_after_s", "must be >= 0 (got " + num(f.restart_after_s()) + ")");
    }
    if (f.action() == v1::FaultSpec::DISCONNECT) {
      if (!contains(workers, f.node())) {
        return bad(field + ".node", "DISCONNECT cuts a worker's link to the servers; '" + f.node() +
                                        "' is not a worker (use KILL or PAUSE for it)");
      }
    }
  }
  return Status::ok();
}

}  // namespace dasp::spec_validate
