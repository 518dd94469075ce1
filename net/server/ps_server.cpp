// SPDX-License-Identifier: MIT
// ParameterServer (net/server/ps_server.h): start, stop, shutdown, stats and the ticker thread.
// The gRPC service, ParameterServer::Impl, is declared in net/server/ps_server_impl.h and defined
// in net/ps_*.cpp (that header lists which file holds what, and the locking contract).
#include "net/server/ps_server.h"
#include "core/common/durations.h"

#include "net/server/ps_reactors.h"
#include "net/server/ps_server_impl.h"
#include "net/transport/payload_options.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

namespace dasp::net {
// --- time-driven decisions ------------------------------------------------------------
double ParameterServer::Impl::nextTickLocked(double t) const {
  double next = policy->nextDeadline();
  if (adopting) next = std::min(next, adoptDeadline);
  // A worker that has neither pushed nor pulled for `barrier_timeout_s` while others wait
  // is declared down, so bounded-staleness rules (whose minimum clock it holds) cannot
  // deadlock on a vanished node: checked every quarter of that silence.
  if (started && !parked.empty() && !stopping) {
    next = std::min(next, t + std::max(0.05, options.spec.strategy().barrier_timeout_s() / 4));
  }
  return next;
}

void ParameterServer::Impl::wakeTickerIfDueLocked() {
  if (nextTickLocked(now()) < tickerWakeAt) tickCv.notify_one();
}

void ParameterServer::Impl::tickLoop() {
  std::unique_lock<std::mutex> lock(mu);
  const double silence = options.spec.strategy().barrier_timeout_s();
  double lastTick = now();
  while (!shuttingDown) {
    double t = now();
    // A gap in this loop far beyond its wake-ups means the server itself was stopped
    // (SIGSTOP): the silence it would measure is its own, not the workers'.
    if (t - lastTick > std::max(2.0, silence / 2)) {
      for (auto& c : lastContact) c = std::max(c, t);
    }
    lastTick = t;
    if (adopting && t >= adoptDeadline) finishAdoptionLocked();
    // Due now only by the policy's or the adoption's deadline: the silence check's time in
    // nextTickLocked is always later than t.
    if (t >= nextTickLocked(t)) {
      out.clear();
      policy->onTick(t, out);
      applyOutputLocked(t);
      releaseParkedLocked(t);
      continue;
    }
    if (started && !parked.empty() && !stopping) {
      for (int r = 0; r < options.workers; ++r) {
        const auto i = static_cast<std::size_t>(r);
        const bool isParked = std::any_of(parked.begin(), parked.end(), [r](PendingPull* p) { return p->rank() == r; });
        if (joined[i] && !isParked && policy->state(r) != ParallelState::Down && t - lastContact[i] > silence) {
          markDownLocked(r, t, "silent for longer than strategy.barrier_timeout_s");
        }
      }
    }
    // At least once a second, so that the gap check above sees a SIGSTOP of the server.
    const double wait = std::max(std::min(nextTickLocked(t) - t, 1.0), 0.001);
    tickerWakeAt = t + wait;
    tickCv.wait_for(lock, durationFromSeconds(wait));
    tickerWakeAt = -std::numeric_limits<double>::infinity();
  }
}

ParameterServer::ParameterServer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

ParameterServer::~ParameterServer() { shutdown(0.5); }

Result<std::unique_ptr<ParameterServer>> ParameterServer::start(ServerOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.workers <= 0) return Status::error("server: needs at least one worker");
  if (auto st = checkToken(options.security.token, options.name); !st) return st;
  if (options.security.tls && options.security.tls->keyPem.empty()) {
    return Status::error(options.name + ": TLS needs the server's key (security.tls_key)");
  }
  if (options.layout.parameters() == 0) {
    options.layout.begin = {0, static_cast<std::int64_t>(options.initialParameters.size())};
  }
  const int shards = options.layout.shards();
  if (options.shard < 0 || options.shard >= shards ||
      options.layout.size(options.shard) != static_cast<std::int64_t>(options.initialParameters.size())) {
    return Status::error(options.name + ": shard " + std::to_string(options.shard) + " of " + std::to_string(shards) +
                         " does not own the " + std::to_string(options.initialParameters.size()) +
                         " parameters it was given");
  }
  if (shards > 1) {
    for (const auto& r : options.shardReplicas) {
      if (r.shard < 1 || r.shard >= shards || r.address.empty()) {
        return Status::error(options.name + ": a replica of shard " + std::to_string(r.shard) + " at '" + r.address +
                             "': only shards 1.." + std::to_string(shards - 1) + " have replicas");
      }
    }
    if (options.replica && options.shard == 0) {
      return Status::error(options.name + ": shard 0 of a sharded server has no replicas yet");
    }
    if (options.shard == 0 && static_cast<int>(options.shardAddresses.size()) != shards - 1) {
      return Status::error(options.name + ": shard 0 of " + std::to_string(shards) + " needs the addresses of the " +
                           std::to_string(shards - 1) + " other shards (got " +
                           std::to_string(options.shardAddresses.size()) + ")");
    }
  }
  auto policy = makePolicy(options.spec.strategy(), options.spec.batch_size());
  if (!policy) return policy.status();
  impl->policy = std::move(policy).value();
  const auto count = options.initialParameters.size();
  if (options.layout.shards() > 1) impl->initialRange = options.initialParameters;  // RESTORE of version 0
  impl->store = std::make_unique<ParameterStore>(std::move(options.initialParameters),
                                                 options.spec.optimizer().momentum(),
                                                 options.spec.optimizer().weight_decay());
  impl->store->setApplyThreads(ParameterStore::serverApplyThreads());
  const auto workers = static_cast<std::size_t>(options.workers);
  impl->held.assign(workers, std::vector<float>(count, 0.0f));
  impl->receiveBuffers.resize(workers);
  impl->regions.resize(workers);
  impl->doorbells.resize(workers);
  impl->gradientOf.assign(workers, nullptr);
  impl->slotHolds.assign(workers, {});
  for (std::size_t r = 0; r < workers; ++r) impl->gradientOf[r] = impl->held[r].data();
  impl->baseVersionOf.assign(workers, 0);
  impl->clippedOf.resize(workers);
  impl->pushStreaming.assign(workers, 0);
  impl->guard = std::make_unique<GradientGuard>(options.spec.strategy().gradient_guard());
  impl->joined.assign(workers, 0);
  impl->lastContact.assign(workers, 0.0);
  impl->lastWait.assign(workers, 0.0);
  impl->lastRelease.assign(workers, 0.0);
  impl->slowdownOverride.assign(workers, 0.0);
  impl->backlogSum.resize(workers);
  impl->backlogCount.assign(workers, 0);
  impl->backlogOldestBase.assign(workers, 0);
  impl->options = std::move(options);
  impl->incarnation = Impl::newIncarnation();
  auto& o = impl->options;

  // A resumed server's clock runs from the start (its recovery events carry run time).
  if (o.resumeAtS >= 0 && !o.replica) impl->setClock(o.resumeAtS);
  if (auto st = impl->restoreBeforeServing(); !st) return st;
  impl->policy->reset(o.workers, std::max(0.0, o.resumeAtS));
  impl->policy->setVersion(impl->store->version());  // a restored server's version
  if (impl->chainMode()) impl->setUpChain();
  if (auto st = impl->openCheckpoints(); !st) return st;
  if (auto st = impl->openRecord(); !st) return st;
  impl->recordStateLocked(UpdateRecordKind::Initial);

  grpc::ServerBuilder builder;
  const std::string address = hostPort(impl->options.bindAddress, impl->options.port);
  builder.AddListeningPort(address, serverCredentials(impl->options.security), &impl->port);
  // gRPC sets SO_REUSEPORT by default, which would let a second server share a busy port
  // silently; we want the clear "address in use" error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (auto st = impl->addLocalPort(builder); !st) return st;
  sizeServerForPayload(builder, impl->store->size());
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    impl->removeLocalFiles();
    return Status::error("server: cannot listen on " + address +
                         (impl->options.port != 0 ? " (port in use by another process?)" : ""));
  }
  if (auto st = impl->openPayloadSocket(); !st) {
    if (impl->options.payloadPort != 0) {  // a port asked for (launch.payload_port): a clear error
      impl->server->Shutdown();
      impl->removeLocalFiles();
      return Status::error(st.message() + (" (port in use by another process?)"));
    }
    impl->say(st.message() + "; workers push and pull through gRPC");
  }
  auto* raw = impl.get();
  impl->setUpShards();
  // Shards 1..S-1 decide nothing: shard 0's ticker drives the policy's time-based decisions.
  if (!impl->follower()) impl->ticker = std::thread([raw] { raw->tickLoop(); });
  if (impl->checkpoints) impl->checkpointWriter = std::thread([raw] { raw->writeCheckpoints(); });
  return std::unique_ptr<ParameterServer>(new ParameterServer(std::move(impl)));
}

int ParameterServer::port() const { return m_impl->port; }

void ParameterServer::requestStop() {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  m_impl->stopping = true;
  m_impl->releaseParkedLocked(m_impl->now());
  m_impl->stopCv.notify_all();
}

bool ParameterServer::stopRequested() const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  return m_impl->stopping;
}

void ParameterServer::waitForStop() {
  std::unique_lock<std::mutex> lock(m_impl->mu);
  m_impl->stopCv.wait(lock, [this] { return m_impl->stopping || m_impl->shuttingDown || m_impl->shardGone; });
}

void ParameterServer::shutdown(double graceSeconds) {
  if (!m_impl || !m_impl->server) return;
  std::unique_ptr<Replicator> replicator;
  std::vector<std::unique_ptr<ShardLogSender>> shardLogs;
  std::vector<std::unique_ptr<Impl::DoorbellServer>> doorbells;
  {
    std::lock_guard<std::mutex> lock(m_impl->mu);
    if (m_impl->shuttingDown) return;
    m_impl->stopping = true;
    m_impl->releaseParkedLocked(m_impl->now());
    for (auto* w : m_impl->watchers) w->finishLocked(grpc::Status::OK);
    for (auto& j : m_impl->parkedJoins) j.reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server shutting down"));
    m_impl->parkedJoins.clear();
    doorbells = m_impl->closeDoorbellsLocked();  // after the release: their pulls answered
    m_impl->shuttingDown = true;
    m_impl->tickCv.notify_all();
    m_impl->stopCv.notify_all();
    m_impl->checkpointCv.notify_all();
    replicator = std::move(m_impl->replicator);
    shardLogs = std::move(m_impl->shardLogs);  // after the release: its answers are logged
    // A shard's pulls shard 0 never released.
    m_impl->refuseParkedLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, m_impl->options.name + " is shutting down"));
  }
  // The replicator's and the shard logs' callbacks and the doorbells' threads take the
  // lock: stop them outside (a shard log writes what is queued and ends its stream).
  replicator.reset();
  shardLogs.clear();
  doorbells.clear();
  m_impl->closePayloadSocket(graceSeconds);
  if (m_impl->checkpointWriter.joinable()) m_impl->checkpointWriter.join();
  m_impl->server->Shutdown(deadlineIn<std::chrono::system_clock>(graceSeconds));
  if (m_impl->ticker.joinable()) m_impl->ticker.join();
  m_impl->removeLocalFiles();
  std::lock_guard<std::mutex> lock(m_impl->mu);
  m_impl->recordStateLocked(UpdateRecordKind::Final);
  m_impl->record.reset();
}

ServerStats ParameterServer::stats() const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  ServerStats s = m_impl->counters;
  s.version = m_impl->store->version();
  s.guardMaxRatio = m_impl->guard->maxAcceptedRatio();
  return s;
}

std::string ParameterServer::failure() const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  return m_impl->failure;
}

std::int64_t ParameterServer::snapshot(std::vector<float>& out) const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  out.assign(m_impl->store->parameters(), m_impl->store->parameters() + m_impl->store->size());
  return m_impl->store->version();
}

}  // namespace dasp::net

