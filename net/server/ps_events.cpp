// SPDX-License-Identifier: MIT
// The parameter server's event hub (internal: net/server/ps_server_impl.h): every event is
// appended, under Impl::mu, to the first watcher's pending batch (others get a copy), or
// kept in `unwatched` while nobody watches; the Watch RPC subscribes.
#include "net/server/ps_reactors.h"

#include <string>

namespace dasp::net {

namespace {

// A policy decision's kind as the event carries it.
pb::ClusterEvent::DecisionKind decisionKindOf(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::StateChange: return pb::ClusterEvent::STATE_CHANGE;
    case DecisionKind::Drop: return pb::ClusterEvent::DROP;
    case DecisionKind::BarrierTimeout: return pb::ClusterEvent::BARRIER_TIMEOUT;
    case DecisionKind::Repartition: return pb::ClusterEvent::REPARTITION;
    case DecisionKind::Grant: return pb::ClusterEvent::GRANT;
  }
  return pb::ClusterEvent::DECISION_KIND_UNSPECIFIED;
}

}  // namespace

pb::ClusterEvent* ParameterServer::Impl::newEventLocked() {
  // The first live watcher gets the event; others copy it (usually there is one: the
  // runner). A watcher that was cut off stays in `watchers` until gRPC is done with it.
  for (auto* w : watchers) {
    if (!w->done) return w->pending.add_events();
  }
  return unwatched.events_size() < kUnwatchedMax ? unwatched.add_events() : nullptr;
}

void ParameterServer::Impl::publishLocked(pb::ClusterEvent* e) {
  if (e == nullptr) return;
  bool first = true;
  for (auto* w : watchers) {
    if (w->done) continue;
    if (first) {
      first = false;
    } else {
      *w->pending.add_events() = *e;
    }
  }
  for (auto* w : watchers) {
    if (w->pending.events_size() > kWatcherPendingMax) {
      // A watcher that does not read: its stream is cut (the events it missed are gone;
      // the runner's watcher reads as they come and never gets here).
      w->pending.Clear();
      ++counters.watchersCutOff;
      w->finishLocked(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   options.name + ": the watcher reads too slowly (over " +
                                       std::to_string(kWatcherPendingMax) + " events pending); watch again"));
    } else {
      w->flushLocked();
    }
  }
}

void ParameterServer::Impl::emitDecisionsLocked() {
  for (const auto& d : out.decisions) {
    auto* e = newEventLocked();
    if (e == nullptr) return;
    e->set_kind(pb::ClusterEvent::DECISION);
    e->set_t_s(d.t);
    e->set_rank(d.rank);
    e->set_version(policy->version());
    e->set_decision(toString(d.kind));
    e->set_decision_kind(decisionKindOf(d.kind));
    e->set_state(toString(d.to));
    e->set_parallel_state(toString(d.from));
    e->set_staleness(d.value);
    e->set_detail(d.reason);
    publishLocked(e);
  }
}

// Once a period of a second or more is over, a SHARD_LOAD event with its apply and serve
// seconds (none for an idle period).
void ParameterServer::Impl::noteLoadLocked(double t) {
  const double period = t - loadSince;
  if (period < 1.0) return;
  if (loadApplyS > 0 || loadServeS > 0) {
    auto* e = newEventLocked();
    if (e == nullptr) return;
    e->set_kind(pb::ClusterEvent::SHARD_LOAD);
    e->set_t_s(t);
    e->set_rank(-1);
    e->set_shard(options.shard);
    e->set_node(options.name);
    e->set_period_s(period);
    e->set_apply_s(loadApplyS);
    e->set_serve_s(loadServeS);
    publishLocked(e);
  }
  loadSince = t;
  loadApplyS = 0;
  loadServeS = 0;
}

// A RECOVERY event; kept for the first watcher when nobody watches yet (a restarted
// server restores before the runner has reconnected).
void ParameterServer::Impl::emitRecoveryLocked(EventCode what, const std::string& detail, std::int64_t version,
                                               int rank, std::int64_t count, double ageS, std::int64_t dropped,
                                               double outageS) {
  pb::ClusterEvent e;
  e.set_kind(pb::ClusterEvent::RECOVERY);
  e.set_t_s(now());
  e.set_rank(rank);
  e.set_version(version);
  e.set_code(what);
  e.set_decision(recoveryStepName(what));
  e.set_detail(detail);
  if (what == v1::RunEvent::PROMOTED || what == v1::RunEvent::CHAIN_TAIL || what == v1::RunEvent::CHAIN_LINK) {
    e.set_target(options.name);
  }
  e.set_count(count);
  e.set_age_s(ageS);
  e.set_dropped(dropped);
  e.set_outage_s(outageS);
  say(detail);
  if (auto* slot = newEventLocked()) {
    *slot = e;
    publishLocked(slot);
  }
}

grpc::ServerWriteReactor<pb::EventBatch>* ParameterServer::Impl::Watch(grpc::CallbackServerContext* ctx,
                                                                       const pb::WatchRequest*) {
  if (auto st = authorize(ctx, "Watch"); !st.ok()) return new RefusedWriter<pb::EventBatch>(st);
  std::lock_guard<std::mutex> lock(mu);
  // Watchers cut off for not reading count until gRPC is done with them (each still holds
  // the batch it was writing).
  if (watchers.size() >= static_cast<std::size_t>(kMaxWatchers)) {
    return new RefusedWriter<pb::EventBatch>(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, options.name + ": " + std::to_string(watchers.size()) +
                                                               " Watch streams already (at most " +
                                                               std::to_string(kMaxWatchers) + ")"));
  }
  auto* w = new WatchReactor(this);
  watchers.insert(w);
  if (unwatched.events_size() > 0) {
    w->pending.Swap(&unwatched);
    unwatched.Clear();
    w->flushLocked();
  }
  return w;
}

}  // namespace dasp::net
