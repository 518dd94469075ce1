// SPDX-License-Identifier: MIT
// Chain replication in the parameter server (internal: net/server/ps_server_impl.h): the head
// forwards updates through the Replicator; replicas apply them (the Replicate RPC) until
// the runner promotes one (Control PROMOTE) or re-links the chain (Control SET_NEXT).
#include "net/server/ps_reactors.h"

#include <algorithm>
#include <string>

namespace dasp::net {

// Called by start() in chain mode, before the server serves: the replicator to the
// successor (a replica until promoted when `options.replica`).
void ParameterServer::Impl::setUpChain() {
  const auto& o = options;
  const std::int64_t n = store->size();
  isHead = !o.replica;
  combined.assign(static_cast<std::size_t>(n), 0.0f);
  replicator = std::make_unique<Replicator>(
      n, o.security, [raw = this](pb::ReplicaUpdate& u) { raw->snapshotState(u); },
      [raw = this](std::int64_t version) {
        std::lock_guard<std::mutex> lock(raw->mu);
        raw->replicatedVersion = std::max(raw->replicatedVersion, version);
        raw->releaseParkedLocked(raw->now());
      },
      [raw = this](const std::string& message) {
        std::lock_guard<std::mutex> lock(raw->mu);
        raw->emitRecoveryLocked(v1::RunEvent::REPLICA_UNREACHABLE, message, raw->store->version());
      });
  if (!o.chainNext.empty()) replicator->setSuccessor(o.chainNext);
}

void ParameterServer::Impl::fillStateLocked(pb::ReplicaUpdate& u) const {
  u.set_version(store->version());
  u.set_full_state(true);
  u.mutable_parameters()->assign(reinterpret_cast<const char*>(store->parameters()), gradientBytes());
  u.mutable_momentum()->assign(reinterpret_cast<const char*>(store->momentumBuffer().data()), gradientBytes());
  u.clear_gradient();
  u.set_lr(0);
  u.set_t_s(now());
}

// Replica catch-up / state: copy under the lock (called by the replicator's thread).
void ParameterServer::Impl::snapshotState(pb::ReplicaUpdate& u) {
  std::lock_guard<std::mutex> lock(mu);
  fillStateLocked(u);
}

// Chain: this replica becomes the head. Its state is what the chain acknowledged; the
// policy starts afresh, every worker counts as joined (they rejoin when they fail over),
// and the run's clock continues at `t`.
void ParameterServer::Impl::promoteLocked(double t) {
  isHead = true;
  setClock(t);
  started = true;
  incarnation = newIncarnation();
  for (auto& j : joined) j = 1;
  for (auto& c : lastContact) c = t;
  policy->reset(options.workers, t);
  policy->setVersion(store->version());
  replicatedVersion = store->version();
  if (versionTimeBase + static_cast<std::int64_t>(versionTime.size()) - 1 < store->version()) {
    restartVersionTimesLocked(store->version(), t);
  }
  emitRecoveryLocked(v1::RunEvent::PROMOTED,
                     options.name + " promoted to head at version " + std::to_string(store->version()) +
                         " (the version the chain acknowledged)",
                     store->version());
}

// Chain: an update or a whole state from the predecessor. Applied (a duplicate is not
// applied again), then forwarded; answered once the rest of the chain has it.
grpc::ServerUnaryReactor* ParameterServer::Impl::Replicate(grpc::CallbackServerContext* ctx,
                                                           const pb::ReplicaUpdate* req, pb::ReplicaAck* reply) {
  if (auto* refused = refusedUnary(ctx, "Replicate")) return refused;
  auto* reactor = ctx->DefaultReactor();
  std::lock_guard<std::mutex> lock(mu);
  auto fail = [&](grpc::StatusCode code, const std::string& why) {
    reactor->Finish(grpc::Status(code, options.name + ": " + why));
    return reactor;
  };
  if (isHead) return fail(grpc::StatusCode::FAILED_PRECONDITION, "is the head; it takes no replica updates");
  if (auto st = checkReplicaUpdate(*req); !st.ok()) return fail(st.error_code(), st.error_message());
  const std::int64_t have = store->version();
  if (req->full_state()) {
    store->restore(reinterpret_cast<const float*>(req->parameters().data()),
                   reinterpret_cast<const float*>(req->momentum().data()), req->version());
    restartVersionTimesLocked(req->version(), req->t_s());
    recordStateLocked(UpdateRecordKind::State);
  } else if (req->version() == have + 1) {
    const float* g = reinterpret_cast<const float*>(req->gradient().data());
    const double one = 1.0;
    store->apply(&g, &one, 1, req->lr());
    recordUpdateLocked(&g, &one, 1, req->lr());
    versionTime.push_back(req->t_s());
  } else if (req->version() > have + 1) {
    return fail(grpc::StatusCode::FAILED_PRECONDITION, "update for version " + std::to_string(req->version()) +
                                                           " but this replica holds " + std::to_string(have) +
                                                           " (sending the whole state heals the gap)");
  }
  // (A duplicate — version <= have — is not applied again, only passed on.)
  if (replicator && replicator->hasSuccessor()) {
    auto u = replicator->acquire();
    u->CopyFrom(*req);
    replicator->enqueue(std::move(u), [reactor, reply](bool ok, std::int64_t acked) {
      reply->set_version(acked);
      reactor->Finish(ok ? grpc::Status::OK
                         : grpc::Status(grpc::StatusCode::UNAVAILABLE, "replica shutting down"));
    });
    return reactor;
  }
  reply->set_version(std::max(req->version(), store->version()));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

// Control SET_NEXT: the runner re-links the chain (an empty address: this server is the
// tail). False (with the reply's refusal set) for a server outside a chain.
bool ParameterServer::Impl::setNextLocked(const std::string& address, pb::ControlReply* reply, std::string& detail) {
  if (!replicator) {
    reply->set_accepted(false);
    reply->set_detail("SET_NEXT needs a server of a chain (recovery.mode chain)");
    return false;
  }
  replicator->setSuccessor(address);
  detail = address.empty() ? options.name + " is now the tail" : options.name + " forwards to " + address;
  emitRecoveryLocked(address.empty() ? v1::RunEvent::CHAIN_TAIL : v1::RunEvent::CHAIN_LINK, detail, store->version());
  return true;
}

}  // namespace dasp::net
