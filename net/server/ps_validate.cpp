// SPDX-License-Identifier: MIT
// The parameter server's checks of every field a client sends (internal:
// net/server/ps_server_impl.h): a client holding the run token may still send anything, so
// each RPC's fields are checked before they are used, and a bad one is INVALID_ARGUMENT
// naming the field and the value. The gradient itself goes through the gradient guard
// (core/params/gradient_guard.h) in handlePush.
#include "net/server/ps_reactors.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace dasp::net {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

grpc::Status invalid(const std::string& why) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why); }

// A duration a node measured: finite and >= 0 (at most a day: no step of a run is longer).
bool isDuration(double s) { return std::isfinite(s) && s >= 0 && s <= 86400; }

}  // namespace

grpc::Status ParameterServer::Impl::checkPushFields(const pb::PushRequest& req) const {
  const std::string who = "push from worker " + std::to_string(req.rank()) + ": ";
  if (req.base_version() < 0) return invalid(who + "base_version " + std::to_string(req.base_version()) + " is negative");
  const std::pair<const char*, double> durations[] = {
      {"compute_s", req.compute_s()},         {"emulated_s", req.emulated_s()},
      {"pull_s", req.pull_s()},               {"prev_push_s", req.prev_push_s()},
      {"backlog_age_s", req.backlog_age_s()}, {"backlog_outage_s", req.backlog_outage_s()}};
  for (const auto& [field, value] : durations) {
    if (!isDuration(value)) return invalid(who + field + " " + number(value) + " is not a duration in [0, 86400] s");
  }
  if (req.batch_size() < 0 || req.batch_size() > kMaxBatch) {
    return invalid(who + "batch_size " + std::to_string(req.batch_size()) + " is outside [0, " +
                   std::to_string(kMaxBatch) + "]");
  }
  if (req.backlog_total() != 0 || req.backlog_index() != 0) {
    const auto& rec = options.spec.recovery();
    if (rec.mode() != v1::RecoverySpec::STATELESS) {
      return invalid(who + "a backlog (backlog_total " + std::to_string(req.backlog_total()) +
                     ") needs recovery.mode STATELESS");
    }
    if (req.backlog_total() < 1 || req.backlog_total() > std::max(1, rec.backlog_max_gradients())) {
      return invalid(who + "backlog_total " + std::to_string(req.backlog_total()) + " is outside [1, " +
                     std::to_string(std::max(1, rec.backlog_max_gradients())) + "] (recovery.backlog_max_gradients)");
    }
    if (req.backlog_index() < 0 || req.backlog_index() >= req.backlog_total()) {
      return invalid(who + "backlog_index " + std::to_string(req.backlog_index()) + " is outside [0, " +
                     std::to_string(req.backlog_total()) + ")");
    }
    if (req.backlog_dropped() < 0) {
      return invalid(who + "backlog_dropped " + std::to_string(req.backlog_dropped()) + " is negative");
    }
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::checkJoinFields(const pb::JoinRequest& req) const {
  const std::string& role = req.role();
  if (role != "worker" && role != "evaluator" && role != "probe") {
    return invalid("join rejected: unknown role '" + role.substr(0, 64) + "' (worker, evaluator or probe)");
  }
  if (role == "probe") return grpc::Status::OK;
  if (req.requested_rank() < -1 || req.requested_rank() >= options.workers) {
    return invalid("join rejected: requested_rank " + std::to_string(req.requested_rank()) + " is outside [-1, " +
                   std::to_string(options.workers - 1) + "] (-1 = any free rank)");
  }
  if (req.held_version() < 0 && !req.held_parameters().empty()) {
    return invalid("join rejected: held_version " + std::to_string(req.held_version()) + " is negative");
  }
  if (!req.held_parameters().empty()) {
    // The whole model's, a sharded server's too (shard 0 hands each shard its range).
    const std::int64_t count = options.layout.parameters();
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
    if (req.held_parameters().size() != bytes) {
      return invalid("join rejected: held_parameters has " + std::to_string(req.held_parameters().size()) +
                     " bytes, the model has " + std::to_string(bytes));
    }
    if (!allFinite(reinterpret_cast<const float*>(req.held_parameters().data()), count)) {
      return invalid("join rejected: held_parameters contain NaN or Inf");
    }
  }
  if (req.local_steps() != 0) {
    if (!trainsLocalCopies(options.spec.recovery())) {
      return invalid("join rejected: local_steps " + std::to_string(req.local_steps()) +
                     " needs recovery.mode LOCAL, or CHAIN with local_copies");
    }
    const std::int64_t most = std::max(1, options.spec.recovery().local_max_steps());
    if (req.local_steps() < 0 || req.local_steps() > most || req.held_parameters().empty()) {
      return invalid("join rejected: local_steps " + std::to_string(req.local_steps()) + " is outside [0, " +
                     std::to_string(most) + "] (recovery.local_max_steps) or comes without held_parameters");
    }
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::checkControlFields(const pb::ControlRequest& req) const {
  const int rank = req.rank();
  const bool workerRank = rank >= 0 && rank < options.workers;
  switch (req.action()) {
    case pb::ControlRequest::STOP:
      return grpc::Status::OK;
    case pb::ControlRequest::SET_SLOWDOWN:
      if (!workerRank) {
        return invalid("SET_SLOWDOWN: rank " + std::to_string(rank) + " is not a worker (0.." +
                       std::to_string(options.workers - 1) + ")");
      }
      if (!(req.slowdown() == 0 || (req.slowdown() > 0 && req.slowdown() <= kMaxSlowdown))) {
        return invalid("SET_SLOWDOWN: slowdown " + number(req.slowdown()) + " is outside (0, " +
                       number(kMaxSlowdown) + "] (0 = the node's own profile)");
      }
      return grpc::Status::OK;
    case pb::ControlRequest::MARK_DOWN:
      if (!workerRank) return invalid("MARK_DOWN: rank " + std::to_string(rank) + " is not a worker");
      return grpc::Status::OK;
    case pb::ControlRequest::PROMOTE:
      if (!(std::isfinite(req.t_s()) && req.t_s() >= 0)) {
        return invalid("PROMOTE: t_s " + number(req.t_s()) + " is not a run time >= 0");
      }
      return grpc::Status::OK;
    case pb::ControlRequest::SET_NEXT:
      if (req.address().size() > 1024) return invalid("SET_NEXT: address longer than 1024 characters");
      return grpc::Status::OK;
    default:
      return invalid("Control: unknown action " + std::to_string(static_cast<int>(req.action())));
  }
}

grpc::Status ParameterServer::Impl::checkReportFields(const pb::EvaluationReport& req) const {
  if (req.version() < 0) return invalid("Report: version " + std::to_string(req.version()) + " is negative");
  if (!(req.accuracy() >= 0 && req.accuracy() <= 1)) {
    return invalid("Report: accuracy " + number(req.accuracy()) + " is outside [0, 1]");
  }
  if (!isDuration(req.eval_s())) return invalid("Report: eval_s " + number(req.eval_s()) + " is not a duration");
  if (!(std::isfinite(req.version_t_s()) && req.version_t_s() >= 0)) {
    return invalid("Report: version_t_s " + number(req.version_t_s()) + " is not a run time >= 0");
  }
  if (req.samples() < 0) return invalid("Report: samples " + std::to_string(req.samples()) + " is negative");
  // The loss may be NaN or Inf: that is how a diverged model's evaluation reads.
  return grpc::Status::OK;
}

grpc::Status ParameterServer::Impl::checkReplicaUpdate(const pb::ReplicaUpdate& req) const {
  if (req.version() < 0) return invalid("replica update: version " + std::to_string(req.version()) + " is negative");
  if (!(std::isfinite(req.t_s()) && req.t_s() >= 0)) {
    return invalid("replica update: t_s " + number(req.t_s()) + " is not a run time >= 0");
  }
  auto finite = [&](const std::string& bytes) {
    return bytes.size() == gradientBytes() && allFinite(reinterpret_cast<const float*>(bytes.data()), store->size());
  };
  if (req.full_state()) {
    if (!finite(req.parameters()) || !finite(req.momentum())) {
      return invalid("replica state of the wrong size or with NaN or Inf (" + std::to_string(req.parameters().size()) +
                     " bytes, expected " + std::to_string(gradientBytes()) + ")");
    }
    return grpc::Status::OK;
  }
  if (!(std::isfinite(req.lr()) && req.lr() >= 0)) return invalid("replica update: lr " + number(req.lr()) + " is invalid");
  if (!finite(req.gradient())) return invalid("replica update of the wrong size or with NaN or Inf");
  return grpc::Status::OK;
}

bool ParameterServer::Impl::claimReceiveBuffer(int rank) {
  std::lock_guard<std::mutex> lock(mu);
  auto& busy = pushStreaming[static_cast<std::size_t>(rank)];
  if (busy) return false;
  busy = 1;
  return true;
}

void ParameterServer::Impl::releaseReceiveBuffer(int rank) {
  std::lock_guard<std::mutex> lock(mu);
  pushStreaming[static_cast<std::size_t>(rank)] = 0;
}

}  // namespace dasp::net
