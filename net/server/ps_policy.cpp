// SPDX-License-Identifier: MIT
// Applying the sync policy (internal: net/server/ps_server_impl.h): the updates of the policy's
// output, answering parked pulls when the policy releases them, the start of the run's
// clock, and worker membership (up / down). Every *Locked function runs with Impl::mu held.
#include "net/server/ps_reactors.h"
#include "core/common/durations.h"

#include <algorithm>

namespace dasp::net {

// Applies every update in `out`; `pusher`/`pushed` identify a just-pushed gradient that
// is not (yet) in `held`.
void ParameterServer::Impl::applyOutputLocked(double t) {
  const auto& opt = options.spec.optimizer();
  const bool mean = opt.lr_convention() == v1::OptimizerSpec::MEAN;
  const std::size_t updates = out.updateCount();
  for (std::size_t u = 0; u < updates; ++u) {
    const std::size_t begin = out.updateBegin[u];
    const std::size_t end = u + 1 < updates ? out.updateBegin[u + 1] : out.gradients.size();
    const std::int64_t base = store->version();
    applyPtrs.clear();
    applyWeights.clear();
    const double m = static_cast<double>(end - begin);
    for (std::size_t g = begin; g < end; ++g) {
      const auto& ref = out.gradients[g];
      applyPtrs.push_back(gradientOf[static_cast<std::size_t>(ref.rank)]);
      applyWeights.push_back(mean && m > 0 ? ref.scale / m : ref.scale);
    }
    const double lr = learningRateAt(opt, base);
    // The last update a doorbell call's push makes also goes into its region's slot.
    float* slot = pushCall.region != nullptr && u + 1 == updates &&
                          Doorbell(pushCall.region->doorbell()).isCurrent(pushCall.call)
                      ? pushCall.region->parameters()
                      : nullptr;
    if (forwardsEachUpdate()) {
      const ApplyTimer timed(this);
      // The head applies the combined gradient exactly as its replicas will.
      store->combine(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), combined.data());
      const float* c = combined.data();
      const double one = 1.0;
      store->apply(&c, &one, 1, lr, slot);
      recordUpdateLocked(&c, &one, 1, lr);
      auto upd = replicator->acquire();
      upd->set_version(store->version());
      upd->set_full_state(false);
      upd->clear_parameters();
      upd->clear_momentum();
      upd->mutable_gradient()->assign(reinterpret_cast<const char*>(combined.data()), gradientBytes());
      upd->set_lr(lr);
      upd->set_t_s(t);
      replicator->enqueue(std::move(upd));
    } else {
      const ApplyTimer timed(this);
      store->apply(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), lr, slot);
      recordUpdateLocked(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), lr);
    }
    if (sharded()) {
      // Every other shard applies its range of the same update, with the same weights.
      shardStep.Clear();
      shardStep.set_kind(pb::ShardStep::APPLY);
      shardStep.set_version(store->version());
      shardStep.set_lr(lr);
      for (std::size_t g = begin; g < end; ++g) shardStep.add_ranks(out.gradients[g].rank);
      for (const double w : applyWeights) shardStep.add_weights(w);
      logStepLocked();
    }
    if (slot != nullptr) slotHolds[static_cast<std::size_t>(pushCallRank)] = {pushCall.region, store->revision()};
    versionTime.push_back(t);
    afterUpdateLocked(t);
    counters.applied += static_cast<std::int64_t>(end - begin);
    for (std::size_t g = begin; g < end; ++g) {
      const auto& ref = out.gradients[g];
      auto* e = newEventLocked();
      if (e == nullptr) break;
      e->set_kind(pb::ClusterEvent::APPLY);
      e->set_t_s(t);
      e->set_rank(ref.rank);
      e->set_parallel_state(stateName(ref.rank));
      e->set_version(store->version());
      e->set_staleness(base - baseVersionOf[static_cast<std::size_t>(ref.rank)]);
      e->set_scale(ref.scale);
      publishLocked(e);
    }
  }
  counters.dropped += static_cast<std::int64_t>(out.dropped.size());
  // The server enforces stop.max_updates itself, exactly.
  const auto maxUpdates = options.spec.stop().max_updates();
  if (maxUpdates > 0 && store->version() >= maxUpdates && !stopping) {
    stopping = true;
    stopCv.notify_all();
  }
  emitDecisionsLocked();
  if (out.recheckPulls || updates > 0) releaseParkedLocked(t);
}

void ParameterServer::Impl::answerPullLocked(PendingPull* r, double t) {
  const ServeTimer served(this, true);
  auto* reply = &r->header();
  const int rank = r->rank();
  reply->set_stop(stopping);
  reply->set_version(store->version());
  reply->set_acked_version(vouchedVersionLocked());
  reply->set_incarnation(incarnation);
  reply->set_server_t_s(t);
  reply->set_version_t_s(versionTimeLocked(store->version()));
  reply->set_lr(learningRateAt(options.spec.optimizer(), store->version()));
  // Pulls parked before the start count their wait from the start.
  const double wait = std::max(0.0, t - r->arrivedAt());
  reply->set_wait_s(wait);
  // The evaluator still gets the parameters after stop, for its final evaluation.
  if (!stopping || rank < 0) {
    const SlotHolding* holding = rank >= 0 ? &slotHolds[static_cast<std::size_t>(rank)] : nullptr;
    r->setParameters(store->snapshot(), gradientBytes(),
                     holding != nullptr && holding->revision == store->revision() ? holding->region : nullptr);
    counters.bytesSent += static_cast<std::int64_t>(gradientBytes());
    if (rank >= 0) {
      reply->set_parallel_state(stateName(rank));
      reply->set_slowdown(slowdownOverride[static_cast<std::size_t>(rank)]);
      lastWait[static_cast<std::size_t>(rank)] = wait;
      lastRelease[static_cast<std::size_t>(rank)] = t;
      lastContact[static_cast<std::size_t>(rank)] = t;
      policy->onPullReleased(rank, store->version(), t);
      reply->set_batch_size(policy->batchFor(rank));
      const ComputeBudget budget = policy->computeBudgetFor(rank);
      reply->set_compute_budget_s(budget.seconds);
      reply->set_budget_granularity(budget.seconds > 0 ? budget.granularity : 0);
      reply->set_budget_max_batch(budget.seconds > 0 ? budget.maxBatch : 0);
    }
  }
  if (sharded()) {
    // The other shards answer this node's pull of the same call with the same version.
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::RELEASE);
    shardStep.set_rank(rank);
    shardStep.set_call_seq(r->call);
    shardStep.set_version(store->version());
    shardStep.set_stop(stopping);
    shardStep.set_parameters(!stopping || rank < 0);
    logStepLocked();
  }
  r->finished = true;
  r->complete();
}

void ParameterServer::Impl::releaseParkedLocked(double t) {
  if (follower()) return;  // shards 1..S-1 answer only what shard 0 released (ps_shards.cpp)
  std::size_t keep = 0;
  for (std::size_t i = 0; i < parked.size(); ++i) {
    PendingPull* r = parked[i];
    if (stopping || mayAnswerLocked(r, t)) {
      answerPullLocked(r, t);
    } else {
      parked[keep++] = r;
    }
  }
  parked.resize(keep);
}

// Workers wait for the start and then for the policy; the evaluator (rank -1) waits
// only for `min_version`.
// With per-update chain forwarding, a worker's pull (the acknowledgement of its push)
// also waits until the tail holds every update applied when the policy released it.
bool ParameterServer::Impl::mayAnswerLocked(PendingPull* r, double t) {
  if (adopting) return false;  // nobody sees parameters that are about to be replaced
  if (r->rank() < 0) return store->version() >= r->minVersion();
  if (!r->cleared) {
    if (!started || !policy->mayProceed(r->rank(), t)) return false;
    r->cleared = true;
    r->ackVersion = store->version();
  }
  return !forwardsEachUpdate() || replicatedVersion >= r->ackVersion;
}

// The run's clock starts when every worker has joined (or is known to be down), and no
// worker pull is answered before: all start together, and process start-up (loading
// data, building models) is not counted as training time.
void ParameterServer::Impl::maybeStartLocked() {
  if (started || adopting || std::count(joined.begin(), joined.end(), 1) < options.workers) return;
  const double shift = sinceStart();
  setStartPoint(after<Clock>(startPoint(), shift));
  for (auto& v : lastContact) v = 0.0;
  started = true;
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::CONTROL);
    e->set_t_s(0.0);
    e->set_rank(-1);
    e->set_detail("start: all " + std::to_string(options.workers) + " workers joined");
    publishLocked(e);
  }
  releaseParkedLocked(0.0);
}

void ParameterServer::Impl::cancelPull(PendingPull* r) {
  std::lock_guard<std::mutex> lock(mu);
  if (r->finished) return;
  parked.erase(std::remove(parked.begin(), parked.end(), r), parked.end());
  r->finished = true;
  r->abandon();
}

// A worker is (again) a member: the policy counts it, and the event says why.
void ParameterServer::Impl::nodeUpLocked(int rank, double t, const char* why) {
  if (policy->state(rank) == ParallelState::Down) {
    out.clear();
    policy->onWorkerUp(rank, t, out);
    applyOutputLocked(t);
  }
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::NODE);
    e->set_t_s(t);
    e->set_rank(rank);
    e->set_state("UP");
    e->set_code(v1::RunEvent::NODE_UP);
    e->set_detail(why);
    e->set_parallel_state(stateName(rank));
    publishLocked(e);
  }
}

void ParameterServer::Impl::markDownLocked(int rank, double t, const char* why) {
  if (!joined[static_cast<std::size_t>(rank)]) {
    // A worker that died before joining must not hold back the start.
    joined[static_cast<std::size_t>(rank)] = 1;
    maybeStartLocked();
    t = now();
  }
  if (policy->state(rank) == ParallelState::Down) return;
  out.clear();
  policy->onWorkerDown(rank, t, out);
  applyOutputLocked(t);
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::NODE);
    e->set_t_s(t);
    e->set_rank(rank);
    e->set_state("DOWN");
    e->set_code(v1::RunEvent::NODE_DOWN);
    e->set_detail(why);
    publishLocked(e);
  }
  releaseParkedLocked(t);
}

}  // namespace dasp::net
