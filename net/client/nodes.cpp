// SPDX-License-Identifier: MIT
#include "net/client/nodes.h"

#include "core/common/durations.h"
#include "core/params/gradient_backlog.h"
#include "core/params/parameter_store.h"
#include "core/params/update_record.h"
#include "core/policy/sync_policy.h"
#include "core/spec/spec.h"
#include "core/spec/speed_profile.h"
#include "net/client/link_emulation.h"
#include "net/client/node_support.h"
#include "net/client/ps_client.h"
#include "net/client/recovery_line.h"
#include "net/client/sharded_link.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <thread>

namespace dasp::net {

// The helpers both node loops use (node_support.h).
using namespace node_support;

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
  std::shared_ptr<PsClient> joined;
  const LocalTransport transport = role == "worker" ? options.transport : LocalTransport::Tcp;
  do {
    for (const auto& address : servers) {
      auto client = std::make_shared<PsClient>(address, options.parameters, options.security, transport);
      WorkerOptions single = options;
      single.server = address;
      const double left = std::max(0.2, options.connectTimeoutS - secondsSince(started));
      single.connectTimeoutS = servers.size() > 1 ? 0.0 : left;
      status = withRetry(single, "join", stats, [&] { return client->join(request, reply, 10.0); });
      if (status.ok()) {
        joined = std::move(client);
        break;
      }
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
  if (role != "probe" && reply.shard_addresses_size() > 0) {
    // A sharded server: join every other shard too; the node goes on over all of them.
    auto link = ShardedLink::join(joined, request, reply, options.security, transport,
                                  std::max(1.0, options.connectTimeoutS));
    if (!link) return Status::error(options.name + ": " + link.message());
    say(options, options.name + ": joined " + std::to_string(link.value()->layout().shards()) + " shards as rank " +
                     std::to_string(reply.rank()) + " over " + link.value()->describeTransports());
    info.client = std::move(link).value();
    info.sharded = true;
    return info;
  }
  if (role == "worker") {
    const std::string& fallback = joined->transportFallback();
    say(options, options.name + ": joined as rank " + std::to_string(reply.rank()) + " over " +
                     nameOf(joined->transport()) + (joined->onPayloadSocket() ? " (push and pull on its payload socket)" : "") +
                     (fallback.empty() ? "" : " (not shared memory: " + fallback + ")"));
    info.client = std::move(joined);
  }
  return info;
}

namespace {

// One worker's loop: pull, compute (at the node's emulated speed), push; through a server
// outage it reconnects (to the next replica of a chain) and, under stateless recovery,
// keeps computing on its last parameters into a bounded backlog that it flushes to the
// server it finds; under local recovery it trains its own copy of them instead (local SGD
// steps), which it offers the server it finds. Threading: one worker thread.
class WorkerLoop {
 public:
  WorkerLoop(const WorkerOptions& options, const JoinInfo& join, GradientSource& source);
  Result<NodeStats> run();

 private:
  // Computes one gradient on `p` into `out` and emulates the node's speed.
  struct Step {
    double loss = 0, computeS = 0, emulatedS = 0;
    bool overrun = false;
  };
  Result<Step> compute(const float* p, float* out, double slowdown);
  // The batch of this pull's iteration: the server's batch_size, or under a compute budget
  // what fits in it at this iteration's speed (after m_profile.beginIteration()).
  int batchForPull() const;
  // The run's server time now, as the node reckons it from its join.
  double serverNow() const { return m_join.serverTimeAtJoin + secondsSince(m_joinedAt); }
  // The outage loop: find the server (the head, in a chain), rejoin, flush the backlog.
  // `inFlight`: a computed gradient whose push was not acknowledged.
  Status recover(const grpc::Status& why, bool inFlight);
  pb::JoinRequest rejoinRequest() const;
  Status flushBacklog(double outageS);
  // A plain pull; a pull that times out while parked is simply asked again; an outage is
  // recovered from and the pull asked of the server found.
  grpc::Status pullNext();
  // A call that ran past its deadline (recovery.call_timeout_s): a hung server or a cut
  // link, not a dead server. The first one of a stall is reported as an outage
  // ("dasp-recovery outage_detected"), the next answer ends it ("… reconnected …");
  // `inFlight`: the call carried a push, which is never sent again (applied or not): it is
  // counted as discarded.
  void noteStall(const grpc::Status& why, bool inFlight);
  void endStall();
  void keepParameters();
  // Recovery LOCAL: one SGD step of the worker's own copy (made from its last parameters
  // at the first step of an outage) with `gradient`; a non-finite one is skipped.
  void localStep(const float* gradient);
  // One iteration after a pull: false when the loop ends (stop, or `m_result` says why).
  bool iterate(grpc::Status& status);
  // After a push: a refused gradient was not applied; the worker says so, counts it and
  // goes on from fresh parameters (true), unless the push was malformed, its own fatal
  // error (false, `m_result` says why).
  bool onRefused(pb::PushRefusal::Reason reason, grpc::Status& status);

  const WorkerOptions& m_options;
  const JoinInfo& m_join;
  GradientSource& m_source;
  const std::vector<std::string> m_servers;
  std::size_t m_current = 0;
  std::shared_ptr<ServerLink> m_client;
  NodeStats m_stats;
  const Clock::time_point m_joinedAt = Clock::now();
  v1::NodeSpec m_node;
  SpeedProfile m_profile;
  double m_realPerSampleS = -1;  // the last real compute time per sample; < 0: none yet
  LinkEmulation m_link;
  std::size_t m_modelBytes;
  double m_pullTimeout;
  double m_pushTimeout;
  const v1::RecoverySpec& m_recovery;
  bool m_stateless;
  bool m_local;  // trains its own copy through an outage (LOCAL, CHAIN with local_copies)
  std::size_t m_parameterCount;

  std::vector<float> m_gradient;
  // Where this iteration's gradient is: the region's gradient slot when the client offers
  // it (shared memory: no copy when it is pushed), else m_gradient.
  float* m_gradientAt = nullptr;
  pb::PullRequest m_pullRequest;
  pb::PullReply m_pullReply;
  pb::PushRequest m_pushRequest;  // reused: its gradient buffer keeps its capacity
  pb::PushReply m_pushReply;
  double m_prevPushS = 0;
  double m_pullS = 0;
  const float* m_params = nullptr;
  // Stateless: the last parameters and their version, kept to compute on during an outage.
  std::vector<float> m_lastParams;
  std::int64_t m_lastVersion = -1;
  Backlog m_backlog;
  // Local: the worker's own copy through an outage (with its momentum), and its steps.
  std::unique_ptr<ParameterStore> m_localCopy;
  std::int64_t m_localSteps = 0;
  std::optional<Clock::time_point> m_stallStart;
  std::int64_t m_stallUnanswered = 0;
  std::optional<Status> m_result;  // set when iterate() ends the loop with an error
  // Acknowledgements: the highest version the current server vouched for (PullReply /
  // PushReply acked_version; -1 before its first), reported when it fails; and whether the
  // gradient at m_gradientAt was pushed and awaits its acknowledgement (the push reply, or
  // for a chunked push the pull after it).
  std::int64_t m_ackedVersion = -1;
  bool m_awaitingAck = false;
  std::unique_ptr<UpdateRecordWriter> m_record;  // options.recordPath (null: none)
  void noteAck(std::int64_t vouched, bool pushAcknowledged);
};

v1::NodeSpec nodeOf(const JoinInfo& join) {
  const auto workers = expandWorkers(join.spec);
  return join.rank < static_cast<int>(workers.size()) ? workers[static_cast<std::size_t>(join.rank)] : v1::NodeSpec();
}

WorkerLoop::WorkerLoop(const WorkerOptions& options, const JoinInfo& join, GradientSource& source)
    : m_options(options),
      m_join(join),
      m_source(source),
      m_servers(serverList(options)),
      m_client(join.client ? join.client
                           : std::shared_ptr<ServerLink>(
                                 std::make_shared<PsClient>(m_servers[0], options.parameters, options.security))),
      m_node(nodeOf(join)),
      m_profile(m_node, join.spec.seed() * 7919 + static_cast<std::uint64_t>(join.rank)),
      // The spec's link of this worker (if any), emulated here in the sender: every push
      // waits before it leaves and every pull after it arrives, so both show as transfer time.
      m_link(LinkEmulation::of(effectiveLink(m_node, join.spec))),
      m_modelBytes(static_cast<std::size_t>(source.parameterCount()) * sizeof(float)),
      // Pull waits can be long under synchronous rules; a pull that times out is retried.
      m_pullTimeout(callTimeoutS(join.spec)),
      m_pushTimeout(join.spec.recovery().has_call_timeout_s() ? callTimeoutS(join.spec) : 60.0),
      m_recovery(join.spec.recovery()),
      m_stateless(m_recovery.mode() == v1::RecoverySpec::STATELESS),
      m_local(trainsLocalCopies(m_recovery)),
      m_parameterCount(static_cast<std::size_t>(source.parameterCount())),
      m_gradient(m_parameterCount),
      m_gradientAt(m_gradient.data()),
      m_backlog(static_cast<std::size_t>(m_recovery.backlog_max_gradients()), m_recovery.backlog_max_mb() * 1e6,
                m_parameterCount) {
  m_pullRequest.set_rank(join.rank);
  m_pullRequest.set_min_version(-1);
  m_pushRequest.set_rank(join.rank);
  if (!options.recordPath.empty()) {
    auto opened = UpdateRecordWriter::open(options.recordPath);
    if (opened) {
      m_record = std::move(opened).value();
    } else {
      say(options, options.name + ": " + opened.message() + "; not recording");
    }
  }
}

// A reply vouched for `vouched`; `pushAcknowledged`: it also acknowledged the push of
// m_gradientAt (else its fate is unknown: recorded as in flight).
void WorkerLoop::noteAck(std::int64_t vouched, bool pushAcknowledged) {
  m_ackedVersion = std::max(m_ackedVersion, vouched);
  if (!m_awaitingAck) return;
  m_awaitingAck = false;
  if (!m_record) return;
  const auto kind = pushAcknowledged ? UpdateRecordKind::Acked : UpdateRecordKind::InFlight;
  const std::int64_t version = pushAcknowledged ? vouched : m_pushRequest.base_version();
  if (auto st = m_record->write(kind, version, 0, m_gradientAt, m_parameterCount); !st) {
    say(m_options, m_options.name + ": " + st.message() + "; recording stops");
    m_record.reset();
  }
}

int WorkerLoop::batchForPull() const {
  // The server may size this node's batch (DASP's ADAPTIVE rule); 0 = the spec's.
  const int batch = m_pullReply.batch_size() > 0 ? m_pullReply.batch_size() : m_join.spec.batch_size();
  const ComputeBudget budget{m_pullReply.compute_budget_s(), m_pullReply.budget_granularity(),
                             m_pullReply.budget_max_batch()};
  if (!(budget.seconds > 0)) return batch;
  // The node computes micro-batches until the budget is spent. Its emulated speed is known
  // before it starts, and the real compute of a sample is at least what it was last time
  // (a node without an emulated base has only that).
  const double serverT = serverNow();
  const double perSample = std::max(
      m_profile.perSampleSeconds(serverT, m_pullReply.slowdown(), m_join.spec.batch_size(), m_realPerSampleS),
      m_realPerSampleS);
  return perSample > 0 ? anytimeBatch(budget, perSample) : batch;
}

Result<WorkerLoop::Step> WorkerLoop::compute(const float* p, float* out, double slowdown) {
  const auto computeStart = Clock::now();
  auto loss = m_source.computeGradient(p, out);
  if (!loss) return Status::error(m_options.name + ": " + loss.message());
  Step step;
  step.loss = loss.value();
  step.computeS = secondsSince(computeStart);
  const double serverT = serverNow();
  const double batchFactor = static_cast<double>(m_source.batchSize()) / static_cast<double>(m_join.spec.batch_size());
  const double target = m_profile.targetSeconds(step.computeS, serverT, slowdown, batchFactor);
  if (target > step.computeS) {
    // Emulated slowness: the node really takes this long, as a slower machine would.
    std::this_thread::sleep_for(SpeedProfile::restOfIteration(target, step.computeS));
    step.emulatedS = secondsSince(computeStart) - step.computeS;
  } else if (target < step.computeS * 0.999 && m_node.speed().base_iteration_ms() > 0) {
    ++m_stats.overruns;
    step.overrun = true;
  }
  return step;
}

pb::JoinRequest WorkerLoop::rejoinRequest() const {
  pb::JoinRequest request;
  request.set_role("worker");
  request.set_name(m_options.name);
  request.set_model(m_options.model);
  request.set_parameter_count(m_options.parameters);
  request.set_requested_rank(m_join.rank);
  request.set_rejoin(true);
  if ((m_stateless || m_local) && m_lastVersion >= 0) {
    const float* held = m_localCopy ? m_localCopy->parameters() : m_lastParams.data();
    request.set_held_version(m_lastVersion);
    request.mutable_held_parameters()->assign(reinterpret_cast<const char*>(held), m_parameterCount * sizeof(float));
    if (m_local) request.set_local_steps(m_localSteps);
  }
  return request;
}

void WorkerLoop::localStep(const float* gradient) {
  if (!allFinite(gradient, static_cast<std::int64_t>(m_parameterCount))) return;
  const auto& opt = m_join.spec.optimizer();
  if (!m_localCopy) {
    // Momentum from zero: the server's stayed with the server.
    m_localCopy = std::make_unique<ParameterStore>(m_lastParams, opt.momentum(), opt.weight_decay());
    m_localSteps = 0;
  }
  // The step the server gives one gradient of this batch (the weight a DASP share has).
  const double weight = static_cast<double>(m_source.batchSize()) / static_cast<double>(m_join.spec.batch_size());
  m_localCopy->apply(&gradient, &weight, 1, learningRateAt(opt, m_lastVersion + m_localSteps));
  ++m_localSteps;
}

// Flush the backlog: the server applies it in one step when the last one arrives.
Status WorkerLoop::flushBacklog(double outageS) {
  const std::size_t total = m_backlog.size();
  const double now = secondsSince(m_joinedAt);
  for (std::size_t b = 0; b < total; ++b) {
    const auto& item = m_backlog.at(b);
    m_pushRequest.set_base_version(item.baseVersion);
    m_pushRequest.set_compute_s(0);
    m_pushRequest.set_emulated_s(0);
    m_pushRequest.set_overrun(false);
    m_pushRequest.set_batch_size(m_source.batchSize());
    m_pushRequest.set_backlog_total(static_cast<int>(total));
    m_pushRequest.set_backlog_index(static_cast<int>(b));
    m_pushRequest.set_backlog_age_s(now - m_backlog.at(0).computedAt);
    m_pushRequest.set_backlog_dropped(m_backlog.dropped());
    m_pushRequest.set_backlog_outage_s(outageS);
    m_pushReply.Clear();
    auto pushed = m_client->pushGradient(m_pushRequest, item.gradient.data(), m_pushReply, m_pushTimeout);
    if (!pushed.ok()) {
      m_pushRequest.set_backlog_total(0);
      return Status::error(m_options.name + ": flushing the backlog failed: " + describe(pushed));
    }
  }
  m_pushRequest.set_backlog_total(0);
  m_pushRequest.set_backlog_index(0);
  return Status::ok();
}

Status WorkerLoop::recover(const grpc::Status& why, bool inFlight) {
  ++m_stats.outages;
  const auto outageStart = Clock::now();
  recoveryLine(m_options, outageReport(m_options, m_servers[m_current], why, m_ackedVersion));
  noteAck(-1, false);  // a push the failed server never acknowledged
  m_ackedVersion = -1;  // the next server vouches afresh
  RecoveryReport done;
  done.kind = RecoveryReport::Kind::Reconnected;
  done.node = m_options.name;
  if (inFlight) {
    if (m_stateless && m_lastVersion >= 0) {
      std::copy(m_gradientAt, m_gradientAt + m_parameterCount, m_backlog.next());
      m_backlog.commit(m_lastVersion, secondsSince(m_joinedAt));
      done.inFlightKept = 1;
    } else if (m_local && m_lastVersion >= 0) {
      localStep(m_gradientAt);  // computed on m_lastParams: the copy's first step
      done.inFlightKept = 1;
    } else {
      done.discarded = 1;
    }
  }
  // The work so far, about once a second and once more at the reconnection, so that the
  // lanes show it (the modes that only wait have none to show).
  const bool works = (m_stateless || m_local) && m_lastVersion >= 0;
  auto lastProgress = outageStart;
  auto progress = [&](bool last) {
    const double periodS = secondsSince(lastProgress);
    if (!works || periodS <= 0 || (!last && periodS < 1.0)) return;
    RecoveryReport r;
    r.kind = RecoveryReport::Kind::OutageProgress;
    r.node = m_options.name;
    r.server = m_servers[m_current];
    r.outageS = secondsSince(outageStart);
    r.periodS = periodS;
    r.computed = done.computed + done.inFlightKept;
    recoveryLine(m_options, r);
    lastProgress = Clock::now();
  };
  double backoff = 0.1;
  while (true) {
    if (cancelled(m_options)) return Status::error(m_options.name + ": cancelled during a server outage");
    if (secondsSince(outageStart) > m_recovery.reconnect_timeout_s()) {
      std::string all;
      for (const auto& a : m_servers) all += (all.empty() ? "" : ", ") + a;
      return Status::error(m_options.name + ": no server answered at " + all + " for " +
                           std::to_string(static_cast<int>(m_recovery.reconnect_timeout_s())) +
                           " s (recovery.reconnect_timeout_s); last error: " + describe(why));
    }
    if (m_stateless && m_lastVersion >= 0) {
      // Keep computing on the last parameters, as the stateless server's workers do.
      m_profile.beginIteration();
      auto step = compute(m_lastParams.data(), m_backlog.next(), m_pullReply.slowdown());
      if (!step) return step.status();
      m_backlog.commit(m_lastVersion, secondsSince(m_joinedAt));
      ++done.computed;
    } else if (m_local && m_lastVersion >= 0 && m_localSteps < m_recovery.local_max_steps()) {
      // Keep training: a local SGD step of the worker's own copy.
      m_profile.beginIteration();
      const float* copy = m_localCopy ? m_localCopy->parameters() : m_lastParams.data();
      auto step = compute(copy, m_gradient.data(), m_pullReply.slowdown());
      if (!step) return step.status();
      localStep(m_gradient.data());
      ++done.computed;
    } else {
      std::this_thread::sleep_for(durationFromSeconds(backoff));
      backoff = std::min(backoff * 1.5, 0.5);
    }
    progress(false);
    const pb::JoinRequest request = rejoinRequest();
    for (std::size_t k = 0; k < m_servers.size(); ++k) {
      const std::size_t i = (m_current + k) % m_servers.size();
      auto candidate = std::make_shared<PsClient>(m_servers[i], m_options.parameters, m_options.security,
                                                  m_options.transport);
      pb::JoinReply reply;
      // A restarted stateless server answers once it has adopted parameters (seconds).
      auto status = candidate->join(request, reply, m_stateless || m_local ? 15.0 : 5.0);
      if (!status.ok()) continue;
      progress(true);  // to the server that was down, as every line before it
      m_current = i;
      if (reply.shard_addresses_size() > 0) {
        // A restarted sharded server: every shard is joined again (their calls start over).
        auto link = ShardedLink::join(candidate, request, reply, m_options.security, m_options.transport, 5.0);
        if (!link) continue;
        m_client = std::move(link).value();
      } else {
        m_client = std::move(candidate);
      }
      m_gradientAt = m_gradient.data();  // not the old client's slot
      const double outageS = secondsSince(outageStart);
      const std::size_t total = m_backlog.size();
      if (auto st = flushBacklog(outageS); !st) return st;
      done.server = m_servers[m_current];
      done.outageS = outageS;
      done.dropped = m_backlog.dropped();
      done.flushed = static_cast<std::int64_t>(total);
      recoveryLine(m_options, done);
      m_backlog.clear();
      m_localCopy.reset();  // the server took the copy (adopted or merged)
      m_localSteps = 0;
      return Status::ok();
    }
  }
}

void WorkerLoop::noteStall(const grpc::Status& why, bool inFlight) {
  if (inFlight) ++m_stallUnanswered;
  if (m_stallStart) return;
  m_stallStart = Clock::now();
  ++m_stats.outages;
  RecoveryReport report = outageReport(m_options, m_servers[m_current], why, m_ackedVersion);
  report.stalled = true;
  recoveryLine(m_options, report);
}

void WorkerLoop::endStall() {
  if (!m_stallStart) return;
  RecoveryReport done;
  done.kind = RecoveryReport::Kind::Reconnected;
  done.node = m_options.name;
  done.server = m_servers[m_current];
  done.outageS = secondsSince(*m_stallStart);
  done.discarded = m_stallUnanswered;
  done.stalled = true;
  recoveryLine(m_options, done);
  m_stallStart.reset();
  m_stallUnanswered = 0;
}

grpc::Status WorkerLoop::pullNext() {
  while (true) {
    const auto pullStart = Clock::now();
    grpc::Status r;
    do {
      m_pullReply.Clear();
      r = m_client->pullParameters(m_pullRequest, m_pullReply, m_params, m_pullTimeout);
      if (r.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) noteStall(r, false);
    } while (r.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled(m_options));
    if (r.ok()) {
      m_link.hold(m_modelBytes);
      // A pull after a chunked push acknowledges it (it waits for the chain as a push-pull does).
      noteAck(m_pullReply.acked_version(), !m_pullReply.stop());
      endStall();
    }
    m_pullS = std::max(0.0, secondsSince(pullStart) - m_pullReply.wait_s());
    if (!isOutage(r) || cancelled(m_options)) return r;
    if (auto st = recover(r, false); !st) return grpc::Status(grpc::StatusCode::UNAVAILABLE, st.message());
  }
}

void WorkerLoop::keepParameters() {
  if (!(m_stateless || m_local) || m_params == nullptr) return;
  m_lastParams.assign(m_params, m_params + m_parameterCount);
  m_lastVersion = m_pullReply.version();
}

bool WorkerLoop::iterate(grpc::Status& status) {
  auto fail = [&](Status st) {
    m_result = std::move(st);
    return false;
  };
  if (!status.ok()) return fail(Status::error(m_options.name + ": pull failed: " + describe(status)));
  if (auto note = m_client->takeTransportNote(); !note.empty()) say(m_options, m_options.name + ": " + note);
  if (m_pullReply.stop()) return false;
  if (m_params == nullptr) {
    return fail(Status::error(m_options.name + ": server sent parameters of the wrong size (expected " +
                              std::to_string(m_source.parameterCount()) + " floats)"));
  }
  keepParameters();
  m_profile.beginIteration();
  const int batch = batchForPull();
  if (batch != m_source.batchSize() && !m_source.setBatchSize(batch)) {
    return fail(Status::error(m_options.name + ": cannot compute the batch of " + std::to_string(batch) +
                              " samples the server asked for (pull reply batch_size)"));
  }
  m_gradientAt = m_client->gradientSlot();
  if (m_gradientAt == nullptr) m_gradientAt = m_gradient.data();
  auto step = compute(m_params, m_gradientAt, m_pullReply.slowdown());
  if (!step) return fail(step.status());
  m_stats.computeS += step->computeS;
  m_realPerSampleS = step->computeS / static_cast<double>(std::max(1, m_source.batchSize()));
  m_pushRequest.set_base_version(m_pullReply.version());
  m_pushRequest.set_compute_s(step->computeS);
  m_pushRequest.set_emulated_s(step->emulatedS);
  m_pushRequest.set_overrun(step->overrun);
  m_pushRequest.set_train_loss(step->loss);
  m_pushRequest.set_batch_size(m_source.batchSize());
  m_pushRequest.set_pull_s(m_pullS);
  m_pushRequest.set_prev_push_s(m_prevPushS);
  m_link.hold(m_modelBytes);  // the push on the wire; the server sees it arrive this much later
  const auto pushStart = Clock::now();
  m_awaitingAck = true;
  if (!m_client->chunked()) {
    // One call pushes and brings the next parameters; its transfer time (both ways) is
    // reported as the next iteration's pull.
    m_pullReply.Clear();
    status = m_client->pushPull(m_pushRequest, m_gradientAt, m_pullReply, m_params, m_pullTimeout);
    m_stats.pushPullS += secondsSince(pushStart);
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      // The push was handled, or the server is hung (paused) or the link cut; only the
      // answer did not come in time: pull again, never re-push.
      noteStall(status, true);
      ++m_stats.iterations;
      status = pullNext();
      return true;
    }
    if (isOutage(status) && !cancelled(m_options)) {
      if (auto st = recover(status, true); !st) return fail(st);
      status = pullNext();
      return true;
    }
    if (auto reason = pushRefusalOf(status)) return onRefused(*reason, status);
    if (!status.ok()) return fail(Status::error(m_options.name + ": push failed: " + describe(status)));
    // A reply with stop may answer a push the stopping server dropped: not an acknowledgement.
    noteAck(m_pullReply.acked_version(), !m_pullReply.stop());
    ++m_stats.iterations;
    m_link.hold(m_modelBytes);  // the parameters coming back
    m_pullS = std::max(0.0, secondsSince(pushStart) - m_pullReply.wait_s());
    m_prevPushS = 0;
    return true;
  }
  m_pushReply.Clear();
  status = m_client->pushGradient(m_pushRequest, m_gradientAt, m_pushReply, m_pushTimeout);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled(m_options)) {
    noteStall(status, true);  // as for pushPull above: never re-pushed
    ++m_stats.iterations;
    status = pullNext();
    return true;
  }
  if (isOutage(status) && !cancelled(m_options)) {
    if (auto st = recover(status, true); !st) return fail(st);
    status = pullNext();
    return true;
  }
  if (auto reason = pushRefusalOf(status)) return onRefused(*reason, status);
  if (!status.ok()) return fail(Status::error(m_options.name + ": push failed: " + describe(status)));
  m_prevPushS = secondsSince(pushStart);
  ++m_stats.iterations;
  m_ackedVersion = std::max(m_ackedVersion, m_pushReply.acked_version());
  if (m_pushReply.stop()) return false;
  status = pullNext();
  return true;
}

bool WorkerLoop::onRefused(pb::PushRefusal::Reason reason, grpc::Status& status) {
  if (reason == pb::PushRefusal::MALFORMED) {
    m_result = Status::error(m_options.name + ": the server refused its push as malformed: " + describe(status));
    return false;
  }
  ++m_stats.refused;
  // The first few and then every hundredth: a diverging model is refused on every push
  // until the runner ends the run.
  if (m_stats.refused <= 3 || m_stats.refused % 100 == 0) {
    say(m_options, m_options.name + ": push " + std::to_string(m_stats.refused) + " refused, not applied (" +
                       describe(status) + "); going on from fresh parameters");
  }
  m_prevPushS = 0;
  status = pullNext();
  return true;
}

Result<NodeStats> WorkerLoop::run() {
  auto status = pullNext();
  while (!cancelled(m_options) && iterate(status)) {
  }
  if (m_result) return *m_result;
  m_stats.bytesSent = m_client->bytesSent();
  m_stats.bytesReceived = m_client->bytesReceived();
  return m_stats;
}

}  // namespace

Result<NodeStats> runWorker(const WorkerOptions& options, const JoinInfo& join, GradientSource& source) {
  WorkerLoop loop(options, join, source);
  return loop.run();
}

}  // namespace dasp::net
