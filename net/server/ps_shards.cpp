// SPDX-License-Identifier: MIT
// Sharding (internal: net/server/ps_server_impl.h; ps.shards > 1). Shard 0 is the server
// of the whole model: it decides every update (the policy, the gradient guard on the whole
// gradient's norm) and logs each decision to the other shards (logStepLocked). Shards
// 1..S-1 take a worker's push of their range (receiveRange, answered with its block sums,
// which the worker relays to shard 0), carry out shard 0's steps on their range in order
// (applyShardStepLocked) and answer a node's pull of call k with the version shard 0
// released call k at, so a node assembles one version from every shard.
// Every *Locked function runs with Impl::mu held.
#include "net/server/ps_reactors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dasp::net {

namespace {

grpc::Status refused(pb::PushRefusal::Reason reason, const std::string& why, double norm = 0) {
  pb::PushRefusal refusal;
  refusal.set_reason(reason);
  refusal.set_norm(norm);
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why, refusal.SerializeAsString());
}

// The FollowShard stream's deadline: the run's length with a wide margin (the stream is
// open for the whole run), or a month when the run has no time limit.
double followDeadlineS(const ExperimentSpec& spec) {
  const double maxS = spec.stop().max_seconds();
  return maxS > 0 ? 2 * maxS + 3600 : 30 * 86400.0;
}

}  // namespace

// Shards 1..S-1: the FollowShard stream, read one message (a batch of steps) at a time;
// each batch is carried out under Impl::mu. A step that cannot be carried out ends the
// stream with its error, which shard 0 reports (the shards no longer hold one model).
class ParameterServer::Impl::ShardLogReader final : public grpc::ServerReadReactor<pb::ShardLog> {
 public:
  ShardLogReader(Impl* impl, pb::ShardLogReply* reply) : m_impl(impl), m_reply(reply) {}
  void start() { StartRead(&m_batch); }
  void OnReadDone(bool ok) override {
    std::unique_lock<std::mutex> lock(m_impl->mu);
    if (!ok) {  // shard 0 ended the log
      m_reply->set_version(m_impl->store->version());
      m_impl->endShardLogLocked(this);
      lock.unlock();
      Finish(grpc::Status::OK);
      return;
    }
    if (const grpc::Status st = m_impl->followShardLogLocked(this, m_batch); !st.ok()) {
      lock.unlock();
      Finish(st);
      return;
    }
    lock.unlock();
    m_batch.Clear();
    StartRead(&m_batch);
  }
  void OnDone() override { delete this; }

 private:
  Impl* m_impl;
  pb::ShardLogReply* m_reply;
  pb::ShardLog m_batch;
};

void ParameterServer::Impl::setUpShards() {
  const auto workers = static_cast<std::size_t>(options.workers);
  if (follower()) {
    answersPulls = !options.replica;
    receivedRange.resize(workers);
    receivingRange.resize(workers);
    receiving.assign(workers, 0);
    receivedCall.assign(workers, -1);
    released.resize(workers + 1);
    backlogRanges.resize(workers);
    return;
  }
  servingShardAddresses = options.shardAddresses;
  for (std::size_t i = 0; i < options.shardAddresses.size(); ++i) {
    shardFollowers.push_back({static_cast<int>(i) + 1, options.shardAddresses[i], true, true});
  }
  for (const auto& r : options.shardReplicas) shardFollowers.push_back({r.shard, r.address, false, true});
  for (std::size_t k = 0; k < shardFollowers.size(); ++k) {
    shardLogs.push_back(std::make_unique<ShardLogSender>(
        shardFollowers[k].address, shardFollowers[k].shard, options.security, followDeadlineS(options.spec),
        [this, k](const std::string& message) {
          std::lock_guard<std::mutex> lock(mu);
          shardFollowerLostLocked(k, message);
        }));
  }
  if (restoreVersion >= 0) {  // a restarted shard 0: every shard first rolls back to it
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::RESTORE);
    shardStep.set_version(restoreVersion);
    logStepLocked();
  }
}

void ParameterServer::Impl::logStepLocked() {
  const double t = now();
  for (std::size_t k = 0; k < shardLogs.size(); ++k) {
    if (shardFollowers[k].live) shardLogs[k]->enqueue(shardStep, t);
  }
}

void ParameterServer::Impl::shardFollowerLostLocked(std::size_t k, const std::string& why) {
  auto& lost = shardFollowers[k];
  if (!lost.live || shuttingDown || !failure.empty()) return;
  lost.live = false;
  const std::string shard = "shard " + std::to_string(lost.shard);
  if (!lost.head) {
    emitRecoveryLocked(v1::RunEvent::REPLICA_UNREACHABLE,
                       "the replica of " + shard + " at " + lost.address + " left its chain (" + why +
                           "); the shard goes on without it",
                       store->version());
    return;
  }
  // The shard's first live replica has carried out every step the shard did and holds
  // every range pushed since it started (a worker pushes each replica before shard 0): it
  // takes the shard's place at this version, and nothing is undone.
  for (std::size_t j = 0; j < shardFollowers.size(); ++j) {
    auto& next = shardFollowers[j];
    if (!next.live || next.head || next.shard != lost.shard) continue;
    next.head = true;
    servingShardAddresses[static_cast<std::size_t>(lost.shard - 1)] = next.address;
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::SERVE);
    shardStep.set_version(store->version());
    shardLogs[j]->enqueue(shardStep, now());
    emitRecoveryLocked(v1::RunEvent::PROMOTED,
                       "the replica of " + shard + " at " + next.address + " took its place at version " +
                           std::to_string(store->version()) + " (" + why + "); nothing is undone",
                       store->version());
    return;
  }
  // The ranges no longer add up to one model: this server answers no more.
  loseShardLocked(options.shardReplicas.empty() ? why : why + " (no replica of " + shard + " is left)");
}

void ParameterServer::Impl::logRankStepLocked(pb::ShardStep::Kind kind, int rank, std::int64_t call) {
  shardStep.Clear();
  shardStep.set_kind(kind);
  shardStep.set_rank(rank);
  shardStep.set_call_seq(call);
  logStepLocked();
}

grpc::Status ParameterServer::Impl::wholeSquaredNorm(const pb::PushRequest& req, double& squaredNorm) const {
  const auto& sums = req.relayed_block_sums();
  if (!sharded()) {
    if (sums.empty()) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a push relays " + std::to_string(sums.size()) + " block sums to a server of one shard");
  }
  // Shards 1..S-1 hold whole blocks of the norm's sum but the last, which may be shorter.
  const std::int64_t rest = options.layout.parameters() - options.layout.size(0);
  const std::int64_t expected = (rest + kNormBlock - 1) / kNormBlock;
  if (sums.size() != expected) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a push relays " + std::to_string(sums.size()) + " block sums of the other shards, " +
                            std::to_string(expected) + " expected");
  }
  // This shard's range is whole blocks: its sum ends at a block boundary, and goes on
  // with the others' in order (GradientNormSum::addBlockSums), as one server's would.
  for (const double s : sums) squaredNorm += s;
  return grpc::Status::OK;
}

// --- shards 1..S-1 ---------------------------------------------------------------------------

grpc::Status ParameterServer::Impl::followerJoinLocked(const pb::JoinRequest& req, pb::JoinReply* reply) {
  if (auto st = checkJoinFields(req); !st.ok()) return st;
  if (req.role() == "probe") {  // shard 0 asks where its log goes: the payload socket, if any
    reply->set_rank(-1);
    reply->set_world_size(options.workers);
    reply->set_incarnation(incarnation);
    reply->set_payload_port(socketPort);
    for (const std::int64_t v : validCheckpointVersions()) reply->add_checkpoint_versions(v);
    return grpc::Status::OK;
  }
  const bool worker = req.role() == "worker";
  if (!worker && req.role() != "evaluator") {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + " is shard " + std::to_string(options.shard) + ": a " + req.role() +
                            " joins shard 0");
  }
  if (req.model() != options.modelName || req.parameter_count() != options.layout.parameters()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "join rejected: node " + req.name() + " runs model " + req.model() + " with " +
                            std::to_string(req.parameter_count()) + " parameters, the server has " +
                            options.modelName + " with " + std::to_string(options.layout.parameters()));
  }
  int rank = -1;
  if (worker) {
    rank = req.requested_rank();
    if (rank < 0 || rank >= options.workers) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "join rejected: a worker joins shard " + std::to_string(options.shard) +
                              " with the rank shard 0 gave it (got " + std::to_string(rank) + ")");
    }
    if (auto st = offerTransportLocked(req, rank, reply); !st.ok()) return st;
    reply->set_payload_port(socketPort);
    joined[static_cast<std::size_t>(rank)] = 1;
  }
  reply->set_rank(rank);
  reply->set_world_size(options.workers);
  reply->set_incarnation(incarnation);
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::receiveRange(const pb::PushRequest& req, const float* grad, std::size_t bytes,
                                                 pb::PushReply* reply) {
  const int rank = req.rank();
  if (rank < 0 || rank >= options.workers) {
    return refused(pb::PushRefusal::MALFORMED, "push from unknown rank " + std::to_string(rank));
  }
  if (bytes != gradientBytes()) {
    return refused(pb::PushRefusal::MALFORMED,
                   "shard " + std::to_string(options.shard) + ": a range from worker " + std::to_string(rank) +
                       " has " + std::to_string(bytes / sizeof(float)) + " values, the shard owns " +
                       std::to_string(store->size()));
  }
  if (auto st = checkPushFields(req); !st.ok()) return refused(pb::PushRefusal::MALFORMED, st.error_message());
  const auto r = static_cast<std::size_t>(rank);
  float* into = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (receiving[r]) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "shard " + std::to_string(options.shard) + ": a push of rank " + std::to_string(rank) +
                              " is already being received");
    }
    receiving[r] = 1;
    receivingRange[r].resize(static_cast<std::size_t>(store->size()));
    into = receivingRange[r].data();
  }
  // The copy and the norm's block sums in one pass, a block at a time while it is in cache.
  GradientNormSum sum;
  sum.keepBlockSums();
  const std::int64_t n = store->size();
  for (std::int64_t at = 0; at < n; at += kNormBlock) {
    const std::int64_t k = std::min(kNormBlock, n - at);
    std::memcpy(into + at, grad + at, static_cast<std::size_t>(k) * sizeof(float));
    sum.add(into + at, k);
  }
  std::lock_guard<std::mutex> lock(mu);
  receiving[r] = 0;
  const double norm = sum.norm();
  if (!std::isfinite(norm)) {
    ++counters.rejected;
    return refused(pb::PushRefusal::NON_FINITE,
                   "shard " + std::to_string(options.shard) + ": a non-finite value in the range of worker " +
                       std::to_string(rank) + "'s gradient",
                   norm);
  }
  if (req.backlog_total() > 0) {
    // A stateless worker's backlog: flushed without waiting for shard 0's steps, so each
    // range waits in a queue for its BACKLOG step.
    if (auto st = queueBacklogRangeLocked(r, req.call_seq()); !st.ok()) return st;
  } else if (gradientOf[r] == receivedRange[r].data() && !receivedRange[r].empty()) {
    // Shard 0's steps still name the range this push would replace (a node does not push
    // again before the pull of its last push is answered).
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "shard " + std::to_string(options.shard) + ": rank " + std::to_string(rank) +
                            " pushed again before its last push was decided");
  } else {
    std::swap(receivingRange[r], receivedRange[r]);
    receivedCall[r] = req.call_seq();
  }
  ++counters.pushes;
  counters.bytesReceived += static_cast<std::int64_t>(bytes);
  for (const double s : sum.blockSums()) reply->add_block_sums(s);
  reply->set_version(store->version());
  reply->set_outcome("received");
  return grpc::Status::OK;
}

void ParameterServer::Impl::admitFollowerPullLocked(PendingPull* r) {
  if (answerReleasedLocked(r)) return;
  const int rank = r->rank();
  const auto sameRank = std::count_if(parked.begin(), parked.end(), [rank](PendingPull* p) { return p->rank() == rank; });
  if (shuttingDown || sameRank >= kParkedPullsPerRank) {
    r->finished = true;
    r->refuse(grpc::Status(shuttingDown ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::RESOURCE_EXHAUSTED,
                           shuttingDown ? options.name + " is shutting down"
                                        : "pull refused: " + std::to_string(sameRank) + " pulls of rank " +
                                              std::to_string(rank) + " already wait"));
    return;
  }
  parked.push_back(r);
}

bool ParameterServer::Impl::answerReleasedLocked(PendingPull* r) {
  const ServeTimer served(this, true);
  auto& answers = released[static_cast<std::size_t>(r->rank() + 1)];
  const auto it = std::find_if(answers.begin(), answers.end(), [r](const Released& a) { return a.call == r->call; });
  if (it == answers.end()) return false;
  r->finished = true;
  if (it->abandoned) {
    answers.erase(it);
    r->refuse(grpc::Status(grpc::StatusCode::ABORTED, "shard 0 refused the push of this call"));
    return true;
  }
  auto& header = r->header();
  header.set_version(it->version);
  header.set_stop(it->stop);
  header.set_incarnation(incarnation);
  if (it->parameters) {
    r->setParameters(it->parameters, gradientBytes(), nullptr);
    counters.bytesSent += static_cast<std::int64_t>(gradientBytes());
  }
  answers.erase(it);
  r->complete();
  return true;
}

grpc::Status ParameterServer::Impl::applyShardStepLocked(const pb::ShardStep& step) {
  const std::string me = options.name + " (shard " + std::to_string(options.shard) + ")";
  auto bad = [&](const std::string& why) { return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, me + ": " + why); };
  const int rank = step.rank();
  const bool isWorker = rank >= 0 && rank < options.workers;
  const auto r = static_cast<std::size_t>(std::max(0, rank));
  switch (step.kind()) {
    case pb::ShardStep::TAKE:
      if (!isWorker) return bad("TAKE of unknown rank " + std::to_string(rank));
      if (receivedCall[r] != step.call_seq()) {
        return bad("rank " + std::to_string(rank) + "'s push of call " + std::to_string(step.call_seq()) +
                   " never arrived here (its last push here was call " + std::to_string(receivedCall[r]) + ")");
      }
      gradientOf[r] = receivedRange[r].data();
      return grpc::Status::OK;
    case pb::ShardStep::CLIP: {
      if (!isWorker || gradientOf[r] != receivedRange[r].data()) return bad("CLIP of a gradient not taken");
      float* g = receivedRange[r].data();
      const float w = step.scale();
      for (std::int64_t i = 0; i < store->size(); ++i) g[i] = w * g[i];
      return grpc::Status::OK;
    }
    case pb::ShardStep::APPLY: {
      if (step.ranks_size() != step.weights_size()) return bad("APPLY with ranks and weights of different lengths");
      applyPtrs.clear();
      applyWeights.clear();
      for (int k = 0; k < step.ranks_size(); ++k) {
        const int g = step.ranks(k);
        if (g < 0 || g >= options.workers) return bad("APPLY of unknown rank " + std::to_string(g));
        applyPtrs.push_back(gradientOf[static_cast<std::size_t>(g)]);
        applyWeights.push_back(step.weights(k));
      }
      {
        const ApplyTimer timed(this);
        store->apply(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), step.lr());
      }
      if (store->version() != step.version()) {
        return bad("applied version " + std::to_string(store->version()) + ", shard 0 made " +
                   std::to_string(step.version()));
      }
      counters.applied += step.ranks_size();
      return grpc::Status::OK;
    }
    case pb::ShardStep::HOLD:
      if (!isWorker) return bad("HOLD of unknown rank " + std::to_string(rank));
      held[r].assign(gradientOf[r], gradientOf[r] + store->size());
      gradientOf[r] = held[r].data();
      return grpc::Status::OK;
    case pb::ShardStep::UNTAKE:
      if (!isWorker) return bad("UNTAKE of unknown rank " + std::to_string(rank));
      gradientOf[r] = held[r].data();
      return grpc::Status::OK;
    case pb::ShardStep::RELEASE:
    case pb::ShardStep::ABANDON: {
      if (rank < -1 || rank >= options.workers) return bad("an answer to unknown rank " + std::to_string(rank));
      if (step.kind() == pb::ShardStep::RELEASE && step.version() != store->version()) {
        return bad("released version " + std::to_string(step.version()) + " but holds " +
                   std::to_string(store->version()));
      }
      if (!answersPulls) return grpc::Status::OK;  // a replica: no node pulls from it (nor holds its answers)
      Released answer;
      answer.call = step.call_seq();
      answer.abandoned = step.kind() == pb::ShardStep::ABANDON;
      if (!answer.abandoned) {
        answer.version = step.version();
        answer.stop = step.stop();
        if (step.parameters()) answer.parameters = store->snapshot();
      }
      // A node makes one call at a time: an answer to an earlier call that no pull took
      // (the node gave up on it) is taken by none now.
      auto& answers = released[static_cast<std::size_t>(rank + 1)];
      while (!answers.empty() && answers.front().call < answer.call) answers.pop_front();
      answers.push_back(std::move(answer));
      if (answers.size() > kReleasedKept) answers.pop_front();
      std::size_t keep = 0;
      for (std::size_t i = 0; i < parked.size(); ++i) {
        PendingPull* p = parked[i];
        if (p->rank() != rank || !answerReleasedLocked(p)) parked[keep++] = p;
      }
      parked.resize(keep);
      return grpc::Status::OK;
    }
    case pb::ShardStep::SERVE:
      if (step.version() != store->version()) {
        return bad("takes its shard's place at version " + std::to_string(step.version()) + " but holds " +
                   std::to_string(store->version()));
      }
      answersPulls = true;
      say("takes shard " + std::to_string(options.shard) + "'s place at version " + std::to_string(step.version()));
      return grpc::Status::OK;
    case pb::ShardStep::BACKLOG:
      return addBacklogRangeLocked(step);
    case pb::ShardStep::APPLY_BACKLOG:
      return applyBacklogLocked(step);
    case pb::ShardStep::CHECKPOINT:
      return checkpointRangeLocked(step);
    case pb::ShardStep::RESTORE:
      return restoreRangeLocked(step);
    default:
      return bad("a step of unknown kind " + std::to_string(step.kind()));
  }
}

grpc::ServerReadReactor<pb::ShardLog>* ParameterServer::Impl::FollowShard(grpc::CallbackServerContext* ctx,
                                                                          pb::ShardLogReply* reply) {
  if (auto st = authorize(ctx, "FollowShard"); !st.ok()) return new RefusedReader<pb::ShardLog>(st);
  if (!follower()) {
    return new RefusedReader<pb::ShardLog>(
        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, options.name + " is shard 0: it follows nobody"));
  }
  auto* reader = new ShardLogReader(this, reply);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto st = claimShardLogLocked(reader); !st.ok()) {
      delete reader;  // never started
      return new RefusedReader<pb::ShardLog>(st);
    }
  }
  reader->start();
  return reader;
}

grpc::Status ParameterServer::Impl::claimShardLogLocked(const void* from) {
  if (shardLogFrom == from) return grpc::Status::OK;
  if (shardLogFrom != nullptr) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, options.name + " follows shard 0 already");
  }
  shardLogFrom = from;
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::followShardLogLocked(const void* from, const pb::ShardLog& batch) {
  if (auto st = claimShardLogLocked(from); !st.ok()) return st;
  // The run's clock is shard 0's: this shard's events (SHARD_LOAD) are on it, within the
  // least delay a batch has taken.
  if (!options.clock && batch.t_s() > now()) setClock(batch.t_s());
  for (const auto& step : batch.steps()) {
    const grpc::Status st = applyShardStepLocked(step);
    if (!st.ok()) {
      say(st.error_message());
      endShardLogLocked(from);
      return st;
    }
  }
  return grpc::Status::OK;
}

void ParameterServer::Impl::endShardLogLocked(const void* from) {
  if (shardLogFrom == from) shardLogFrom = nullptr;
}

}  // namespace dasp::net
