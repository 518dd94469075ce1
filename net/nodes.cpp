// SPDX-License-Identifier: MIT
#include "net/nodes.h"

#include "net/ps_client.h"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool cancelled(const WorkerOptions& o) { return o.cancel != nullptr && o.cancel->load(); }

void say(const WorkerOptions& o, const std::string& text) {
  if (o.log) o.log(text);
}

// Retries a call while the server is unreachable, with exponential backoff (0.2 s → 2 s),
// for at most connectTimeoutS; says so once per attempt.
template <typename Call>
grpc::Status withRetry(const WorkerOptions& o, const char* what, NodeStats& stats, Call&& call) {
  const auto start = Clock::now();
  double backoff = 0.2;
  int attempt = 0;
  while (true) {
    auto status = call();
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || cancelled(o)) return status;
    ++attempt;
    ++stats.retries;
    if (secondsSince(start) + backoff > o.connectTimeoutS) return status;
    say(o, std::string(what) + ": server " + o.server + " unreachable (" + describe(status) + "); retry " +
               std::to_string(attempt) + " in " + std::to_string(backoff).substr(0, 4) + " s");
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 2.0);
  }
}

// The node's emulated iteration time: slowdown × base (or × the real compute), jittered,
// with scheduled changes by server time and live overrides from the server.
class SpeedProfile {
 public:
  SpeedProfile(const v1::NodeSpec& node, std::uint64_t seed) : m_node(node), m_rng(seed) {}
  double targetSeconds(double computeS, double serverT, double overrideSlowdown) {
    double slowdown = m_node.speed().has_slowdown() ? m_node.speed().slowdown() : 1.0;
    for (const auto& change : m_node.speed().changes()) {
      if (serverT >= change.at_s()) slowdown = change.slowdown();
    }
    if (overrideSlowdown > 0) slowdown = overrideSlowdown;
    const double base = m_node.speed().base_iteration_ms() > 0 ? m_node.speed().base_iteration_ms() / 1000.0 : computeS;
    double factor = 1.0;
    if (m_node.speed().jitter() > 0) factor = std::max(0.1, 1.0 + m_node.speed().jitter() * m_normal(m_rng));
    return slowdown * base * factor;
  }

 private:
  v1::NodeSpec m_node;
  std::mt19937_64 m_rng;
  std::normal_distribution<double> m_normal{0.0, 1.0};
};

}  // namespace

Result<JoinInfo> joinServer(const WorkerOptions& options, const std::string& role) {
  PsClient client(options.server, options.parameters);
  pb::JoinRequest request;
  request.set_role(role);
  request.set_name(options.name);
  request.set_model(options.model);
  request.set_parameter_count(options.parameters);
  request.set_requested_rank(options.requestedRank);
  pb::JoinReply reply;
  NodeStats stats;
  // An unreachable server fails each attempt at once (UNAVAILABLE); withRetry backs off,
  // says so, and gives up after connectTimeoutS.
  auto status = withRetry(options, "join", stats, [&] { return client.join(request, reply, 10.0); });
  if (!status.ok()) return Status::error(options.name + ": cannot join " + options.server + ": " + describe(status));
  JoinInfo info;
  info.rank = reply.rank();
  info.worldSize = reply.world_size();
  info.spec = reply.spec();
  info.serverTimeAtJoin = reply.server_t_s();
  return info;
}

Result<NodeStats> runWorker(const WorkerOptions& options, const JoinInfo& join, GradientSource& source) {
  PsClient client(options.server, options.parameters);
  NodeStats stats;
  const auto joinedAt = Clock::now();
  const auto workers = expandWorkers(join.spec);
  const v1::NodeSpec node = join.rank < static_cast<int>(workers.size()) ? workers[static_cast<std::size_t>(join.rank)]
                                                                         : v1::NodeSpec();
  SpeedProfile profile(node, join.spec.seed() * 7919 + static_cast<std::uint64_t>(join.rank));
  // Pull waits can be long under synchronous rules; a pull that times out is retried.
  const double pullTimeout = std::max(30.0, 3 * join.spec.strategy().barrier_timeout_s());
  const double pushTimeout = 60.0;

  std::vector<float> gradient(static_cast<std::size_t>(source.parameterCount()));
  pb::PullRequest pullRequest;
  pullRequest.set_rank(join.rank);
  pullRequest.set_min_version(-1);
  pb::PullReply pullReply;
  pb::PushRequest pushRequest;  // reused: its gradient buffer keeps its capacity
  pushRequest.set_rank(join.rank);
  pb::PushReply pushReply;
  double prevPushS = 0;
  double pullS = 0;
  const float* params = nullptr;

  // A plain pull; a pull that times out while parked is simply asked again.
  auto pullNext = [&]() -> grpc::Status {
    const auto pullStart = Clock::now();
    auto s = withRetry(options, "pull", stats, [&] {
      grpc::Status r;
      do {
        pullReply.Clear();
        r = client.pullParameters(pullRequest, pullReply, params, pullTimeout);
      } while (r.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled(options));
      return r;
    });
    pullS = std::max(0.0, secondsSince(pullStart) - pullReply.wait_s());
    return s;
  };

  auto status = pullNext();
  while (!cancelled(options)) {
    if (!status.ok()) return Status::error(options.name + ": pull failed: " + describe(status));
    if (pullReply.stop()) break;
    if (params == nullptr) {
      return Status::error(options.name + ": server sent parameters of the wrong size (expected " +
                           std::to_string(source.parameterCount()) + " floats)");
    }
    const auto computeStart = Clock::now();
    auto loss = source.computeGradient(params, gradient.data());
    if (!loss) return Status::error(options.name + ": " + loss.message());
    const double computeS = secondsSince(computeStart);
    const double serverT = join.serverTimeAtJoin + secondsSince(joinedAt);
    const double target = profile.targetSeconds(computeS, serverT, pullReply.slowdown());
    double emulatedS = 0;
    if (target > computeS) {
      // Emulated slowness: the node really takes this long, as a slower machine would.
      std::this_thread::sleep_for(std::chrono::duration<double>(target - computeS));
      emulatedS = secondsSince(computeStart) - computeS;
    } else if (target < computeS * 0.999 && node.speed().base_iteration_ms() > 0) {
      ++stats.overruns;
    }
    pushRequest.set_base_version(pullReply.version());
    pushRequest.set_compute_s(computeS);
    pushRequest.set_emulated_s(emulatedS);
    pushRequest.set_overrun(target < computeS * 0.999 && node.speed().base_iteration_ms() > 0);
    pushRequest.set_train_loss(loss.value());
    pushRequest.set_batch_size(source.batchSize());
    pushRequest.set_pull_s(pullS);
    pushRequest.set_prev_push_s(prevPushS);
    const auto pushStart = Clock::now();
    if (!client.chunked()) {
      // One call pushes and brings the next parameters; its transfer time (both ways) is
      // reported as the next iteration's pull.
      status = withRetry(options, "push", stats, [&] {
        pullReply.Clear();
        return client.pushPull(pushRequest, gradient.data(), pullReply, params, pullTimeout);
      });
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        // The push was handled; only the release took too long: pull again, never re-push.
        ++stats.iterations;
        status = pullNext();
        continue;
      }
      if (!status.ok()) return Status::error(options.name + ": push failed: " + describe(status));
      ++stats.iterations;
      pullS = std::max(0.0, secondsSince(pushStart) - pullReply.wait_s());
      prevPushS = 0;
      continue;
    }
    pushReply.Clear();
    status = withRetry(options, "push", stats,
                       [&] { return client.pushGradient(pushRequest, gradient.data(), pushReply, pushTimeout); });
    if (!status.ok()) return Status::error(options.name + ": push failed: " + describe(status));
    prevPushS = secondsSince(pushStart);
    ++stats.iterations;
    if (pushReply.stop()) break;
    status = pullNext();
  }
  stats.bytesSent = client.bytesSent();
  stats.bytesReceived = client.bytesReceived();
  return stats;
}

Result<NodeStats> runEvaluator(const WorkerOptions& options, const JoinInfo& join, ParameterEvaluator& evaluator,
                               ParameterEvaluator& finalEvaluator) {
  PsClient client(options.server, options.parameters);
  NodeStats stats;
  const auto& eval = join.spec.evaluation();
  const std::int64_t everyVersions = eval.every_steps() > 0 ? eval.every_steps() : 0;
  const double everyS = eval.every_s() > 0 ? eval.every_s() : 0;
  std::int64_t lastVersion = -1;
  bool stop = false;
  while (!cancelled(options) && !stop) {
    pb::PullRequest request;
    request.set_rank(-1);
    request.set_min_version(lastVersion < 0 ? 0 : lastVersion + std::max<std::int64_t>(1, everyVersions));
    pb::PullReply reply;
    // Wait for enough new versions, but no longer than every_s (then take what there is).
    const double timeout = everyS > 0 ? everyS : 60.0;
    const float* params = nullptr;
    auto status = withRetry(options, "evaluator pull", stats,
                            [&] { return client.pullParameters(request, reply, params, timeout); });
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      request.set_min_version(0);
      reply.Clear();
      status = withRetry(options, "evaluator pull", stats,
                         [&] { return client.pullParameters(request, reply, params, 30.0); });
    }
    if (!status.ok()) return Status::error(options.name + ": pull failed: " + describe(status));
    stop = reply.stop();
    if (reply.version() == lastVersion && !stop) continue;
    if (params == nullptr) {
      return Status::error(options.name + ": server sent parameters of the wrong size (expected " +
                           std::to_string(evaluator.parameterCount()) + " floats)");
    }
    const auto t0 = Clock::now();
    const Evaluation e = stop ? finalEvaluator.evaluate(params) : evaluator.evaluate(params);
    pb::EvaluationReport report;
    report.set_version(reply.version());
    report.set_loss(e.loss);
    report.set_accuracy(e.accuracy);
    report.set_samples(e.samples);
    report.set_version_t_s(reply.version_t_s());
    report.set_eval_s(secondsSince(t0));
    pb::ReportReply reportReply;
    status = withRetry(options, "report", stats, [&] { return client.report(report, reportReply, 30.0); });
    if (!status.ok()) return Status::error(options.name + ": report failed: " + describe(status));
    lastVersion = reply.version();
    ++stats.iterations;
  }
  stats.bytesReceived = client.bytesReceived();
  return stats;
}

}  // namespace dasp::net
