// SPDX-License-Identifier: MIT
// The parameter server's RPC handlers (internal: net/server/ps_server_impl.h): authentication
// first, then Join, Pull, PushPull, PullChunks, Push, PushChunks, Report and Control.
// (Watch: ps_events.cpp; Replicate: ps_chain.cpp.) They run on gRPC's threads.
#include "net/server/ps_reactors.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dasp::net {

// The run token of a call: OK, or PERMISSION_DENIED (counted, reported as an event).
// Called first by every RPC handler, on gRPC's threads; the lock is taken only to count
// a refusal, so authorized calls pay one constant-time comparison.
grpc::Status ParameterServer::Impl::authorize(const grpc::CallbackServerContext* ctx, const char* rpc) {
  const auto& metadata = ctx->client_metadata();
  const auto it = metadata.find(kTokenMetadataKey);
  if (it != metadata.end() &&
      tokensEqual(std::string_view(it->second.data(), it->second.size()), options.security.token)) {
    return grpc::Status::OK;
  }
  return refuseToken(rpc, it == metadata.end() ? "missing run token" : "wrong run token", ctx->peer());
}

grpc::Status ParameterServer::Impl::refuseToken(const char* rpc, const std::string& why, const std::string& peer) {
  const std::string detail = std::string(rpc) + " from " + peer + " refused: " + why;
  {
    std::lock_guard<std::mutex> lock(mu);
    ++counters.unauthorized;
    const double t = sinceStart();
    refusalBudget = std::min(kRefusalBurst, refusalBudget + (t - refusalBudgetT) * kRefusalsPerSecond);
    refusalBudgetT = t;
    if (refusalBudget >= 1) {
      refusalBudget -= 1;
      if (auto* e = newEventLocked()) {
        e->set_kind(pb::ClusterEvent::REJECT);
        e->set_t_s(now());
        e->set_rank(-1);
        e->set_count(refusalsUnreported + 1);
        e->set_detail(refusalsUnreported == 0
                          ? detail
                          : detail + " (and " + std::to_string(refusalsUnreported) +
                                " more refused calls since the last such event)");
        publishLocked(e);
      }
      refusalsUnreported = 0;
    } else {
      ++refusalsUnreported;
    }
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      options.name + ": " + why + " (metadata " + kTokenMetadataKey + "); " + rpc + " refused");
}

// A unary call refused for its token, already finished; nullptr when it may go on.
grpc::ServerUnaryReactor* ParameterServer::Impl::refusedUnary(grpc::CallbackServerContext* ctx, const char* rpc) {
  const grpc::Status st = authorize(ctx, rpc);
  if (st.ok()) return nullptr;
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServer::Impl::Join(grpc::CallbackServerContext* ctx, const pb::JoinRequest* req,
                                                      pb::JoinReply* reply) {
  if (auto* refused = refusedUnary(ctx, "Join")) return refused;
  auto* reactor = ctx->DefaultReactor();
  if (follower()) {
    std::lock_guard<std::mutex> lock(mu);
    reactor->Finish(followerJoinLocked(*req, reply));
    return reactor;
  }
  if (shardGone) {
    reactor->Finish(shardGoneStatus());
    return reactor;
  }
  if (!isHead) {
    reactor->Finish(notHead());
    return reactor;
  }
  if (auto st = checkJoinFields(*req); !st.ok()) {
    reactor->Finish(st);
    return reactor;
  }
  if (req->role() == "probe") {
    // A node asks for the run's spec before it builds its model (then it joins for real).
    reply->set_rank(-1);
    reply->set_world_size(options.workers);
    *reply->mutable_spec() = options.spec;
    reply->set_shard_seed(options.spec.seed());
    reply->set_server_t_s(now());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  if (req->model() != options.modelName || req->parameter_count() != options.layout.parameters()) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        "join rejected: node " + req->name() + " runs model " + req->model() + " with " +
            std::to_string(req->parameter_count()) + " parameters, the server has " + options.modelName +
            " with " + std::to_string(options.layout.parameters())));
    return reactor;
  }
  std::lock_guard<std::mutex> lock(mu);
  int rank = -1;
  if (req->role() == "worker") {
    if (req->requested_rank() >= 0) {
      rank = req->requested_rank();
    } else {
      for (int r = 0; r < options.workers; ++r) {
        if (!joined[static_cast<std::size_t>(r)]) {
          rank = r;
          break;
        }
      }
    }
    if (rank < 0) {
      reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "join rejected: all " + std::to_string(options.workers) + " worker ranks are taken"));
      return reactor;
    }
    const bool rejoin = joined[static_cast<std::size_t>(rank)] != 0 || req->rejoin();
    if (adopting && parkedJoins.size() >= static_cast<std::size_t>(kParkedJoinsPerWorker * options.workers)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "join rejected: " + std::to_string(parkedJoins.size()) +
                                       " joins already wait for the stateless adoption"));
      return reactor;
    }
    if (auto st = offerTransportLocked(*req, rank, reply); !st.ok()) {
      reactor->Finish(st);
      return reactor;
    }
    reply->set_payload_port(socketPort);
    const auto* offeredModel = reinterpret_cast<const float*>(req->held_parameters().data());
    const bool offersCopy = !req->held_parameters().empty();
    // Under LOCAL each rank's copy counts once per adoption (a join retried after its
    // deadline offers it again).
    if (adopting && offersCopy && localMode() && !offered[static_cast<std::size_t>(rank)]) {
      localCopies.add(offeredModel, req->local_steps());
    }
    if (!adopting && offersCopy && localMode() && req->local_steps() > 0 && started) {
      mergeReturningCopyLocked(rank, req->name(), offeredModel, req->held_version(), req->local_steps(), now());
    }
    if (adopting && req->held_version() > adoptedVersion && offersCopy) {
      // Stateless restart: the highest version any worker holds wins (its size and
      // finiteness were checked); momentum is not kept by workers, so it restarts from zero.
      // Under LOCAL this is what is adopted when no copy took a local step.
      // A sharded server keeps the whole model: each other shard's RESTORE takes its range.
      if (sharded()) adoptedWhole.assign(offeredModel, offeredModel + options.layout.parameters());
      store->restore(offeredModel, nullptr, req->held_version());
      policy->setVersion(store->version());
      restartVersionTimesLocked(req->held_version(), now());
      adoptedVersion = req->held_version();
      adoptedFrom = req->name();
      recordStateLocked(UpdateRecordKind::State);
    }
    joined[static_cast<std::size_t>(rank)] = 1;
    const double t = now();
    if (adopting) noteAdoptionOfferLocked(rank, t);
    maybeStartLocked();
    lastContact[static_cast<std::size_t>(rank)] = t;
    nodeUpLocked(rank, t, rejoin ? "rejoined" : "joined");
  }
  reply->set_rank(rank);
  reply->set_world_size(options.workers);
  *reply->mutable_spec() = options.spec;
  reply->set_shard_seed(options.spec.seed());
  reply->set_incarnation(incarnation);
  if (sharded()) {
    for (const auto& a : servingShardAddresses) reply->add_shard_addresses(a);
    for (const auto b : options.layout.begin) reply->add_shard_begin(b);
    for (const auto& f : shardFollowers) {
      if (!f.live || f.head) continue;
      reply->add_shard_replica_addresses(f.address);
      reply->add_shard_replica_of(f.shard);
    }
  }
  if (adopting && req->role() == "worker") {
    // Answered once the parameters are adopted (every worker rejoined, or the wait ended):
    // the highest version any of them holds wins, whichever rejoins first.
    parkedJoins.push_back({reactor, reply});
    if (std::count(offered.begin(), offered.end(), 1) >= options.workers) finishAdoptionLocked();
    return reactor;
  }
  reply->set_server_t_s(now());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

// Parks or answers a new pull.
// Parks or answers a new pull; refuses it (RESOURCE_EXHAUSTED) when its rank already has
// kParkedPullsPerRank parked (a worker has one, the evaluator one or two).
void ParameterServer::Impl::admitPull(PendingPull* reactor, std::int64_t call) {
  std::lock_guard<std::mutex> lock(mu);
  reactor->call = call;
  if (shardGone) {
    reactor->finished = true;
    reactor->refuse(shardGoneStatus());
    return;
  }
  ++counters.pullsAdmitted;
  if (follower()) {
    admitFollowerPullLocked(reactor);
    return;
  }
  const double t = now();
  if (reactor->rank() >= 0) lastContact[static_cast<std::size_t>(reactor->rank())] = t;
  if (stopping || mayAnswerLocked(reactor, t)) {
    answerPullLocked(reactor, t);
    return;
  }
  const int rank = reactor->rank();
  const auto sameRank = std::count_if(parked.begin(), parked.end(), [rank](PendingPull* p) { return p->rank() == rank; });
  if (sameRank >= kParkedPullsPerRank) {
    reactor->finished = true;
    reactor->refuse(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "pull refused: " + std::to_string(sameRank) + " pulls of rank " +
                                     std::to_string(rank) + " already wait"));
    return;
  }
  parked.push_back(reactor);
  wakeTickerIfDueLocked();
}

grpc::ServerUnaryReactor* ParameterServer::Impl::Pull(grpc::CallbackServerContext* ctx, const pb::PullRequest* req,
                                                      pb::PullReply* reply) {
  if (auto* refused = refusedUnary(ctx, "Pull")) return refused;
  const int rank = req->rank();
  if (!isHead) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(notHead());
    return reactor;
  }
  if (rank < -1 || rank >= options.workers) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "pull from unknown rank " + std::to_string(rank)));
    return reactor;
  }
  std::shared_ptr<SharedRegion> region;
  if (req->parameters_in_shm() && !(region = regionOf(rank))) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(noRegion(rank));
    return reactor;
  }
  auto* reactor = new PullReactor(this, rank, reply, now(), req->min_version(), std::move(region));
  admitPull(reactor, req->call_seq());
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServer::Impl::PushPull(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                                          pb::PullReply* reply) {
  if (auto* refused = refusedUnary(ctx, "PushPull")) return refused;
  if (!isHead) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(notHead());
    return reactor;
  }
  pb::PushReply pushed;
  // Shared memory: the gradient is read in place, and the parameters go back the same way.
  std::shared_ptr<SharedRegion> region;
  auto status = req->gradient_in_shm() && !(region = regionOf(req->rank())) ? noRegion(req->rank())
                                                                            : handlePushOf(*req, region.get(), &pushed);
  if (!status.ok()) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  auto* reactor = new PullReactor(this, req->rank(), reply, now(), -1, std::move(region));
  admitPull(reactor, req->call_seq());
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ParameterServer::Impl::PullChunks(grpc::CallbackServerContext* ctx,
                                                                              const grpc::ByteBuffer* request) {
  if (auto st = authorize(ctx, "PullChunks"); !st.ok()) return new RefusedWriter<grpc::ByteBuffer>(st);
  pb::PullRequest parsed;
  grpc::ByteBuffer copy(*request);  // Deserialize consumes its buffer
  if (!grpc::SerializationTraits<pb::PullRequest>::Deserialize(&copy, &parsed).ok()) {
    return new RefusedWriter<grpc::ByteBuffer>(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "PullChunks: a request that is not a PullRequest"));
  }
  const pb::PullRequest* req = &parsed;
  const int rank = std::max(-1, std::min(req->rank(), options.workers - 1));
  auto* reactor = new PullStreamReactor(this, rank, now(), req->min_version());
  if (!isHead) {
    reactor->Finish(notHead());
    return reactor;
  }
  if (rank != req->rank()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "pull from unknown rank " + std::to_string(req->rank())));
    return reactor;
  }
  admitPull(reactor, req->call_seq());
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServer::Impl::Push(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                                      pb::PushReply* reply) {
  if (auto* refused = refusedUnary(ctx, "Push")) return refused;
  auto* reactor = ctx->DefaultReactor();
  if (!isHead) {
    reactor->Finish(notHead());
    return reactor;
  }
  std::shared_ptr<SharedRegion> region;
  reactor->Finish(req->gradient_in_shm() && !(region = regionOf(req->rank())) ? noRegion(req->rank())
                                                                              : handlePushOf(*req, region.get(), reply));
  return reactor;
}

// A unary push: its gradient in the message, or in `region` (shared memory) when not null.
grpc::Status ParameterServer::Impl::handlePushOf(const pb::PushRequest& req, SharedRegion* region,
                                                 pb::PushReply* reply, DoorbellCall doorbell) {
  if (region != nullptr) return handlePush(req, region->gradient(), gradientBytes(), reply, std::nullopt, doorbell);
  const auto& bytes = req.gradient();
  return handlePush(req, reinterpret_cast<const float*>(bytes.data()), bytes.size(), reply);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* ParameterServer::Impl::PushChunks(grpc::CallbackServerContext* ctx,
                                                                             grpc::ByteBuffer* response) {
  if (auto st = authorize(ctx, "PushChunks"); !st.ok()) return new RefusedReader<grpc::ByteBuffer>(st);
  return new PushStreamReactor(this, response);
}

grpc::Status ParameterServer::Impl::rejectLocked(int rank, const std::string& why, pb::PushRefusal::Reason reason,
                                                 const pb::PushRequest& req, EventCode code, double norm) {
  ++counters.rejected;
  // The other shards' pulls of this call get no answer (the worker pulls again).
  if (sharded() && rank >= 0 && rank < options.workers) logRankStepLocked(pb::ShardStep::ABANDON, rank, req.call_seq());
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::REJECT);
    e->set_t_s(now());
    e->set_rank(rank);
    e->set_detail(why);
    e->set_code(code);
    e->set_norm(norm);
    e->set_version(req.base_version());
    e->set_loss(req.train_loss());  // a refused gradient's loss still tells of divergence
    publishLocked(e);
  }
  // The reason travels typed in the status's details: the worker goes on, or not, by it.
  pb::PushRefusal refusal;
  refusal.set_reason(reason);
  refusal.set_norm(norm);
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why, refusal.SerializeAsString());
}

// Validates and handles one push (unary or chunked): `grad` holds `bytes` bytes, and
// `norm` its norm when the caller took it already (a chunked push, as the chunks landed).
// Every refusal is INVALID_ARGUMENT; the gradient guard's also a REJECT event with its code.
grpc::Status ParameterServer::Impl::handlePush(const pb::PushRequest& req, const float* grad, std::size_t bytes,
                                               pb::PushReply* reply, std::optional<double> squaredNorm,
                                               DoorbellCall doorbell) {
  const ServeTimer served(this);
  if (follower()) return receiveRange(req, grad, bytes, reply);
  const int rank = req.rank();
  auto reject = [&](pb::PushRefusal::Reason reason, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    return rejectLocked(rank, why, reason, req);
  };
  if (!isHead) return notHead();
  if (shardGone) return shardGoneStatus();
  if (rank < 0 || rank >= options.workers) {
    return reject(pb::PushRefusal::MALFORMED, "push from unknown rank " + std::to_string(rank));
  }
  if (bytes != gradientBytes()) {
    return reject(pb::PushRefusal::MALFORMED, "gradient from worker " + std::to_string(rank) + " has " +
                                                  std::to_string(bytes / 4) + " values (" + std::to_string(bytes) +
                                                  " bytes), the model has " + std::to_string(store->size()) +
                                                  " parameters");
  }
  if (auto st = checkPushFields(req); !st.ok()) return reject(pb::PushRefusal::MALFORMED, st.error_message());
  if (const auto& refused = req.shard_refusal(); refused.shard() > 0) {
    // Another shard refused its range: the push is refused here, as its own refusals are.
    std::lock_guard<std::mutex> lock(mu);
    if (refused.reason() == pb::PushRefusal::NON_FINITE) counters.guardRefused += 1;
    return rejectLocked(rank, "shard " + std::to_string(refused.shard()) + ": " + refused.message(),
                        refused.reason() == pb::PushRefusal::REASON_UNSPECIFIED ? pb::PushRefusal::MALFORMED
                                                                                : refused.reason(),
                        req, refused.reason() == pb::PushRefusal::NON_FINITE ? v1::RunEvent::GRADIENT_REFUSED
                                                                             : v1::RunEvent::CODE_UNSPECIFIED);
  }
  // The norm outside the lock (one pass over the gradient); the guard decides under it.
  if (!squaredNorm) {
    GradientNormSum sum;
    sum.add(grad, store->size());
    squaredNorm = sum.squaredNorm();
  }
  if (auto st = wholeSquaredNorm(req, *squaredNorm); !st.ok()) return reject(pb::PushRefusal::MALFORMED, st.error_message());
  const std::optional<double> norm = std::sqrt(*squaredNorm);
  std::lock_guard<std::mutex> lock(mu);
  const auto decision = guard->check(*norm);
  if (decision.refused()) {
    counters.guardRefused += 1;
    const auto reason = decision.verdict == GradientGuard::Verdict::RefuseNonFinite ? pb::PushRefusal::NON_FINITE
                                                                                    : pb::PushRefusal::GUARDED;
    return rejectLocked(rank, describeDecision(decision, rank), reason, req, v1::RunEvent::GRADIENT_REFUSED, *norm);
  }
  if (decision.verdict == GradientGuard::Verdict::Clip) {
    // From here on the push is its clipped copy (held, applied, forwarded as it is).
    auto& clipped = clippedOf[static_cast<std::size_t>(rank)];
    clipped.resize(static_cast<std::size_t>(store->size()));
    const auto w = static_cast<float>(decision.scale);
    for (std::size_t i = 0; i < clipped.size(); ++i) clipped[i] = w * grad[i];
    grad = clipped.data();
    counters.guardClipped += 1;
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::REJECT);
      e->set_t_s(now());
      e->set_rank(rank);
      e->set_detail(describeDecision(decision, rank));
      e->set_code(v1::RunEvent::GRADIENT_CLIPPED);
      e->set_norm(*norm);
      publishLocked(e);
    }
  }
  const double t = now();
  ++counters.pushes;
  counters.bytesReceived += static_cast<std::int64_t>(bytes);
  lastContact[static_cast<std::size_t>(rank)] = t;
  if (req.backlog_total() > 0) {
    const float clipScale = decision.verdict == GradientGuard::Verdict::Clip ? static_cast<float>(decision.scale) : 1.0f;
    const auto handled = handleBacklogLocked(req, grad, clipScale, t, reply);
    reply->set_acked_version(vouchedVersionLocked());
    return handled;
  }
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::ITERATION);
    e->set_t_s(t);
    e->set_rank(rank);
    e->set_parallel_state(stateName(rank));
    e->set_version(req.base_version());
    e->set_wait_s(lastWait[static_cast<std::size_t>(rank)]);
    e->set_pull_s(req.pull_s());
    e->set_compute_s(req.compute_s());
    e->set_emulated_s(req.emulated_s());
    e->set_push_s(req.prev_push_s());
    e->set_loss(req.train_loss());
    e->set_release_t_s(lastRelease[static_cast<std::size_t>(rank)]);
    e->set_batch_size(req.batch_size());
    publishLocked(e);
  }
  if (stopping) {
    reply->set_stop(true);
    reply->set_outcome("dropped");
    reply->set_version(store->version());
    reply->set_acked_version(vouchedVersionLocked());
    return grpc::Status::OK;
  }
  // The pushed gradient is read in place unless the policy holds it.
  const auto r = static_cast<std::size_t>(rank);
  // Marked down for its silence, yet alive: it is a member again.
  if (policy->state(rank) == ParallelState::Down) nodeUpLocked(rank, t, "pushed again after being marked down");
  // A base version this server never made (a worker ahead of a restored checkpoint, or a
  // made-up one) counts as the current version.
  const std::int64_t base = std::min(req.base_version(), store->version());
  gradientOf[r] = grad;
  baseVersionOf[r] = base;
  if (sharded()) {
    // The other shards take their ranges of this push as the rank's gradient (clipped
    // by the same factor), where this shard does.
    logRankStepLocked(pb::ShardStep::TAKE, rank, req.call_seq());
    if (decision.verdict == GradientGuard::Verdict::Clip) {
      shardStep.Clear();
      shardStep.set_kind(pb::ShardStep::CLIP);
      shardStep.set_rank(rank);
      shardStep.set_scale(static_cast<float>(decision.scale));
      logStepLocked();
    }
  }
  out.clear();
  policy->onPushedBatch(rank, req.batch_size());
  const PushOutcome outcome = policy->onPush(rank, base, t, out);
  bool consumed = false;
  for (const auto& g : out.gradients) consumed = consumed || g.rank == rank;
  pushCall = doorbell;
  pushCallRank = rank;
  applyOutputLocked(t);
  pushCall = {};
  if (outcome == PushOutcome::Held && !consumed) {
    held[r].assign(grad, grad + store->size());
    gradientOf[r] = held[r].data();
    if (sharded()) logRankStepLocked(pb::ShardStep::HOLD, rank);
  } else if (gradientOf[r] == grad) {
    gradientOf[r] = held[r].data();
    if (sharded()) logRankStepLocked(pb::ShardStep::UNTAKE, rank);
  }
  reply->set_version(store->version());
  reply->set_acked_version(vouchedVersionLocked());
  reply->set_outcome(toString(outcome));
  wakeTickerIfDueLocked();
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ParameterServer::Impl::Report(grpc::CallbackServerContext* ctx,
                                                        const pb::EvaluationReport* req, pb::ReportReply* reply) {
  if (auto* refused = refusedUnary(ctx, "Report")) return refused;
  auto* reactor = ctx->DefaultReactor();
  if (auto st = checkReportFields(*req); !st.ok()) {
    reactor->Finish(st);
    return reactor;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::EVALUATION);
    e->set_t_s(now());
    e->set_rank(-1);
    e->set_version(req->version());
    e->set_loss(req->loss());
    e->set_accuracy(req->accuracy());
    e->set_version_t_s(req->version_t_s());
    e->set_compute_s(req->eval_s());
    publishLocked(e);
  }
  reply->set_stop(stopping);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ParameterServer::Impl::Control(grpc::CallbackServerContext* ctx,
                                                         const pb::ControlRequest* req, pb::ControlReply* reply) {
  if (auto* refused = refusedUnary(ctx, "Control")) return refused;
  auto* reactor = ctx->DefaultReactor();
  if (auto st = checkControlFields(*req); !st.ok()) {
    reply->set_accepted(false);
    reply->set_detail(st.error_message());
    reactor->Finish(st);
    return reactor;
  }
  std::unique_lock<std::mutex> lock(mu);
  const double t = now();
  const int rank = req->rank();
  std::string detail;
  switch (req->action()) {
    case pb::ControlRequest::STOP:
      stopping = true;
      releaseParkedLocked(t);
      stopCv.notify_all();
      detail = "stop";
      break;
    case pb::ControlRequest::SET_SLOWDOWN:  // (rank and slowdown checked above)
      slowdownOverride[static_cast<std::size_t>(rank)] = req->slowdown();
      detail = "slowdown x" + std::to_string(req->slowdown());
      break;
    case pb::ControlRequest::MARK_DOWN:
      markDownLocked(rank, t, "process exited");
      detail = "marked down";
      break;
    case pb::ControlRequest::PROMOTE:
      if (isHead) {
        detail = options.name + " is already the head";
        break;
      }
      promoteLocked(req->t_s());
      detail = options.name + " promoted to head at version " + std::to_string(store->version());
      break;
    case pb::ControlRequest::SET_NEXT:
      if (!setNextLocked(req->address(), reply, detail)) {
        reactor->Finish(grpc::Status::OK);
        return reactor;
      }
      break;
    default:
      reply->set_accepted(false);
      reply->set_detail("action not supported by the server");
      reactor->Finish(grpc::Status::OK);
      return reactor;
  }
  if (auto* e = newEventLocked()) {
    e->set_kind(pb::ClusterEvent::CONTROL);
    e->set_t_s(t);
    e->set_rank(rank);
    e->set_detail(detail);
    publishLocked(e);
  }
  reply->set_accepted(true);
  reply->set_detail(detail);
  reply->set_version(store->version());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace dasp::net
