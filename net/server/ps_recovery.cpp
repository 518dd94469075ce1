// SPDX-License-Identifier: MIT
// Recovery in the parameter server (internal: net/server/ps_server_impl.h): where a restarted
// server's parameters come from, checkpoints (the copy is taken under Impl::mu, the writer
// thread writes it), stateless adoption of the rejoining workers' parameters, and the
// backlogs they computed during the outage.
#include "net/server/ps_reactors.h"

#include "core/params/backlog_rule.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace dasp::net {

// Called by start() before the server serves (nothing else runs yet, so the *Locked
// functions are called without the lock): where a restarted server's parameters come
// from, and whether it waits for the workers' parameters (stateless) or its run goes on
// at once.
Status ParameterServer::Impl::restoreBeforeServing() {
  auto& o = options;
  const auto& rec = o.spec.recovery();
  const std::int64_t n = store->size();
  // Shards 1..S-1 restore what shard 0's RESTORE says (ps_shard_recovery.cpp).
  if (follower()) return Status::ok();
  // Recovery: where a restarted server's parameters come from.
  if (sharded() && o.resumeAtS >= 0 && !o.replica && !o.adoptFromWorkers) {
    if (auto st = restoreShardsBeforeServing(); !st) return st;
  } else if (o.restoreCheckpoint) {
    if (o.checkpointDir.empty()) return Status::error(o.name + ": restoring needs a checkpoint directory");
    CheckpointDirectory dir(o.checkpointDir, std::max(1, rec.checkpoint_keep()));
    std::vector<std::string> skipped;
    auto latest = dir.loadLatest(&skipped, o.modelName, n);
    std::string skippedText;
    for (const auto& line : skipped) skippedText += "; skipped " + line;
    if (latest) {
      store->restore(latest->parameters.data(), latest->momentum.data(), latest->version);
      restartVersionTimesLocked(latest->version, o.resumeAtS > 0 ? o.resumeAtS : 0.0);
      lastCheckpointVersion = latest->version;
      emitRecoveryLocked(v1::RunEvent::RESTORED, "restored " + latest->path + " (version " + std::to_string(latest->version) +
                                         ", taken at " + std::to_string(latest->runTimeS).substr(0, 6) + " s)" +
                                         skippedText,
                         latest->version);
    } else {
      emitRecoveryLocked(v1::RunEvent::STARTED_FRESH, latest.message() + skippedText + "; starting from the initial parameters",
                         0);
    }
  } else if (o.resumeAtS >= 0 && !o.adoptFromWorkers && !o.replica) {
    emitRecoveryLocked(v1::RunEvent::STARTED_FRESH,
                       "restarted from the initial parameters (recovery " + recoveryName(rec.mode()) + ")", 0);
  }
  if (o.resumeAtS >= 0 && !o.replica) {
    for (auto& j : joined) j = 1;
    for (auto& c : lastContact) c = o.resumeAtS;
    if (o.adoptFromWorkers) {
      // Wait for the workers' parameters: until every worker rejoined. Before the first
      // rejoin, as long as a worker goes on trying (recovery.reconnect_timeout_s): the
      // restarted process may start seconds before the workers' next try reaches it, and
      // starting fresh then would throw away the model every worker holds. After it, the
      // rest get a few seconds (acceptRejoinOfferLocked).
      adopting = true;
      if (localMode()) localCopies.reset(static_cast<std::size_t>(n));
      // Every rank counts as joined (the run goes on), so the wait counts the rejoins itself.
      offered.assign(static_cast<std::size_t>(o.workers), 0);
      adoptDeadline = o.resumeAtS + rec.reconnect_timeout_s();
      emitRecoveryLocked(v1::RunEvent::ADOPTING, "restarted; waiting for the rejoining workers' parameters", 0);
    } else {
      started = true;
    }
  }
  return Status::ok();
}

// Called by start(): checkpoint mode opens (and prepares) the directory the writer uses.
Status ParameterServer::Impl::openCheckpoints() {
  const auto& rec = options.spec.recovery();
  if (rec.mode() == v1::RecoverySpec::CHECKPOINT && !options.checkpointDir.empty()) {
    checkpoints = std::make_unique<CheckpointDirectory>(options.checkpointDir, std::max(1, rec.checkpoint_keep()));
    if (auto st = checkpoints->prepare(); !st) return st;
  }
  return Status::ok();
}

// After every update: periodic chain forwarding (every K > 1 updates) and checkpoints.
void ParameterServer::Impl::afterUpdateLocked(double t) {
  const std::int64_t v = store->version();
  const auto& rec = options.spec.recovery();
  if (chainMode() && isHead && replicator && rec.forward_every() > 1 && v % rec.forward_every() == 0 &&
      replicator->hasSuccessor()) {
    auto u = replicator->acquire();
    fillStateLocked(*u);
    replicator->enqueue(std::move(u));
  }
  maybeCheckpointLocked(t);
}

// Takes the copy for the writer when a checkpoint is due and the writer is free (the
// writer calls it again when it finishes, so a checkpoint due meanwhile is not lost).
void ParameterServer::Impl::maybeCheckpointLocked(double t) {
  if (follower()) return;  // shards 1..S-1 write at shard 0's CHECKPOINT steps only
  const std::int64_t v = store->version();
  const auto& rec = options.spec.recovery();
  if (checkpoints && !checkpointDue && v > lastCheckpointVersion) {
    const bool byUpdates = rec.checkpoint_every_updates() > 0 && v - lastCheckpointVersion >= rec.checkpoint_every_updates();
    const bool byTime = rec.checkpoint_every_s() > 0 && t - lastCheckpointT >= rec.checkpoint_every_s();
    if (byUpdates || byTime) {
      if (sharded()) {
        // Every other shard writes its range of the same version.
        shardStep.Clear();
        shardStep.set_kind(pb::ShardStep::CHECKPOINT);
        shardStep.set_version(v);
        logStepLocked();
      }
      takeCheckpointLocked(t);
    }
  }
}

void ParameterServer::Impl::takeCheckpointLocked(double t) {
  checkpointParams.assign(store->parameters(), store->parameters() + store->size());
  checkpointMomentum.assign(store->momentumBuffer().begin(), store->momentumBuffer().end());
  checkpointVersion = store->version();
  checkpointT = t;
  lastCheckpointVersion = checkpointVersion;
  lastCheckpointT = t;
  checkpointDue = true;
  checkpointCv.notify_one();
}

void ParameterServer::Impl::writeCheckpoints() {
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    checkpointCv.wait(lock, [&] { return checkpointDue || shuttingDown; });
    if (!checkpointDue) break;
    const std::int64_t v = checkpointVersion;
    const double t = checkpointT;
    lock.unlock();
    const Status written = checkpoints->write(v, t, options.modelName, checkpointParams.data(),
                                              checkpointMomentum.data(), store->size());
    lock.lock();
    checkpointDue = false;
    if (written) {
      ++counters.checkpoints;
      emitRecoveryLocked(v1::RunEvent::CHECKPOINT, "checkpoint of version " + std::to_string(v) + " written", v);
    } else {
      ++counters.checkpointFailures;
      emitRecoveryLocked(v1::RunEvent::CHECKPOINT_FAILED, written.message() + "; training goes on", v);
    }
    maybeCheckpointLocked(now());
  }
}

void ParameterServer::Impl::noteAdoptionOfferLocked(int rank, double t) {
  if (std::count(offered.begin(), offered.end(), 1) == 0) {
    adoptDeadline = std::min(adoptDeadline, t + std::min(5.0, options.spec.strategy().barrier_timeout_s()));
    wakeTickerIfDueLocked();
  }
  offered[static_cast<std::size_t>(rank)] = 1;
}

void ParameterServer::Impl::finishAdoptionLocked() {
  if (!adopting) return;
  adopting = false;
  started = true;
  const double t = now();
  for (auto& c : lastContact) c = t;
  if (sharded()) restoreAdoptedShardsLocked();
  const std::string everyShard = sharded() ? "; every shard takes its range of it" : "";
  if (localMode() && localCopies.steps() > 0) {
    adoptLocalAverageLocked(t);
  } else if (adoptedVersion >= 0) {
    emitRecoveryLocked(v1::RunEvent::ADOPTED, "adopted version " + std::to_string(adoptedVersion) + " from " + adoptedFrom +
                                      " (the highest any rejoining worker held" + everyShard +
                                      "); momentum restarts from zero",
                       adoptedVersion);
  } else {
    emitRecoveryLocked(v1::RunEvent::STARTED_FRESH,
                       "no rejoining worker offered parameters; starting from the initial parameters (version 0)" +
                           everyShard,
                       0);
  }
  for (auto& j : parkedJoins) {
    j.reply->set_server_t_s(t);
    j.reactor->Finish(grpc::Status::OK);
  }
  parkedJoins.clear();
  releaseParkedLocked(t);
}

// Recovery LOCAL: the copies the workers trained through the outage, each weighted by its
// local steps, become one version after the highest any of them started from (every
// acknowledged update is in it). Momentum restarts from zero: the copies' own momenta
// stayed with the workers, and a fresh direction suits the merged point.
void ParameterServer::Impl::adoptLocalAverageLocked(double t) {
  std::vector<float> average(static_cast<std::size_t>(store->size()));
  localCopies.average(average.data());
  const std::int64_t version = std::max<std::int64_t>(0, adoptedVersion) + 1;
  store->restore(average.data(), nullptr, version);
  policy->setVersion(version);
  restartVersionTimesLocked(version, t);
  recordStateLocked(UpdateRecordKind::State);
  localAdoptionVersion = version;
  localMerged = localCopies.steps();
  char spread[32];
  std::snprintf(spread, sizeof spread, "%.4g", localCopies.spread());
  emitRecoveryLocked(v1::RunEvent::ADOPTED,
                     "adopted the average of " + std::to_string(localCopies.copies()) + " workers' copies (" +
                         std::to_string(localMerged) + " local steps merged, each copy weighted by its steps; " +
                         "the newest started from version " + std::to_string(adoptedVersion) +
                         ") as version " + std::to_string(version) + "; the copies' spread (RMS distance from " +
                         "their average) " + spread + "; momentum restarts from zero",
                     version, -1, localMerged);
  localCopies.reset(0);
}

// Recovery LOCAL: a copy that returns to a server which did not take it into an adoption
// (a worker back after the others, or one whose own link failed while the server lived)
// is merged into the current parameters as one more member of an average. The current
// parameters weigh the work they hold since the copy's base: an update per version made
// since, and the steps merged at an adoption in between. Momentum is kept (the run went on).
void ParameterServer::Impl::mergeReturningCopyLocked(int rank, const std::string& name, const float* copy,
                                                      std::int64_t base, std::int64_t steps, double t) {
  const std::int64_t version = store->version();
  std::int64_t weight = version - base;
  if (localAdoptionVersion > base) weight += localMerged - 1;
  weight = std::max<std::int64_t>(1, weight);
  const auto n = static_cast<std::size_t>(store->size());
  std::vector<float> merged(store->parameters(), store->parameters() + n);
  const std::vector<float> momentum = store->momentumBuffer();
  mergeLocalCopy(merged.data(), weight, copy, steps, n);
  store->restore(merged.data(), momentum.data(), version + 1);
  policy->setVersion(version + 1);
  versionTime.push_back(t);
  recordStateLocked(UpdateRecordKind::State);
  if (chainMode() && isHead && replicator && replicator->hasSuccessor()) {
    // A merge is no gradient step the replicas could repeat: the chain gets the state whole.
    auto u = replicator->acquire();
    fillStateLocked(*u);
    replicator->enqueue(std::move(u));
  }
  emitRecoveryLocked(v1::RunEvent::ADOPTED,
                     name + " returned with its copy (" + std::to_string(steps) + " local steps on version " +
                         std::to_string(base) + "): merged into version " + std::to_string(version + 1) +
                         " against the current parameters' " + std::to_string(weight) +
                         " (updates since its base, and steps merged by an adoption since); momentum kept",
                     version + 1, rank, steps);
  releaseParkedLocked(t);
}

// Stateless recovery: the gradients a worker computed while no server answered arrive
// one by one and are applied together, in one step, by the spec's backlog rule.
grpc::Status ParameterServer::Impl::handleBacklogLocked(const pb::PushRequest& req, const float* grad,
                                                        float clipScale, double t, pb::PushReply* reply) {
  const auto r = static_cast<std::size_t>(req.rank());
  const auto n = static_cast<std::size_t>(store->size());
  auto& sum = backlogSum[r];
  if (sum.size() != n) sum.assign(n, 0.0f);
  if (req.backlog_index() == 0) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    backlogCount[r] = 0;
    backlogOldestBase[r] = req.base_version();
  }
  for (std::size_t i = 0; i < n; ++i) sum[i] += grad[i];
  if (sharded()) {  // every other shard adds its range of this push (clipped alike)
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::BACKLOG);
    shardStep.set_rank(req.rank());
    shardStep.set_call_seq(req.call_seq());
    shardStep.set_scale(clipScale);
    shardStep.set_starts_sum(req.backlog_index() == 0);
    logStepLocked();
  }
  ++backlogCount[r];
  backlogOldestBase[r] = std::min(backlogOldestBase[r], req.base_version());
  reply->set_stop(stopping);
  if (req.backlog_index() + 1 < req.backlog_total() || stopping) {
    reply->set_outcome("held");
    reply->set_version(store->version());
    return grpc::Status::OK;
  }
  const std::int64_t count = backlogCount[r];
  const BacklogStep step =
      backlogStep(options.spec.recovery(), count, learningRateAt(options.spec.optimizer(), store->version()));
  const double weight = step.weight;
  const double lr = step.lr;
  const std::string& rule = step.rule;
  const std::int64_t base = store->version();
  const float* g = sum.data();
  store->apply(&g, &weight, 1, lr);
  policy->setVersion(store->version());
  recordUpdateLocked(&g, &weight, 1, lr);
  if (sharded()) {  // every other shard applies its range's sum alike
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::APPLY_BACKLOG);
    shardStep.set_rank(req.rank());
    shardStep.set_version(store->version());
    shardStep.set_lr(lr);
    shardStep.add_weights(weight);
    logStepLocked();
  }
  versionTime.push_back(t);
  counters.applied += count;
  counters.backlogApplied += count;
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::APPLY);
    e->set_t_s(t);
    e->set_rank(req.rank());
    e->set_parallel_state(stateName(req.rank()));
    e->set_version(store->version());
    e->set_staleness(std::max<std::int64_t>(0, base - backlogOldestBase[r]));
    e->set_scale(weight * static_cast<double>(count));
    publishLocked(e);
  }
  char lrText[32];
  std::snprintf(lrText, sizeof lrText, "%g", lr);
  emitRecoveryLocked(v1::RunEvent::BACKLOG,
                     "worker " + std::to_string(req.rank()) + ": applied a backlog of " + std::to_string(count) +
                         " gradients in one step (rule " + rule + ", lr " + lrText + "; oldest " +
                         std::to_string(req.backlog_age_s()).substr(0, 5) + " s old, " +
                         std::to_string(req.backlog_dropped()) + " dropped by the bound)",
                     store->version(), req.rank(), count, req.backlog_age_s(), req.backlog_dropped(),
                     req.backlog_outage_s());
  afterUpdateLocked(t);
  releaseParkedLocked(t);
  reply->set_outcome("applied");
  reply->set_version(store->version());
  return grpc::Status::OK;
}

}  // namespace dasp::net
