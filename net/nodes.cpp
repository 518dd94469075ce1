// SPDX-License-Identifier: MIT
#include "net/nodes.h"

#include "net/link_emulation.h"

#include "net/ps_client.h"

#include <chrono>
#include <cmath>
#include <deque>
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
  // `batchFactor` = this iteration's batch ÷ the spec's: an emulated base time scales with
  // the batch as real compute does (the real compute time already does).
  double targetSeconds(double computeS, double serverT, double overrideSlowdown, double batchFactor) {
    double slowdown = slowdownAt(m_node.speed(), serverT);
    if (overrideSlowdown > 0) slowdown = overrideSlowdown;
    const double base = m_node.speed().base_iteration_ms() > 0 ? batchFactor * m_node.speed().base_iteration_ms() / 1000.0
                                                               : computeS;
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

namespace {

std::vector<std::string> serverList(const WorkerOptions& options) {
  if (!options.servers.empty()) return options.servers;
  return {options.server};
}

// A status that means "no server here (any more)": the node looks for one.
bool isOutage(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
         status.error_code() == grpc::StatusCode::CANCELLED;
}

}  // namespace

Result<JoinInfo> joinServer(const WorkerOptions& options, const std::string& role) {
  pb::JoinRequest request;
  request.set_role(role);
  request.set_name(options.name);
  request.set_model(options.model);
  request.set_parameter_count(options.parameters);
  request.set_requested_rank(options.requestedRank);
  pb::JoinReply reply;
  NodeStats stats;
  const auto servers = serverList(options);
  // An unreachable server fails each attempt at once (UNAVAILABLE); withRetry backs off,
  // says so, and gives up after connectTimeoutS. With several servers (a chain), a replica
  // that is not the head answers FAILED_PRECONDITION and the next one is asked.
  grpc::Status status;
  auto started = Clock::now();
  do {
    for (const auto& address : servers) {
      PsClient client(address, options.parameters, options.security);
      WorkerOptions single = options;
      single.server = address;
      const double left = std::max(0.2, options.connectTimeoutS - secondsSince(started));
      single.connectTimeoutS = servers.size() > 1 ? 0.0 : left;
      status = withRetry(single, "join", stats, [&] { return client.join(request, reply, 10.0); });
      if (status.ok()) break;
    }
    if (status.ok() || servers.size() == 1 || !isOutage(status) || cancelled(options)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (secondsSince(started) < options.connectTimeoutS);
  if (!status.ok()) return Status::error(options.name + ": cannot join " + options.server + ": " + describe(status));
  JoinInfo info;
  info.rank = reply.rank();
  info.worldSize = reply.world_size();
  info.spec = reply.spec();
  info.serverTimeAtJoin = reply.server_t_s();
  return info;
}

namespace {

// The gradients a stateless worker computed while no server answered: a bounded FIFO
// whose buffers are reused (the oldest is dropped, and counted, beyond the bound).
class Backlog {
 public:
  Backlog(std::size_t maxCount, double maxBytes, std::size_t parameters)
      : m_maxCount(std::max<std::size_t>(1, maxCount)),
        m_maxBytes(maxBytes),
        m_parameters(parameters) {}
  // A buffer to compute the next gradient into; commit() adds it.
  float* next() {
    if (m_spare.empty()) m_spare.emplace_back(m_parameters);
    return m_spare.back().data();
  }
  void commit(std::int64_t baseVersion, double computedAt) {
    m_items.push_back({std::move(m_spare.back()), baseVersion, computedAt});
    m_spare.pop_back();
    const double bytesEach = static_cast<double>(m_parameters) * sizeof(float);
    while (m_items.size() > m_maxCount || static_cast<double>(m_items.size()) * bytesEach > m_maxBytes) {
      m_spare.push_back(std::move(m_items.front().gradient));
      m_items.pop_front();
      ++m_dropped;
    }
  }
  std::size_t size() const { return m_items.size(); }
  bool empty() const { return m_items.empty(); }
  std::int64_t dropped() const { return m_dropped; }
  struct Item {
    std::vector<float> gradient;
    std::int64_t baseVersion;
    double computedAt;  // seconds on the worker's clock
  };
  const Item& at(std::size_t i) const { return m_items[i]; }
  void clear() {
    while (!m_items.empty()) {
      m_spare.push_back(std::move(m_items.front().gradient));
      m_items.pop_front();
    }
    m_dropped = 0;
  }

 private:
  std::size_t m_maxCount;
  double m_maxBytes;
  std::size_t m_parameters;
  std::deque<Item> m_items;
  std::vector<std::vector<float>> m_spare;
  std::int64_t m_dropped = 0;
};

void recoveryLine(const WorkerOptions& o, const std::string& text) { say(o, "dasp-recovery " + text); }

}  // namespace

Result<NodeStats> runWorker(const WorkerOptions& options, const JoinInfo& join, GradientSource& source) {
  const auto servers = serverList(options);
  std::size_t current = 0;
  auto client = std::make_unique<PsClient>(servers[current], options.parameters, options.security);
  NodeStats stats;
  const auto joinedAt = Clock::now();
  const auto workers = expandWorkers(join.spec);
  const v1::NodeSpec node = join.rank < static_cast<int>(workers.size()) ? workers[static_cast<std::size_t>(join.rank)]
                                                                         : v1::NodeSpec();
  SpeedProfile profile(node, join.spec.seed() * 7919 + static_cast<std::uint64_t>(join.rank));
  // The spec's link of this worker (if any), emulated here in the sender: every push waits
  // before it leaves and every pull after it arrives, so both show as transfer time.
  const LinkEmulation link = LinkEmulation::of(effectiveLink(node, join.spec));
  const std::size_t modelBytes = static_cast<std::size_t>(source.parameterCount()) * sizeof(float);
  // Pull waits can be long under synchronous rules; a pull that times out is retried.
  const double pullTimeout = std::max(30.0, 3 * join.spec.strategy().barrier_timeout_s());
  const double pushTimeout = 60.0;
  const auto& recovery = join.spec.recovery();
  const bool stateless = recovery.mode() == v1::RecoverySpec::STATELESS;
  const auto parameterCount = static_cast<std::size_t>(source.parameterCount());

  std::vector<float> gradient(parameterCount);
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
  // Stateless: the last parameters and their version, kept to compute on during an outage.
  std::vector<float> lastParams;
  std::int64_t lastVersion = -1;
  Backlog backlog(static_cast<std::size_t>(recovery.backlog_max_gradients()), recovery.backlog_max_mb() * 1e6,
                  parameterCount);

  // Computes one gradient on `p` into `out` and emulates the node's speed.
  struct Step {
    double loss = 0, computeS = 0, emulatedS = 0;
    bool overrun = false;
  };
  auto compute = [&](const float* p, float* out, double slowdown) -> Result<Step> {
    const auto computeStart = Clock::now();
    auto loss = source.computeGradient(p, out);
    if (!loss) return Status::error(options.name + ": " + loss.message());
    Step step;
    step.loss = loss.value();
    step.computeS = secondsSince(computeStart);
    const double serverT = join.serverTimeAtJoin + secondsSince(joinedAt);
    const double batchFactor = static_cast<double>(source.batchSize()) / static_cast<double>(join.spec.batch_size());
    const double target = profile.targetSeconds(step.computeS, serverT, slowdown, batchFactor);
    if (target > step.computeS) {
      // Emulated slowness: the node really takes this long, as a slower machine would.
      std::this_thread::sleep_for(std::chrono::duration<double>(target - step.computeS));
      step.emulatedS = secondsSince(computeStart) - step.computeS;
    } else if (target < step.computeS * 0.999 && node.speed().base_iteration_ms() > 0) {
      ++stats.overruns;
      step.overrun = true;
    }
    return step;
  };

  // The outage loop: find the server (the head, in a chain), rejoin, flush the backlog.
  // `inFlight`: a computed gradient whose push was not acknowledged.
  auto recover = [&](const grpc::Status& why, bool inFlight) -> Status {
    ++stats.outages;
    const auto outageStart = Clock::now();
    recoveryLine(options, "outage_detected node=" + options.name + " server=" + servers[current] + " status=\"" +
                              describe(why) + "\"");
    std::int64_t computed = 0;
    std::int64_t discarded = 0;
    if (inFlight) {
      if (stateless && lastVersion >= 0) {
        std::copy(gradient.begin(), gradient.end(), backlog.next());
        backlog.commit(lastVersion, secondsSince(joinedAt));
      } else {
        discarded = 1;
      }
    }
    double backoff = 0.1;
    while (true) {
      if (cancelled(options)) return Status::error(options.name + ": cancelled during a server outage");
      if (secondsSince(outageStart) > recovery.reconnect_timeout_s()) {
        std::string all;
        for (const auto& a : servers) all += (all.empty() ? "" : ", ") + a;
        return Status::error(options.name + ": no server answered at " + all + " for " +
                             std::to_string(static_cast<int>(recovery.reconnect_timeout_s())) +
                             " s (recovery.reconnect_timeout_s); last error: " + describe(why));
      }
      if (stateless && lastVersion >= 0) {
        // Keep computing on the last parameters, as the stateless server's workers do.
        auto step = compute(lastParams.data(), backlog.next(), pullReply.slowdown());
        if (!step) return step.status();
        backlog.commit(lastVersion, secondsSince(joinedAt));
        ++computed;
      } else {
        std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
        backoff = std::min(backoff * 1.5, 0.5);
      }
      pb::JoinRequest request;
      request.set_role("worker");
      request.set_name(options.name);
      request.set_model(options.model);
      request.set_parameter_count(options.parameters);
      request.set_requested_rank(join.rank);
      request.set_rejoin(true);
      if (stateless && lastVersion >= 0) {
        request.set_held_version(lastVersion);
        request.mutable_held_parameters()->assign(reinterpret_cast<const char*>(lastParams.data()),
                                                  lastParams.size() * sizeof(float));
      }
      for (std::size_t k = 0; k < servers.size(); ++k) {
        const std::size_t i = (current + k) % servers.size();
        auto candidate = std::make_unique<PsClient>(servers[i], options.parameters, options.security);
        pb::JoinReply reply;
        // A restarted stateless server answers once it has adopted parameters (seconds).
        auto status = candidate->join(request, reply, stateless ? 15.0 : 5.0);
        if (!status.ok()) continue;
        current = i;
        client = std::move(candidate);
        const double outageS = secondsSince(outageStart);
        // Flush the backlog: the server applies it in one step when the last one arrives.
        const std::size_t total = backlog.size();
        const double now = secondsSince(joinedAt);
        for (std::size_t b = 0; b < total; ++b) {
          const auto& item = backlog.at(b);
          pushRequest.set_base_version(item.baseVersion);
          pushRequest.set_compute_s(0);
          pushRequest.set_emulated_s(0);
          pushRequest.set_overrun(false);
          pushRequest.set_batch_size(source.batchSize());
          pushRequest.set_backlog_total(static_cast<int>(total));
          pushRequest.set_backlog_index(static_cast<int>(b));
          pushRequest.set_backlog_age_s(now - backlog.at(0).computedAt);
          pushRequest.set_backlog_dropped(backlog.dropped());
          pushRequest.set_backlog_outage_s(outageS);
          pushReply.Clear();
          auto pushed = client->pushGradient(pushRequest, item.gradient.data(), pushReply, pushTimeout);
          if (!pushed.ok()) {
            pushRequest.set_backlog_total(0);
            return Status::error(options.name + ": flushing the backlog failed: " + describe(pushed));
          }
        }
        pushRequest.set_backlog_total(0);
        pushRequest.set_backlog_index(0);
        recoveryLine(options, "reconnected node=" + options.name + " server=" + servers[current] +
                                  " outage_s=" + std::to_string(outageS) + " computed=" + std::to_string(computed) +
                                  " dropped=" + std::to_string(backlog.dropped()) + " discarded=" +
                                  std::to_string(discarded) + " flushed=" + std::to_string(total));
        backlog.clear();
        return Status::ok();
      }
    }
  };

  // A plain pull; a pull that times out while parked is simply asked again; an outage is
  // recovered from and the pull asked of the server found.
  auto pullNext = [&]() -> grpc::Status {
    while (true) {
      const auto pullStart = Clock::now();
      grpc::Status r;
      do {
        pullReply.Clear();
        r = client->pullParameters(pullRequest, pullReply, params, pullTimeout);
      } while (r.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled(options));
      if (r.ok()) link.hold(modelBytes);
      pullS = std::max(0.0, secondsSince(pullStart) - pullReply.wait_s());
      if (!isOutage(r) || cancelled(options)) return r;
      if (auto st = recover(r, false); !st) return grpc::Status(grpc::StatusCode::UNAVAILABLE, st.message());
    }
  };
  auto keepParameters = [&] {
    if (!stateless || params == nullptr) return;
    lastParams.assign(params, params + parameterCount);
    lastVersion = pullReply.version();
  };

  auto status = pullNext();
  while (!cancelled(options)) {
    if (!status.ok()) return Status::error(options.name + ": pull failed: " + describe(status));
    if (pullReply.stop()) break;
    if (params == nullptr) {
      return Status::error(options.name + ": server sent parameters of the wrong size (expected " +
                           std::to_string(source.parameterCount()) + " floats)");
    }
    keepParameters();
    // The server may size this node's batch (DASP's ADAPTIVE rule); 0 = the spec's.
    const int batch = pullReply.batch_size() > 0 ? pullReply.batch_size() : join.spec.batch_size();
    if (batch != source.batchSize() && !source.setBatchSize(batch)) {
      return Status::error(options.name + ": cannot compute the batch of " + std::to_string(batch) +
                           " samples the server asked for (pull reply batch_size)");
    }
    auto step = compute(params, gradient.data(), pullReply.slowdown());
    if (!step) return step.status();
    pushRequest.set_base_version(pullReply.version());
    pushRequest.set_compute_s(step->computeS);
    pushRequest.set_emulated_s(step->emulatedS);
    pushRequest.set_overrun(step->overrun);
    pushRequest.set_train_loss(step->loss);
    pushRequest.set_batch_size(source.batchSize());
    pushRequest.set_pull_s(pullS);
    pushRequest.set_prev_push_s(prevPushS);
    link.hold(modelBytes);  // the push on the wire; the server sees it arrive this much later
    const auto pushStart = Clock::now();
    if (!client->chunked()) {
      // One call pushes and brings the next parameters; its transfer time (both ways) is
      // reported as the next iteration's pull.
      pullReply.Clear();
      status = client->pushPull(pushRequest, gradient.data(), pullReply, params, pullTimeout);
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        // The push was handled; only the release took too long: pull again, never re-push.
        ++stats.iterations;
        status = pullNext();
        continue;
      }
      if (isOutage(status) && !cancelled(options)) {
        if (auto st = recover(status, true); !st) return st;
        status = pullNext();
        continue;
      }
      if (!status.ok()) return Status::error(options.name + ": push failed: " + describe(status));
      ++stats.iterations;
      link.hold(modelBytes);  // the parameters coming back
      pullS = std::max(0.0, secondsSince(pushStart) - pullReply.wait_s());
      prevPushS = 0;
      continue;
    }
    pushReply.Clear();
    status = client->pushGradient(pushRequest, gradient.data(), pushReply, pushTimeout);
    if (isOutage(status) && !cancelled(options)) {
      if (auto st = recover(status, true); !st) return st;
      status = pullNext();
      continue;
    }
    if (!status.ok()) return Status::error(options.name + ": push failed: " + describe(status));
    prevPushS = secondsSince(pushStart);
    ++stats.iterations;
    if (pushReply.stop()) break;
    status = pullNext();
  }
  stats.bytesSent = client->bytesSent();
  stats.bytesReceived = client->bytesReceived();
  return stats;
}

Result<NodeStats> runEvaluator(const WorkerOptions& options, const JoinInfo& join, ParameterEvaluator& evaluator,
                               ParameterEvaluator& finalEvaluator) {
  const auto servers = serverList(options);
  std::size_t current = 0;
  auto client = std::make_unique<PsClient>(servers[current], options.parameters, options.security);
  NodeStats stats;
  const auto& eval = join.spec.evaluation();
  const std::int64_t everyVersions = eval.every_steps() > 0 ? eval.every_steps() : 0;
  const double everyS = eval.every_s() > 0 ? eval.every_s() : 0;
  const double reconnectTimeoutS = join.spec.recovery().reconnect_timeout_s();
  std::int64_t lastVersion = -1;
  std::uint64_t lastIncarnation = 0;
  bool stop = false;
  // A pull that survives outages: on one, every server is tried in chain order until one
  // answers (a restarted server may hold an older version: the schedule starts over).
  auto pull = [&](pb::PullRequest& request, pb::PullReply& reply, const float*& params, double timeout) {
    auto status = client->pullParameters(request, reply, params, timeout);
    if (!isOutage(status) || cancelled(options)) return status;
    ++stats.outages;
    const auto outageStart = Clock::now();
    recoveryLine(options, "outage_detected node=" + options.name + " server=" + servers[current] + " status=\"" +
                              describe(status) + "\"");
    request.set_min_version(0);
    while (!cancelled(options) && secondsSince(outageStart) < reconnectTimeoutS) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (std::size_t k = 0; k < servers.size(); ++k) {
        const std::size_t i = (current + k) % servers.size();
        auto candidate = std::make_unique<PsClient>(servers[i], options.parameters, options.security);
        reply.Clear();
        status = candidate->pullParameters(request, reply, params, 5.0);
        if (!isOutage(status)) {
          current = i;
          client = std::move(candidate);
          lastVersion = -1;
          recoveryLine(options, "reconnected node=" + options.name + " server=" + servers[current] +
                                    " outage_s=" + std::to_string(secondsSince(outageStart)));
          return status;
        }
      }
    }
    return status;
  };
  while (!cancelled(options) && !stop) {
    pb::PullRequest request;
    request.set_rank(-1);
    request.set_min_version(lastVersion < 0 ? 0 : lastVersion + std::max<std::int64_t>(1, everyVersions));
    pb::PullReply reply;
    // Wait for enough new versions, but no longer than every_s (then take what there is).
    const double timeout = everyS > 0 ? everyS : 60.0;
    const float* params = nullptr;
    auto status = pull(request, reply, params, timeout);
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      request.set_min_version(0);
      reply.Clear();
      status = pull(request, reply, params, 30.0);
    }
    if (!status.ok()) return Status::error(options.name + ": pull failed: " + describe(status));
    stop = reply.stop();
    if (reply.version() == lastVersion && reply.incarnation() == lastIncarnation && !stop) continue;
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
    status = client->report(report, reportReply, 30.0);
    if (isOutage(status)) {
      // The server went away after the pull: this evaluation has no one to go to.
      say(options, options.name + ": evaluation of version " + std::to_string(reply.version()) +
                       " not reported (" + describe(status) + ")");
    } else if (!status.ok()) {
      return Status::error(options.name + ": report failed: " + describe(status));
    }
    lastVersion = reply.version();
    lastIncarnation = reply.incarnation();
    ++stats.iterations;
  }
  stats.bytesReceived = client->bytesReceived();
  return stats;
}

}  // namespace dasp::net
