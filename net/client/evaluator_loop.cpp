// SPDX-License-Identifier: MIT
// The evaluator's loop (runEvaluator, nodes.h): it pulls on the evaluation schedule,
// evaluates and reports, and through an outage tries every server in chain order.
#include "core/common/evaluation_schedule.h"
#include "net/client/node_support.h"
#include "net/client/nodes.h"
#include "net/client/ps_client.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace dasp::net {

// The helpers both node loops use (node_support.h).
using namespace node_support;

namespace {

// How far ahead of each scheduled fault the evaluator takes an evaluation (evaluationWaitS).
constexpr double kEvaluateBeforeFaultS = 0.5;

// The run times of the spec's faults, ascending.
std::vector<double> faultTimesOf(const ExperimentSpec& spec) {
  std::vector<double> times;
  for (const auto& f : spec.faults()) times.push_back(f.at_s());
  std::sort(times.begin(), times.end());
  return times;
}

// The evaluator's link to the server at `address`; a sharded server's shards are all
// joined again (null when that fails: a restarted one may not answer yet).
std::shared_ptr<ServerLink> evaluatorLink(const WorkerOptions& options, const std::string& address, bool sharded) {
  if (!sharded) return std::make_shared<PsClient>(address, options.parameters, options.security);
  WorkerOptions again = options;
  again.connectTimeoutS = 0;
  auto joined = joinServer(again, "evaluator");
  return joined ? joined->client : nullptr;
}

}  // namespace

Result<NodeStats> runEvaluator(const WorkerOptions& options, const JoinInfo& join, ParameterEvaluator& evaluator,
                               ParameterEvaluator& finalEvaluator) {
  const auto servers = serverList(options);
  std::size_t current = 0;
  // A sharded server's evaluator pulls every range (its join made the link); else shard 0's.
  std::shared_ptr<ServerLink> client = join.client ? join.client : evaluatorLink(options, servers[current], false);
  NodeStats stats;
  const auto& eval = join.spec.evaluation();
  const std::int64_t everyVersions = eval.every_steps() > 0 ? eval.every_steps() : 0;
  const double everyS = eval.every_s() > 0 ? eval.every_s() : 0;
  const double reconnectTimeoutS = join.spec.recovery().reconnect_timeout_s();
  std::int64_t lastVersion = -1;
  std::uint64_t lastIncarnation = 0;
  bool stop = false;
  const std::vector<double> faultTimes = faultTimesOf(join.spec);
  // The server's run time, anchored at each pull's answer (it stands at 0 until every
  // worker has joined).
  double anchorT = join.serverTimeAtJoin;
  auto anchoredAt = Clock::now();
  // The longest evaluation so far: how long the next one may take (their times vary with
  // the load, and one still running at a fault's moment would miss it).
  double longestEvalS = 0;
  // An evaluation whose server went away before it was reported (one taken just before a
  // kill): reported to the next server, at the time of its version.
  std::optional<pb::EvaluationReport> unreported;
  // A pull that survives outages: on one, every server is tried in chain order until one
  // answers (a restarted server may hold an older version: the schedule starts over).
  auto pull = [&](pb::PullRequest& request, pb::PullReply& reply, const float*& params, double timeout) {
    auto status = client->pullParameters(request, reply, params, timeout);
    if (!isOutage(status) || cancelled(options)) return status;
    ++stats.outages;
    const auto outageStart = Clock::now();
    recoveryLine(options, outageReport(options, servers[current], status, -1));
    request.set_min_version(0);
    while (!cancelled(options) && secondsSince(outageStart) < reconnectTimeoutS) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (std::size_t k = 0; k < servers.size(); ++k) {
        const std::size_t i = (current + k) % servers.size();
        auto candidate = evaluatorLink(options, servers[i], join.sharded);
        if (!candidate) continue;
        reply.Clear();
        status = candidate->pullParameters(request, reply, params, 5.0);
        if (!isOutage(status)) {
          current = i;
          client = std::move(candidate);
          lastVersion = -1;
          RecoveryReport done;
          done.kind = RecoveryReport::Kind::Reconnected;
          done.node = options.name;
          done.server = servers[current];
          done.outageS = secondsSince(outageStart);
          recoveryLine(options, done);
          return status;
        }
      }
    }
    return status;
  };
  while (!cancelled(options) && !stop) {
    pb::PullRequest request;
    request.set_rank(-1);
    // Wait for enough new versions (every_steps 0: by time only, no count is enough), but
    // no longer than every_s (then take what there is).
    const std::int64_t due = everyVersions > 0 ? lastVersion + everyVersions : std::numeric_limits<std::int64_t>::max();
    request.set_min_version(lastVersion < 0 ? 0 : due);
    pb::PullReply reply;
    const double timeout = evaluationWaitS(anchorT + secondsSince(anchoredAt), everyS > 0 ? everyS : 60.0,
                                           1.25 * longestEvalS, faultTimes, kEvaluateBeforeFaultS);
    const float* params = nullptr;
    auto status = pull(request, reply, params, timeout);
    // No new version in time: take the current one; a server that does not answer that
    // either is hung (paused) or its link slow, not gone: ask again until it does.
    for (double wait = 30.0; status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled(options);
         wait = callTimeoutS(join.spec)) {
      request.set_min_version(0);
      reply.Clear();
      status = pull(request, reply, params, wait);
    }
    if (!status.ok()) return Status::error(options.name + ": pull failed: " + describe(status));
    anchorT = reply.server_t_s();
    anchoredAt = Clock::now();
    if (unreported) {
      pb::ReportReply kept;
      if (client->report(*unreported, kept, 30.0).ok()) unreported.reset();
    }
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
    const double evalS = secondsSince(t0);
    longestEvalS = std::max(longestEvalS, evalS);
    report.set_eval_s(evalS);
    pb::ReportReply reportReply;
    status = client->report(report, reportReply, 30.0);
    if (isOutage(status)) {
      // The server went away after the pull: the evaluation waits for the next one.
      say(options, options.name + ": evaluation of version " + std::to_string(reply.version()) +
                       " not reported yet (" + describe(status) + "): it goes to the server that answers next");
      unreported = std::move(report);
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
