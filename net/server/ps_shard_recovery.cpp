// SPDX-License-Identifier: MIT
// A sharded server's recovery (internal: net/server/ps_server_impl.h; ps.shards > 1 with
// recovery CHECKPOINT, NONE or STATELESS). Shard 0 coordinates: each checkpoint it takes is a
// CHECKPOINT step of its log, so every shard writes its range of the same version. A
// restarted shard 0 asks every other shard which checkpoints it holds intact, restores
// its own range to the newest version all of them hold (0, the initial parameters, when
// there is none, or under NONE), and begins each log with RESTORE of that version: the
// shards hold one model again, and the nodes' calls before it are forgotten (their pulls
// refused, so they join again). A shard whose log breaks takes shard 0 down with it
// (shardGone): the runner restarts both, and the others roll back in place.
// Stateless: a restarted shard 0 adopts the whole model the rejoining workers hold, and its
// RESTORE hands each shard its range of it; a worker's backlog reaches every shard as its
// pushes do, and each shard sums and applies its range as shard 0 says (BACKLOG,
// APPLY_BACKLOG), so the shards keep the bits of one server.
// Every *Locked function runs with Impl::mu held.
#include "net/server/ps_reactors.h"
#include "net/server/shard_log.h"

#include <algorithm>
#include <iterator>

namespace dasp::net {

namespace {

// How long a restarted shard 0 waits for each other shard's answer: they are started
// before it.
constexpr double kProbeS = 30;

}  // namespace

std::vector<std::int64_t> ParameterServer::Impl::validCheckpointVersions() const {
  std::vector<std::int64_t> valid;
  if (options.spec.recovery().mode() != v1::RecoverySpec::CHECKPOINT || options.checkpointDir.empty()) return valid;
  const CheckpointDirectory dir(options.checkpointDir, std::max(1, options.spec.recovery().checkpoint_keep()));
  for (const std::int64_t v : dir.versions()) {
    if (CheckpointDirectory::readFile(dir.pathFor(v), options.modelName, store->size())) valid.push_back(v);
  }
  return valid;
}

Status ParameterServer::Impl::restoreShardsBeforeServing() {
  const auto& o = options;
  std::int64_t version = 0;
  std::string why = "recovery NONE";
  if (o.restoreCheckpoint) {
    std::vector<std::int64_t> common = validCheckpointVersions();
    // What each shard holds, for the event when they share none.
    auto listed = [](const std::vector<std::int64_t>& versions) {
      std::string text;
      for (const auto v : versions) text += (text.empty() ? "" : " ") + std::to_string(v);
      return text.empty() ? std::string("none") : text;
    };
    std::string holds = "shard 0: " + listed(common);
    for (std::size_t i = 0; i < o.shardAddresses.size(); ++i) {
      auto reply = probeShard(o.shardAddresses[i], o.security, kProbeS);
      if (!reply) return Status::error(o.name + ": restoring the shards: " + reply.message());
      std::vector<std::int64_t> theirs(reply->checkpoint_versions().begin(), reply->checkpoint_versions().end());
      std::sort(theirs.begin(), theirs.end());
      holds += "; shard " + std::to_string(i + 1) + ": " + listed(theirs);
      std::vector<std::int64_t> both;
      std::set_intersection(common.begin(), common.end(), theirs.begin(), theirs.end(), std::back_inserter(both));
      common = std::move(both);
    }
    why = "no checkpoint version all " + std::to_string(o.layout.shards()) + " shards hold (" + holds + ")";
    if (!common.empty()) {
      version = common.back();
      const CheckpointDirectory dir(o.checkpointDir, 1);
      auto data = CheckpointDirectory::readFile(dir.pathFor(version), o.modelName, store->size());
      if (!data) return Status::error(o.name + ": restoring the shards: " + data.message());
      store->restore(data->parameters.data(), data->momentum.data(), version);
      restartVersionTimesLocked(version, o.resumeAtS > 0 ? o.resumeAtS : 0.0);
      lastCheckpointVersion = version;
      emitRecoveryLocked(v1::RunEvent::RESTORED,
                         "restored every shard to version " + std::to_string(version) + ", the newest checkpoint all " +
                             std::to_string(o.layout.shards()) + " shards hold (this one: " + data->path + ")",
                         version);
    }
  }
  if (version == 0) {
    emitRecoveryLocked(v1::RunEvent::STARTED_FRESH,
                       why + ": every shard starts again from the initial parameters (version 0)", 0);
  }
  restoreVersion = version;
  return Status::ok();
}

void ParameterServer::Impl::refuseParkedLocked(const grpc::Status& status) {
  for (auto* p : parked) {
    p->finished = true;
    p->refuse(status);
  }
  parked.clear();
}

void ParameterServer::Impl::loseShardLocked(const std::string& why) {
  if (!failure.empty() || shuttingDown) return;
  failure = why;
  say(why + "; this server stops answering (a restarted shard 0 restores every shard to one version)");
  shardGone = true;
  refuseParkedLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
  stopCv.notify_all();
}

grpc::Status ParameterServer::Impl::checkpointRangeLocked(const pb::ShardStep& step) {
  if (step.version() != store->version()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + ": a checkpoint of version " + std::to_string(step.version()) +
                            " at version " + std::to_string(store->version()));
  }
  // The writer still writes the last one: this version is missing here, and a restore
  // takes a version every shard holds.
  if (checkpoints && !checkpointDue) takeCheckpointLocked(now());
  return grpc::Status::OK;
}

void ParameterServer::Impl::restoreAdoptedShardsLocked() {
  const double t = now();
  for (std::size_t k = 0; k < shardLogs.size(); ++k) {
    const auto& f = shardFollowers[k];
    if (!f.live) continue;
    shardStep.Clear();
    shardStep.set_kind(pb::ShardStep::RESTORE);
    shardStep.set_version(std::max<std::int64_t>(0, adoptedVersion));
    if (adoptedVersion >= 0) {
      const auto i = static_cast<std::size_t>(f.shard);
      const float* range = adoptedWhole.data() + options.layout.offset(i);
      shardStep.set_range_parameters(range, static_cast<std::size_t>(options.layout.size(i)) * sizeof(float));
    }
    shardLogs[k]->enqueue(shardStep, t);
  }
  adoptedWhole.clear();
  adoptedWhole.shrink_to_fit();
}

grpc::Status ParameterServer::Impl::restoreRangeLocked(const pb::ShardStep& step) {
  const std::int64_t version = step.version();
  // Adopted from a worker, which keeps no momentum, or the start: momentum from zero
  // (ParameterStore::restore zeroes it when given none).
  if (!step.range_parameters().empty()) {
    if (step.range_parameters().size() != gradientBytes()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          options.name + ": a RESTORE of " + std::to_string(step.range_parameters().size()) +
                              " bytes for a range of " + std::to_string(gradientBytes()));
    }
    store->restore(reinterpret_cast<const float*>(step.range_parameters().data()), nullptr, version);
  } else if (version == 0) {
    store->restore(initialRange.data(), nullptr, 0);
  } else {
    const CheckpointDirectory dir(options.checkpointDir, 1);
    auto data = CheckpointDirectory::readFile(dir.pathFor(version), options.modelName, store->size());
    if (!data) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          options.name + ": cannot restore version " + std::to_string(version) + ": " + data.message());
    }
    store->restore(data->parameters.data(), data->momentum.data(), version);
  }
  lastCheckpointVersion = version;
  // The nodes' calls before the restore are forgotten: a pull waiting here is refused, so
  // its node joins again and numbers its calls afresh.
  refuseParkedLocked(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, options.name + " restored version " + std::to_string(version)));
  for (auto& answers : released) answers.clear();
  std::fill(receivedCall.begin(), receivedCall.end(), -1);
  for (std::size_t r = 0; r < gradientOf.size(); ++r) gradientOf[r] = held[r].data();
  incarnation = newIncarnation();
  say("restored version " + std::to_string(version) + " (shard 0's RESTORE)");
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::queueBacklogRangeLocked(std::size_t rank, std::int64_t call) {
  auto& queue = backlogRanges[rank];
  const auto bound = static_cast<std::size_t>(std::max(1, options.spec.recovery().backlog_max_gradients()));
  if (queue.size() >= bound) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        options.name + ": " + std::to_string(queue.size()) + " backlog ranges of rank " +
                            std::to_string(rank) + " already wait for shard 0 (recovery.backlog_max_gradients)");
  }
  queue.push_back({call, std::move(receivingRange[rank])});
  receivingRange[rank].clear();
  if (!spareRanges.empty()) {
    receivingRange[rank] = std::move(spareRanges.back());
    spareRanges.pop_back();
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::addBacklogRangeLocked(const pb::ShardStep& step) {
  const int rank = step.rank();
  auto bad = [&](const std::string& why) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, options.name + ": BACKLOG of rank " +
                                                                   std::to_string(rank) + ": " + why);
  };
  if (rank < 0 || rank >= options.workers) return bad("no such worker");
  auto& queue = backlogRanges[static_cast<std::size_t>(rank)];
  // Ranges of calls shard 0 never took (refused, or lost with a shard 0 that failed) go.
  while (!queue.empty() && queue.front().call < step.call_seq()) {
    spareRanges.push_back(std::move(queue.front().values));
    queue.pop_front();
  }
  if (queue.empty() || queue.front().call != step.call_seq()) {
    return bad("its push of call " + std::to_string(step.call_seq()) + " never arrived here");
  }
  std::vector<float>& g = queue.front().values;
  auto& sum = backlogSum[static_cast<std::size_t>(rank)];
  if (step.starts_sum() || sum.size() != g.size()) sum.assign(g.size(), 0.0f);
  // As shard 0 does: the clipped copy first, then the sum (the same bits).
  if (step.scale() != 1.0f) {
    for (float& v : g) v = step.scale() * v;
  }
  for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
  spareRanges.push_back(std::move(g));
  queue.pop_front();
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::applyBacklogLocked(const pb::ShardStep& step) {
  const auto r = static_cast<std::size_t>(std::max(0, step.rank()));
  if (step.rank() < 0 || step.rank() >= options.workers || step.weights_size() != 1 ||
      backlogSum[r].size() != static_cast<std::size_t>(store->size())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + ": APPLY_BACKLOG of rank " + std::to_string(step.rank()) + " without its sum");
  }
  const float* g = backlogSum[r].data();
  const double weight = step.weights(0);
  {
    const ApplyTimer timed(this);
    store->apply(&g, &weight, 1, step.lr());
  }
  if (store->version() != step.version()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + ": applied a backlog as version " + std::to_string(store->version()) +
                            ", shard 0 made " + std::to_string(step.version()));
  }
  ++counters.applied;
  return grpc::Status::OK;
}

}  // namespace dasp::net
