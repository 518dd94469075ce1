// SPDX-License-Identifier: MIT
#include "net/ps_server.h"

#include "core/checkpoint.h"
#include "core/parameter_store.h"
#include "core/run_events.h"
#include "core/sync_policy.h"
#include "net/replicator.h"
#include "dasp/ps/v1/parameter_server.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>

namespace dasp::net {
namespace {

namespace pb = dasp::ps::v1;
using Clock = std::chrono::steady_clock;

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

// Chunk size of chunked pulls (a few MB: gRPC moves such messages several times faster
// than one message of a whole large model).
constexpr std::size_t kChunkBytes = 2u << 20;

// gRPC's default 4 MB limit is far below a model's parameters; allow the model plus
// headroom, at least 64 MB.
int messageLimit(std::int64_t parameters) {
  const std::int64_t bytes = parameters * 4 + (16 << 20);
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(bytes, 64 << 20),
                                                 std::numeric_limits<int>::max()));
}

// Streaming calls refused before they start (a missing or wrong run token): the reactor
// only finishes with the status and deletes itself when gRPC is done with it.
template <typename Message>
class RefusedWriter final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit RefusedWriter(grpc::Status status) { this->Finish(std::move(status)); }
  void OnDone() override { delete this; }
};
template <typename Message>
class RefusedReader final : public grpc::ServerReadReactor<Message> {
 public:
  explicit RefusedReader(grpc::Status status) { this->Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// REJECT events for refused calls: a burst of this many, then at most one per second
// (each says how many were refused meanwhile without an event).
constexpr double kRefusalBurst = 5;
constexpr double kRefusalsPerSecond = 1;

}  // namespace

struct ParameterServer::Impl final : pb::ParameterServer::CallbackService {
  // A parked (or about to be answered) pull, unary or chunked. Answered or cancelled
  // exactly once, under Impl::mu.
  class PendingPull {
   public:
    PendingPull(int rank, double arrivedAt, std::int64_t minVersion)
        : m_rank(rank), m_arrivedAt(arrivedAt), m_minVersion(minVersion) {}
    virtual ~PendingPull() = default;
    int rank() const { return m_rank; }
    double arrivedAt() const { return m_arrivedAt; }
    std::int64_t minVersion() const { return m_minVersion; }
    virtual pb::PullReply& header() = 0;
    virtual void setParameters(const float* params, std::size_t bytes) = 0;
    virtual void complete() = 0;   // the header (and parameters) are set: send
    virtual void abandon() = 0;    // finish with CANCELLED
    bool finished = false;         // guarded by Impl::mu
    // Chain with per-update forwarding: the policy has released this pull, which now waits
    // until the tail holds `ackVersion` (everything applied when it was released).
    bool cleared = false;
    std::int64_t ackVersion = 0;

   private:
    int m_rank;
    double m_arrivedAt;
    std::int64_t m_minVersion;
  };

  class PullReactor final : public grpc::ServerUnaryReactor, public PendingPull {
   public:
    PullReactor(Impl* impl, int rank, pb::PullReply* reply, double arrivedAt, std::int64_t minVersion)
        : PendingPull(rank, arrivedAt, minVersion), m_impl(impl), m_reply(reply) {}
    void OnCancel() override { m_impl->cancelPull(this); }
    void OnDone() override { delete this; }
    pb::PullReply& header() override { return *m_reply; }
    void setParameters(const float* params, std::size_t bytes) override {
      m_reply->mutable_parameters()->assign(reinterpret_cast<const char*>(params), bytes);
    }
    void complete() override { Finish(grpc::Status::OK); }
    void abandon() override { Finish(grpc::Status::CANCELLED); }

   private:
    Impl* m_impl;
    pb::PullReply* m_reply;
  };

  // A chunked pull: the parameters are copied once into the rank's send buffer when the
  // pull is answered (a consistent snapshot), then written in chunks.
  class PullStreamReactor final : public grpc::ServerWriteReactor<pb::PullChunk>, public PendingPull {
   public:
    PullStreamReactor(Impl* impl, int rank, double arrivedAt, std::int64_t minVersion)
        : PendingPull(rank, arrivedAt, minVersion), m_impl(impl) {}
    void OnCancel() override { m_impl->cancelPull(this); }
    void OnDone() override { delete this; }
    void OnWriteDone(bool ok) override {
      if (!ok) return;  // the call is cancelled or broken; OnDone follows
      writeNext();
    }
    pb::PullReply& header() override { return *m_chunk.mutable_header(); }
    void setParameters(const float* params, std::size_t bytes) override {
      m_buffer = &m_impl->sendBuffer(rank());
      m_buffer->resize(bytes);
      std::memcpy(m_buffer->data(), params, bytes);
    }
    void complete() override { writeNext(); }
    void abandon() override { Finish(grpc::Status::CANCELLED); }

   private:
    void writeNext() {
      const std::size_t total = m_buffer ? m_buffer->size() : 0;
      if (m_offset >= total && m_sentFirst) {
        Finish(grpc::Status::OK);
        return;
      }
      const std::size_t n = std::min(kChunkBytes, total - m_offset);
      if (m_sentFirst) m_chunk.clear_header();
      m_chunk.mutable_data()->assign(m_buffer ? m_buffer->data() + m_offset : nullptr, n);
      m_offset += n;
      m_sentFirst = true;
      StartWrite(&m_chunk);
    }
    Impl* m_impl;
    pb::PullChunk m_chunk;  // reused for every chunk: its buffer keeps its capacity
    std::vector<char>* m_buffer = nullptr;
    std::size_t m_offset = 0;
    bool m_sentFirst = false;
  };

  // A chunked push: chunks are gathered into the rank's receive buffer (allocated once),
  // then handled as one push.
  class PushStreamReactor final : public grpc::ServerReadReactor<pb::PushChunk> {
   public:
    PushStreamReactor(Impl* impl, pb::PushReply* reply) : m_impl(impl), m_reply(reply) { StartRead(&m_chunk); }
    void OnReadDone(bool ok) override {
      if (!ok) {  // the client has sent everything
        Finish(m_failed ? m_status : m_impl->handlePush(m_header, m_buffer, m_received, m_reply));
        return;
      }
      if (!m_failed) {
        if (m_chunk.has_header()) {
          m_header = m_chunk.header();
          const int r = m_header.rank();
          if (r < 0 || r >= m_impl->options.workers) {
            fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "push from unknown rank " + std::to_string(r)));
          } else {
            m_buffer = m_impl->receiveBuffer(r);
          }
        }
        const auto& data = m_chunk.data();
        if (!m_failed && m_buffer == nullptr) {
          fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunked push without a header"));
        } else if (!m_failed && m_received + data.size() > m_impl->gradientBytes()) {
          fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "gradient from worker " + std::to_string(m_header.rank()) + " has more than the model's " +
                                std::to_string(m_impl->store->size()) + " parameters"));
        } else if (!m_failed) {
          std::memcpy(reinterpret_cast<char*>(m_buffer) + m_received, data.data(), data.size());
          m_received += data.size();
        }
      }
      StartRead(&m_chunk);
    }
    void OnDone() override { delete this; }

   private:
    void fail(grpc::Status status) {
      m_failed = true;
      m_status = std::move(status);
    }
    Impl* m_impl;
    pb::PushReply* m_reply;
    pb::PushChunk m_chunk;
    pb::PushRequest m_header;
    float* m_buffer = nullptr;
    std::size_t m_received = 0;
    bool m_failed = false;
    grpc::Status m_status;
  };

  std::vector<char>& sendBuffer(int rank) { return sendBuffers[static_cast<std::size_t>(rank + 1)]; }
  float* receiveBuffer(int rank) {
    auto& b = receiveBuffers[static_cast<std::size_t>(rank)];
    if (b.empty()) b.resize(static_cast<std::size_t>(store->size()));
    return b.data();
  }
  std::vector<std::vector<char>> sendBuffers;      // per rank + 1 (evaluator): chunked pulls
  std::vector<std::vector<float>> receiveBuffers;  // per rank: chunked pushes

  // One Watch subscriber: events are appended under Impl::mu and written in batches, one
  // write in flight at a time.
  class WatchReactor final : public grpc::ServerWriteReactor<pb::EventBatch> {
   public:
    explicit WatchReactor(Impl* impl) : m_impl(impl) {}
    void OnWriteDone(bool ok) override {
      std::lock_guard<std::mutex> lock(m_impl->mu);
      writing = false;
      if (!ok) {
        finishLocked(grpc::Status::CANCELLED);
        return;
      }
      flushLocked();
    }
    void OnCancel() override {
      std::lock_guard<std::mutex> lock(m_impl->mu);
      finishLocked(grpc::Status::CANCELLED);
    }
    void OnDone() override {
      {
        std::lock_guard<std::mutex> lock(m_impl->mu);
        m_impl->watchers.erase(this);
      }
      delete this;
    }
    // Called with Impl::mu held.
    void flushLocked() {
      if (writing || done || pending.events_size() == 0) return;
      inFlight.Clear();
      inFlight.Swap(&pending);
      writing = true;
      StartWrite(&inFlight);
    }
    void finishLocked(const grpc::Status& status) {
      if (done) return;
      done = true;
      Finish(status);
    }
    pb::EventBatch pending;
    pb::EventBatch inFlight;
    bool writing = false;
    bool done = false;

   private:
    Impl* m_impl;
  };

  ServerOptions options;
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<SyncPolicy> policy;
  PolicyOutput out;
  Clock::time_point start = Clock::now();

  mutable std::mutex mu;
  std::condition_variable tickCv;
  std::condition_variable stopCv;
  bool stopping = false;
  bool shuttingDown = false;
  bool started = false;  // every worker joined: the run's clock runs
  std::vector<PendingPull*> parked;
  std::vector<std::vector<float>> held;      // per rank: a gradient the policy holds
  std::vector<const float*> gradientOf;      // per rank: where its current gradient lives
  std::vector<char> joined;
  std::vector<double> lastContact;           // per rank, server seconds
  std::vector<double> lastWait;              // per rank, the wait of its last pull
  std::vector<double> lastRelease;           // per rank, when its last pull was answered
  std::vector<double> slowdownOverride;      // per rank, 0 = none
  std::vector<double> versionTime{0.0};      // server time at which each version was made
  std::unordered_set<WatchReactor*> watchers;
  std::vector<const float*> applyPtrs;       // reused per update
  std::vector<double> applyWeights;
  ServerStats counters;

  std::unique_ptr<grpc::Server> server;
  std::thread ticker;
  int port = 0;

  // --- recovery -------------------------------------------------------------------------
  std::uint64_t incarnation = 0;             // changes on every (re)start and promotion
  bool clockRunning = false;                 // now() runs (a resumed server: from the start)
  std::atomic<bool> isHead{true};            // chain: false for replicas until promoted
  std::unique_ptr<Replicator> replicator;    // chain: the link to the successor
  std::int64_t replicatedVersion = -1;       // chain: the version the tail holds
  std::vector<float> combined;               // chain: Σ w·g of one update (reused)
  std::vector<std::vector<float>> backlogSum;  // stateless: per rank, the backlog being flushed
  std::vector<std::int64_t> backlogCount;
  std::vector<std::int64_t> backlogOldestBase;
  // Stateless restart: joins are answered once the parameters are adopted.
  struct ParkedJoin {
    grpc::ServerUnaryReactor* reactor;
    pb::JoinReply* reply;
  };
  std::vector<ParkedJoin> parkedJoins;
  bool adopting = false;
  double adoptDeadline = 0;                  // start anyway at this run time
  std::int64_t adoptedVersion = -1;
  std::string adoptedFrom;
  // Events while nobody watches (a restarted or promoted server before the runner has
  // re-subscribed), handed to the next watcher; bounded.
  pb::EventBatch unwatched;
  static constexpr int kUnwatchedMax = 50000;
  // Checkpoints: the writer thread writes the copy taken under `mu`.
  std::unique_ptr<CheckpointDirectory> checkpoints;
  std::thread checkpointWriter;
  std::condition_variable checkpointCv;
  bool checkpointDue = false;                // a copy waits for the writer
  std::vector<float> checkpointParams, checkpointMomentum;
  std::int64_t checkpointVersion = 0;
  double checkpointT = 0;
  std::int64_t lastCheckpointVersion = 0;
  double lastCheckpointT = 0;

  double sinceStart() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  // Run time: 0 until every worker has joined (so nothing before the start, such as join
  // events or the evaluator's first report, carries start-up time), then seconds since.
  // A resumed server continues the run's clock from the moment it starts.
  double now() const { return started || clockRunning ? sinceStart() : 0.0; }
  void setClock(double t) {
    start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
    clockRunning = true;
  }
  void say(const std::string& text) const {
    if (options.log) options.log(options.name + ": " + text);
  }
  static std::uint64_t newIncarnation() {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  }
  // --- authentication --------------------------------------------------------------------
  // The run token of a call: OK, or PERMISSION_DENIED (counted, reported as an event).
  // Called first by every RPC handler, on gRPC's threads; the lock is taken only to count
  // a refusal, so authorized calls pay one constant-time comparison.
  grpc::Status authorize(const grpc::CallbackServerContext* ctx, const char* rpc) {
    const auto& metadata = ctx->client_metadata();
    const auto it = metadata.find(kTokenMetadataKey);
    if (it != metadata.end() &&
        tokensEqual(std::string_view(it->second.data(), it->second.size()), options.security.token)) {
      return grpc::Status::OK;
    }
    const std::string why = it == metadata.end() ? "missing run token" : "wrong run token";
    const std::string detail = std::string(rpc) + " from " + ctx->peer() + " refused: " + why;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++counters.unauthorized;
      const double t = sinceStart();
      refusalBudget = std::min(kRefusalBurst, refusalBudget + (t - refusalBudgetT) * kRefusalsPerSecond);
      refusalBudgetT = t;
      if (refusalBudget >= 1) {
        refusalBudget -= 1;
        if (auto* e = newEventLocked()) {
          e->set_kind(pb::ClusterEvent::REJECT);
          e->set_t_s(now());
          e->set_rank(-1);
          e->set_count(refusalsUnreported + 1);
          e->set_detail(refusalsUnreported == 0
                            ? detail
                            : detail + " (and " + std::to_string(refusalsUnreported) +
                                  " more refused calls since the last such event)");
          publishLocked(e);
        }
        refusalsUnreported = 0;
      } else {
        ++refusalsUnreported;
      }
    }
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        options.name + ": " + why + " (metadata " + kTokenMetadataKey + "); " + rpc + " refused");
  }  // A unary call refused for its token, already finished; nullptr when it may go on.
  grpc::ServerUnaryReactor* refusedUnary(grpc::CallbackServerContext* ctx, const char* rpc) {
    const grpc::Status st = authorize(ctx, rpc);
    if (st.ok()) return nullptr;
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(st);
    return reactor;
  }

  double refusalBudget = kRefusalBurst;  // guarded by mu
  double refusalBudgetT = 0;
  std::int64_t refusalsUnreported = 0;

  grpc::Status notHead() const {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + " is a chain replica, not the head");
  }

  // A RECOVERY event; kept for the first watcher when nobody watches yet (a restarted
  // server restores before the runner has reconnected).
  // A promotion or chain step is about this server: `target` names it.
  void emitRecoveryLocked(EventCode what, const std::string& detail, std::int64_t version, int rank = -1,
                          std::int64_t count = 0, double ageS = 0, std::int64_t dropped = 0, double outageS = 0) {
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
  std::size_t gradientBytes() const { return static_cast<std::size_t>(store->size()) * sizeof(float); }

  // --- events -------------------------------------------------------------------------
  pb::ClusterEvent* newEventLocked() {
    // The first watcher gets the event; others copy it (usually there is one: the runner).
    if (watchers.empty()) return unwatched.events_size() < kUnwatchedMax ? unwatched.add_events() : nullptr;
    return (*watchers.begin())->pending.add_events();
  }
  void publishLocked(pb::ClusterEvent* e) {
    if (e == nullptr) return;
    bool first = true;
    for (auto* w : watchers) {
      if (first) {
        first = false;
      } else {
        *w->pending.add_events() = *e;
      }
    }
    for (auto* w : watchers) w->flushLocked();
  }
  const char* stateName(int rank) const {
    return rank >= 0 && rank < options.workers ? toString(policy->state(rank)) : "";
  }

  void emitDecisionsLocked() {
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

  // --- applying the policy's output -----------------------------------------------------
  // Applies every update in `out`; `pusher`/`pushed` identify a just-pushed gradient that
  // is not (yet) in `held`.
  void applyOutputLocked(double t) {
    const auto& opt = options.spec.optimizer();
    const bool mean = opt.lr_convention() == v1::OptimizerSpec::MEAN;
    const std::size_t updates = out.updateCount();
    for (std::size_t u = 0; u < updates; ++u) {
      const std::size_t begin = out.updateBegin[u];
      const std::size_t end = u + 1 < updates ? out.updateBegin[u + 1] : out.gradients.size();
      const std::int64_t base = store->version();
      applyPtrs.clear();
      applyWeights.clear();
      const double m = static_cast<double>(end - begin);
      for (std::size_t g = begin; g < end; ++g) {
        const auto& ref = out.gradients[g];
        applyPtrs.push_back(gradientOf[static_cast<std::size_t>(ref.rank)]);
        applyWeights.push_back(mean && m > 0 ? ref.scale / m : ref.scale);
      }
      const double lr = learningRateAt(opt, base);
      if (forwardsEachUpdate()) {
        // The head applies the combined gradient exactly as its replicas will.
        store->combine(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), combined.data());
        const float* c = combined.data();
        const double one = 1.0;
        store->apply(&c, &one, 1, lr);
        auto upd = replicator->acquire();
        upd->set_version(store->version());
        upd->set_full_state(false);
        upd->clear_parameters();
        upd->clear_momentum();
        upd->mutable_gradient()->assign(reinterpret_cast<const char*>(combined.data()), gradientBytes());
        upd->set_lr(lr);
        upd->set_t_s(t);
        replicator->enqueue(std::move(upd));
      } else {
        store->apply(applyPtrs.data(), applyWeights.data(), static_cast<int>(applyPtrs.size()), lr);
      }
      versionTime.push_back(t);
      afterUpdateLocked(t);
      counters.applied += static_cast<std::int64_t>(end - begin);
      for (std::size_t g = begin; g < end; ++g) {
        const auto& ref = out.gradients[g];
        auto* e = newEventLocked();
        if (e == nullptr) break;
        e->set_kind(pb::ClusterEvent::APPLY);
        e->set_t_s(t);
        e->set_rank(ref.rank);
        e->set_parallel_state(stateName(ref.rank));
        e->set_version(store->version());
        e->set_staleness(base - baseVersionOf[static_cast<std::size_t>(ref.rank)]);
        e->set_scale(ref.scale);
        publishLocked(e);
      }
    }
    counters.dropped += static_cast<std::int64_t>(out.dropped.size());
    // The server enforces stop.max_updates itself, exactly.
    const auto maxUpdates = options.spec.stop().max_updates();
    if (maxUpdates > 0 && store->version() >= maxUpdates && !stopping) {
      stopping = true;
      stopCv.notify_all();
    }
    emitDecisionsLocked();
    if (out.recheckPulls || updates > 0) releaseParkedLocked(t);
  }

  std::vector<std::int64_t> baseVersionOf;  // per rank: base version of its current gradient

  bool chainMode() const { return options.spec.recovery().mode() == v1::RecoverySpec::CHAIN; }
  bool forwardsEachUpdate() const {
    return chainMode() && isHead && replicator && options.spec.recovery().forward_every() <= 1 &&
           replicator->hasSuccessor();
  }
  // After every update: periodic chain forwarding (every K > 1 updates) and checkpoints.
  void afterUpdateLocked(double t) {
    const std::int64_t v = store->version();
    const auto& rec = options.spec.recovery();
    if (chainMode() && isHead && replicator && rec.forward_every() > 1 && v % rec.forward_every() == 0 &&
        replicator->hasSuccessor()) {
      auto u = replicator->acquire();
      fillStateLocked(*u);
      replicator->enqueue(std::move(u));
    }
    maybeCheckpointLocked(t);
  }
  // Takes the copy for the writer when a checkpoint is due and the writer is free (the
  // writer calls it again when it finishes, so a checkpoint due meanwhile is not lost).
  void maybeCheckpointLocked(double t) {
    const std::int64_t v = store->version();
    const auto& rec = options.spec.recovery();
    if (checkpoints && !checkpointDue && v > lastCheckpointVersion) {
      const bool byUpdates = rec.checkpoint_every_updates() > 0 && v - lastCheckpointVersion >= rec.checkpoint_every_updates();
      const bool byTime = rec.checkpoint_every_s() > 0 && t - lastCheckpointT >= rec.checkpoint_every_s();
      if (byUpdates || byTime) {
        checkpointParams.assign(store->parameters(), store->parameters() + store->size());
        checkpointMomentum.assign(store->momentumBuffer().begin(), store->momentumBuffer().end());
        checkpointVersion = v;
        checkpointT = t;
        lastCheckpointVersion = v;
        lastCheckpointT = t;
        checkpointDue = true;
        checkpointCv.notify_one();
      }
    }
  }
  void fillStateLocked(pb::ReplicaUpdate& u) const {
    u.set_version(store->version());
    u.set_full_state(true);
    u.mutable_parameters()->assign(reinterpret_cast<const char*>(store->parameters()), gradientBytes());
    u.mutable_momentum()->assign(reinterpret_cast<const char*>(store->momentumBuffer().data()), gradientBytes());
    u.clear_gradient();
    u.set_lr(0);
    u.set_t_s(now());
  }
  void writeCheckpoints() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      checkpointCv.wait(lock, [&] { return checkpointDue || shuttingDown; });
      if (!checkpointDue) break;
      const std::int64_t v = checkpointVersion;
      const double t = checkpointT;
      lock.unlock();
      const Status written = checkpoints->write(v, t, options.modelName, checkpointParams.data(),
                                                checkpointMomentum.data(), store->size());
      lock.lock();
      checkpointDue = false;
      if (written) {
        ++counters.checkpoints;
        emitRecoveryLocked(v1::RunEvent::CHECKPOINT, "checkpoint of version " + std::to_string(v) + " written", v);
      } else {
        ++counters.checkpointFailures;
        emitRecoveryLocked(v1::RunEvent::CHECKPOINT_FAILED, written.message() + "; training goes on", v);
      }
      maybeCheckpointLocked(now());
    }
  }
  // Replica catch-up / state: copy under the lock (called by the replicator's thread).
  void snapshotState(pb::ReplicaUpdate& u) {
    std::lock_guard<std::mutex> lock(mu);
    fillStateLocked(u);
  }

  // --- pulls ----------------------------------------------------------------------------
  void answerPullLocked(PendingPull* r, double t) {
    auto* reply = &r->header();
    const int rank = r->rank();
    reply->set_stop(stopping);
    reply->set_version(store->version());
    reply->set_incarnation(incarnation);
    reply->set_server_t_s(t);
    reply->set_version_t_s(versionTime[std::min(versionTime.size() - 1, static_cast<std::size_t>(store->version()))]);
    reply->set_lr(learningRateAt(options.spec.optimizer(), store->version()));
    // Pulls parked before the start count their wait from the start.
    const double wait = std::max(0.0, t - r->arrivedAt());
    reply->set_wait_s(wait);
    // The evaluator still gets the parameters after stop, for its final evaluation.
    if (!stopping || rank < 0) {
      r->setParameters(store->parameters(), gradientBytes());
      counters.bytesSent += static_cast<std::int64_t>(gradientBytes());
      if (rank >= 0) {
        reply->set_parallel_state(stateName(rank));
        reply->set_slowdown(slowdownOverride[static_cast<std::size_t>(rank)]);
        lastWait[static_cast<std::size_t>(rank)] = wait;
        lastRelease[static_cast<std::size_t>(rank)] = t;
        lastContact[static_cast<std::size_t>(rank)] = t;
        policy->onPullReleased(rank, store->version(), t);
        reply->set_batch_size(policy->batchFor(rank));
      }
    }
    r->finished = true;
    r->complete();
  }

  void releaseParkedLocked(double t) {
    std::size_t keep = 0;
    for (std::size_t i = 0; i < parked.size(); ++i) {
      PendingPull* r = parked[i];
      if (stopping || mayAnswerLocked(r, t)) {
        answerPullLocked(r, t);
      } else {
        parked[keep++] = r;
      }
    }
    parked.resize(keep);
  }

  // Workers wait for the start and then for the policy; the evaluator (rank -1) waits
  // only for `min_version`.
  // With per-update chain forwarding, a worker's pull (the acknowledgement of its push)
  // also waits until the tail holds every update applied when the policy released it.
  bool mayAnswerLocked(PendingPull* r, double t) {
    if (adopting) return false;  // nobody sees parameters that are about to be replaced
    if (r->rank() < 0) return store->version() >= r->minVersion();
    if (!r->cleared) {
      if (!started || !policy->mayProceed(r->rank(), t)) return false;
      r->cleared = true;
      r->ackVersion = store->version();
    }
    return !forwardsEachUpdate() || replicatedVersion >= r->ackVersion;
  }

  // The run's clock starts when every worker has joined (or is known to be down), and no
  // worker pull is answered before: all start together, and process start-up (loading
  // data, building models) is not counted as training time.
  void maybeStartLocked() {
    if (started || adopting || std::count(joined.begin(), joined.end(), 1) < options.workers) return;
    const double shift = sinceStart();
    start += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(shift));
    for (auto& v : lastContact) v = 0.0;
    started = true;
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::CONTROL);
      e->set_t_s(0.0);
      e->set_rank(-1);
      e->set_detail("start: all " + std::to_string(options.workers) + " workers joined");
      publishLocked(e);
    }
    releaseParkedLocked(0.0);
  }

  void cancelPull(PendingPull* r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r->finished) return;
    parked.erase(std::remove(parked.begin(), parked.end(), r), parked.end());
    r->finished = true;
    r->abandon();
  }

  // --- RPCs -----------------------------------------------------------------------------
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* ctx, const pb::JoinRequest* req,
                                 pb::JoinReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "Join")) return refused;
    auto* reactor = ctx->DefaultReactor();
    if (!isHead) {
      reactor->Finish(notHead());
      return reactor;
    }
    if (req->role() == "probe") {
      // A node asks for the run's spec before it builds its model (then it joins for real).
      reply->set_rank(-1);
      reply->set_world_size(options.workers);
      *reply->mutable_spec() = options.spec;
      reply->set_shard_seed(options.spec.seed());
      reply->set_server_t_s(now());
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    if (req->model() != options.modelName || req->parameter_count() != store->size()) {
      reactor->Finish(grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          "join rejected: node " + req->name() + " runs model " + req->model() + " with " +
              std::to_string(req->parameter_count()) + " parameters, the server has " + options.modelName +
              " with " + std::to_string(store->size())));
      return reactor;
    }
    std::lock_guard<std::mutex> lock(mu);
    int rank = -1;
    if (req->role() == "worker") {
      if (req->requested_rank() >= 0 && req->requested_rank() < options.workers) {
        rank = req->requested_rank();
      } else {
        for (int r = 0; r < options.workers; ++r) {
          if (!joined[static_cast<std::size_t>(r)]) {
            rank = r;
            break;
          }
        }
      }
      if (rank < 0) {
        reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                     "join rejected: all " + std::to_string(options.workers) + " worker ranks are taken"));
        return reactor;
      }
      const bool rejoin = joined[static_cast<std::size_t>(rank)] != 0 || req->rejoin();
      if (adopting && req->held_version() > adoptedVersion &&
          req->held_parameters().size() == gradientBytes()) {
        // Stateless restart: the highest version any worker holds wins; momentum is not
        // kept by workers, so it restarts from zero.
        store->restore(reinterpret_cast<const float*>(req->held_parameters().data()), nullptr, req->held_version());
        versionTime.assign(static_cast<std::size_t>(req->held_version()) + 1, now());
        adoptedVersion = req->held_version();
        adoptedFrom = req->name();
      }
      joined[static_cast<std::size_t>(rank)] = 1;
      maybeStartLocked();
      const double t = now();
      lastContact[static_cast<std::size_t>(rank)] = t;
      nodeUpLocked(rank, t, rejoin ? "rejoined" : "joined");
    }
    reply->set_rank(rank);
    reply->set_world_size(options.workers);
    *reply->mutable_spec() = options.spec;
    reply->set_shard_seed(options.spec.seed());
    reply->set_incarnation(incarnation);
    if (adopting && req->role() == "worker") {
      // Answered once the parameters are adopted (every worker rejoined, or the wait ended).
      parkedJoins.push_back({reactor, reply});
      if (std::count(joined.begin(), joined.end(), 1) >= options.workers) finishAdoptionLocked();
      return reactor;
    }
    reply->set_server_t_s(now());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  void finishAdoptionLocked() {
    if (!adopting) return;
    adopting = false;
    started = true;
    const double t = now();
    for (auto& c : lastContact) c = t;
    if (adoptedVersion >= 0) {
      emitRecoveryLocked(v1::RunEvent::ADOPTED, "adopted version " + std::to_string(adoptedVersion) + " from " + adoptedFrom +
                                        " (the highest any rejoining worker held); momentum restarts from zero",
                         adoptedVersion);
    } else {
      emitRecoveryLocked(v1::RunEvent::STARTED_FRESH,
                         "no rejoining worker offered parameters; starting from the initial parameters (version 0)", 0);
    }
    for (auto& j : parkedJoins) {
      j.reply->set_server_t_s(t);
      j.reactor->Finish(grpc::Status::OK);
    }
    parkedJoins.clear();
    releaseParkedLocked(t);
  }

  // Parks or answers a new pull.
  void admitPull(PendingPull* reactor) {
    std::lock_guard<std::mutex> lock(mu);
    const double t = now();
    if (reactor->rank() >= 0) lastContact[static_cast<std::size_t>(reactor->rank())] = t;
    if (stopping || mayAnswerLocked(reactor, t)) {
      answerPullLocked(reactor, t);
    } else {
      parked.push_back(reactor);
      tickCv.notify_one();
    }
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const pb::PullRequest* req,
                                 pb::PullReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "Pull")) return refused;
    const int rank = req->rank();
    if (!isHead) {
      auto* reactor = ctx->DefaultReactor();
      reactor->Finish(notHead());
      return reactor;
    }
    if (rank < -1 || rank >= options.workers) {
      auto* reactor = ctx->DefaultReactor();
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "pull from unknown rank " + std::to_string(rank)));
      return reactor;
    }
    auto* reactor = new PullReactor(this, rank, reply, now(), req->min_version());
    admitPull(reactor);
    return reactor;
  }

  grpc::ServerUnaryReactor* PushPull(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                     pb::PullReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "PushPull")) return refused;
    if (!isHead) {
      auto* reactor = ctx->DefaultReactor();
      reactor->Finish(notHead());
      return reactor;
    }
    pb::PushReply pushed;
    const auto& bytes = req->gradient();
    auto status = handlePush(*req, reinterpret_cast<const float*>(bytes.data()), bytes.size(), &pushed);
    if (!status.ok()) {
      auto* reactor = ctx->DefaultReactor();
      reactor->Finish(status);
      return reactor;
    }
    auto* reactor = new PullReactor(this, req->rank(), reply, now(), -1);
    admitPull(reactor);
    return reactor;
  }

  grpc::ServerWriteReactor<pb::PullChunk>* PullChunks(grpc::CallbackServerContext* ctx,
                                                      const pb::PullRequest* req) override {
    if (auto st = authorize(ctx, "PullChunks"); !st.ok()) return new RefusedWriter<pb::PullChunk>(st);
    const int rank = std::max(-1, std::min(req->rank(), options.workers - 1));
    auto* reactor = new PullStreamReactor(this, rank, now(), req->min_version());
    if (!isHead) {
      reactor->Finish(notHead());
      return reactor;
    }
    if (rank != req->rank()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "pull from unknown rank " + std::to_string(req->rank())));
      return reactor;
    }
    admitPull(reactor);
    return reactor;
  }

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                 pb::PushReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "Push")) return refused;
    auto* reactor = ctx->DefaultReactor();
    if (!isHead) {
      reactor->Finish(notHead());
      return reactor;
    }
    const auto& bytes = req->gradient();
    reactor->Finish(handlePush(*req, reinterpret_cast<const float*>(bytes.data()), bytes.size(), reply));
    return reactor;
  }

  grpc::ServerReadReactor<pb::PushChunk>* PushChunks(grpc::CallbackServerContext* ctx, pb::PushReply* reply) override {
    if (auto st = authorize(ctx, "PushChunks"); !st.ok()) return new RefusedReader<pb::PushChunk>(st);
    return new PushStreamReactor(this, reply);
  }

  // Validates and handles one push (unary or chunked): `grad` holds `bytes` bytes.
  grpc::Status handlePush(const pb::PushRequest& req, const float* grad, std::size_t bytes, pb::PushReply* reply) {
    const int rank = req.rank();
    auto reject = [&](const std::string& why) {
      std::lock_guard<std::mutex> lock(mu);
      ++counters.rejected;
      if (auto* e = newEventLocked()) {
        e->set_kind(pb::ClusterEvent::REJECT);
        e->set_t_s(now());
        e->set_rank(rank);
        e->set_detail(why);
        publishLocked(e);
      }
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
    };
    if (!isHead) return notHead();
    if (rank < 0 || rank >= options.workers) return reject("push from unknown rank " + std::to_string(rank));
    if (bytes != gradientBytes()) {
      return reject("gradient from worker " + std::to_string(rank) + " has " + std::to_string(bytes / 4) +
                    " values (" + std::to_string(bytes) + " bytes), the model has " +
                    std::to_string(store->size()) + " parameters");
    }
    if (!allFinite(grad, store->size())) {
      return reject("gradient from worker " + std::to_string(rank) +
                    " contains NaN or Inf; rejected, not applied");
    }
    std::lock_guard<std::mutex> lock(mu);
    const double t = now();
    ++counters.pushes;
    counters.bytesReceived += static_cast<std::int64_t>(bytes);
    lastContact[static_cast<std::size_t>(rank)] = t;
    if (req.backlog_total() > 0) return handleBacklogLocked(req, grad, t, reply);
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::ITERATION);
      e->set_t_s(t);
      e->set_rank(rank);
      e->set_parallel_state(stateName(rank));
      e->set_version(req.base_version());
      e->set_wait_s(lastWait[static_cast<std::size_t>(rank)]);
      e->set_pull_s(req.pull_s());
      e->set_compute_s(req.compute_s());
      e->set_emulated_s(req.emulated_s());
      e->set_push_s(req.prev_push_s());
      e->set_loss(req.train_loss());
      e->set_release_t_s(lastRelease[static_cast<std::size_t>(rank)]);
      e->set_batch_size(req.batch_size());
      publishLocked(e);
    }
    if (stopping) {
      reply->set_stop(true);
      reply->set_outcome("dropped");
      reply->set_version(store->version());
      return grpc::Status::OK;
    }
    // The pushed gradient is read in place unless the policy holds it.
    const auto r = static_cast<std::size_t>(rank);
    // Marked down for its silence, yet alive: it is a member again.
    if (policy->state(rank) == ParallelState::Down) nodeUpLocked(rank, t, "pushed again after being marked down");
    gradientOf[r] = grad;
    baseVersionOf[r] = req.base_version();
    out.clear();
    const PushOutcome outcome = policy->onPush(rank, req.base_version(), t, out);
    bool consumed = false;
    for (const auto& g : out.gradients) consumed = consumed || g.rank == rank;
    applyOutputLocked(t);
    if (outcome == PushOutcome::Held && !consumed) {
      held[r].assign(grad, grad + store->size());
      gradientOf[r] = held[r].data();
    } else if (gradientOf[r] == grad) {
      gradientOf[r] = held[r].data();
    }
    reply->set_version(store->version());
    reply->set_outcome(toString(outcome));
    tickCv.notify_one();
    return grpc::Status::OK;
  }

  // Stateless recovery: the gradients a worker computed while no server answered arrive
  // one by one and are applied together, in one step, by the spec's backlog rule.
  grpc::Status handleBacklogLocked(const pb::PushRequest& req, const float* grad, double t, pb::PushReply* reply) {
    const auto r = static_cast<std::size_t>(req.rank());
    const auto n = static_cast<std::size_t>(store->size());
    auto& sum = backlogSum[r];
    if (sum.size() != n) sum.assign(n, 0.0f);
    if (req.backlog_index() == 0) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      backlogCount[r] = 0;
      backlogOldestBase[r] = req.base_version();
    }
    for (std::size_t i = 0; i < n; ++i) sum[i] += grad[i];
    ++backlogCount[r];
    backlogOldestBase[r] = std::min(backlogOldestBase[r], req.base_version());
    reply->set_stop(stopping);
    if (req.backlog_index() + 1 < req.backlog_total() || stopping) {
      reply->set_outcome("held");
      reply->set_version(store->version());
      return grpc::Status::OK;
    }
    const auto& rec = options.spec.recovery();
    const std::int64_t count = backlogCount[r];
    double weight = 1.0;
    double lr = learningRateAt(options.spec.optimizer(), store->version());
    std::string rule = "sum";
    if (rec.backlog_rule() == v1::RecoverySpec::MEAN) {
      weight = 1.0 / static_cast<double>(count);
      rule = "mean";
    } else if (rec.backlog_rule() == v1::RecoverySpec::SCALED_LR) {
      rule = "scaled lr";
      if (count > rec.backlog_lr_threshold()) lr *= rec.backlog_lr_scale();
    }
    const std::int64_t base = store->version();
    const float* g = sum.data();
    store->apply(&g, &weight, 1, lr);
    versionTime.push_back(t);
    counters.applied += count;
    counters.backlogApplied += count;
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::APPLY);
      e->set_t_s(t);
      e->set_rank(req.rank());
      e->set_parallel_state(stateName(req.rank()));
      e->set_version(store->version());
      e->set_staleness(std::max<std::int64_t>(0, base - backlogOldestBase[r]));
      e->set_scale(weight * static_cast<double>(count));
      publishLocked(e);
    }
    char lrText[32];
    std::snprintf(lrText, sizeof lrText, "%g", lr);
    emitRecoveryLocked(v1::RunEvent::BACKLOG,
                       "worker " + std::to_string(req.rank()) + ": applied a backlog of " + std::to_string(count) +
                           " gradients in one step (rule " + rule + ", lr " + lrText + "; oldest " +
                           std::to_string(req.backlog_age_s()).substr(0, 5) + " s old, " +
                           std::to_string(req.backlog_dropped()) + " dropped by the bound)",
                       store->version(), req.rank(), count, req.backlog_age_s(), req.backlog_dropped(),
                       req.backlog_outage_s());
    afterUpdateLocked(t);
    releaseParkedLocked(t);
    reply->set_outcome("applied");
    reply->set_version(store->version());
    return grpc::Status::OK;
  }

  grpc::ServerWriteReactor<pb::EventBatch>* Watch(grpc::CallbackServerContext* ctx, const pb::WatchRequest*) override {
    if (auto st = authorize(ctx, "Watch"); !st.ok()) return new RefusedWriter<pb::EventBatch>(st);
    auto* w = new WatchReactor(this);
    std::lock_guard<std::mutex> lock(mu);
    watchers.insert(w);
    if (unwatched.events_size() > 0) {
      w->pending.Swap(&unwatched);
      unwatched.Clear();
      w->flushLocked();
    }
    return w;
  }

  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* ctx, const pb::EvaluationReport* req,
                                   pb::ReportReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "Report")) return refused;
    auto* reactor = ctx->DefaultReactor();
    std::lock_guard<std::mutex> lock(mu);
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::EVALUATION);
      e->set_t_s(now());
      e->set_rank(-1);
      e->set_version(req->version());
      e->set_loss(req->loss());
      e->set_accuracy(req->accuracy());
      e->set_version_t_s(req->version_t_s());
      e->set_compute_s(req->eval_s());
      publishLocked(e);
    }
    reply->set_stop(stopping);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Control(grpc::CallbackServerContext* ctx, const pb::ControlRequest* req,
                                    pb::ControlReply* reply) override {
    if (auto* refused = refusedUnary(ctx, "Control")) return refused;
    auto* reactor = ctx->DefaultReactor();
    std::unique_lock<std::mutex> lock(mu);
    const double t = now();
    const int rank = req->rank();
    const bool validRank = rank >= 0 && rank < options.workers;
    std::string detail;
    switch (req->action()) {
      case pb::ControlRequest::STOP:
        stopping = true;
        releaseParkedLocked(t);
        stopCv.notify_all();
        detail = "stop";
        break;
      case pb::ControlRequest::SET_SLOWDOWN:
        if (!validRank || !(req->slowdown() >= 0)) {
          reply->set_accepted(false);
          reply->set_detail("SET_SLOWDOWN needs a worker rank and a slowdown >= 0");
          reactor->Finish(grpc::Status::OK);
          return reactor;
        }
        slowdownOverride[static_cast<std::size_t>(rank)] = req->slowdown();
        detail = "slowdown x" + std::to_string(req->slowdown());
        break;
      case pb::ControlRequest::MARK_DOWN:
        if (!validRank) {
          reply->set_accepted(false);
          reply->set_detail("MARK_DOWN needs a worker rank");
          reactor->Finish(grpc::Status::OK);
          return reactor;
        }
        markDownLocked(rank, t, "process exited");
        detail = "marked down";
        break;
      case pb::ControlRequest::PROMOTE:
        if (isHead) {
          detail = options.name + " is already the head";
          break;
        }
        promoteLocked(req->t_s());
        detail = options.name + " promoted to head at version " + std::to_string(store->version());
        break;
      case pb::ControlRequest::SET_NEXT:
        if (!replicator) {
          reply->set_accepted(false);
          reply->set_detail("SET_NEXT needs a server of a chain (recovery.mode chain)");
          reactor->Finish(grpc::Status::OK);
          return reactor;
        }
        replicator->setSuccessor(req->address());
        detail = req->address().empty() ? options.name + " is now the tail"
                                        : options.name + " forwards to " + req->address();
        emitRecoveryLocked(req->address().empty() ? v1::RunEvent::CHAIN_TAIL : v1::RunEvent::CHAIN_LINK, detail,
                           store->version());
        break;
      default:
        reply->set_accepted(false);
        reply->set_detail("action not supported by the server");
        reactor->Finish(grpc::Status::OK);
        return reactor;
    }
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::CONTROL);
      e->set_t_s(t);
      e->set_rank(rank);
      e->set_detail(detail);
      publishLocked(e);
    }
    reply->set_accepted(true);
    reply->set_detail(detail);
    reply->set_version(store->version());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Chain: this replica becomes the head. Its state is what the chain acknowledged; the
  // policy starts afresh, every worker counts as joined (they rejoin when they fail over),
  // and the run's clock continues at `t`.
  void promoteLocked(double t) {
    isHead = true;
    setClock(t);
    started = true;
    incarnation = newIncarnation();
    for (auto& j : joined) j = 1;
    for (auto& c : lastContact) c = t;
    policy->reset(options.workers, t);
    replicatedVersion = store->version();
    if (versionTime.size() < static_cast<std::size_t>(store->version()) + 1) {
      versionTime.resize(static_cast<std::size_t>(store->version()) + 1, t);
    }
    emitRecoveryLocked(v1::RunEvent::PROMOTED,
                       options.name + " promoted to head at version " + std::to_string(store->version()) +
                           " (the version the chain acknowledged)",
                       store->version());
  }

  // Chain: an update or a whole state from the predecessor. Applied (a duplicate is not
  // applied again), then forwarded; answered once the rest of the chain has it.
  grpc::ServerUnaryReactor* Replicate(grpc::CallbackServerContext* ctx, const pb::ReplicaUpdate* req,
                                      pb::ReplicaAck* reply) override {
    if (auto* refused = refusedUnary(ctx, "Replicate")) return refused;
    auto* reactor = ctx->DefaultReactor();
    std::lock_guard<std::mutex> lock(mu);
    auto fail = [&](grpc::StatusCode code, const std::string& why) {
      reactor->Finish(grpc::Status(code, options.name + ": " + why));
      return reactor;
    };
    if (isHead) return fail(grpc::StatusCode::FAILED_PRECONDITION, "is the head; it takes no replica updates");
    const std::int64_t have = store->version();
    if (req->full_state()) {
      if (req->parameters().size() != gradientBytes() || req->momentum().size() != gradientBytes()) {
        return fail(grpc::StatusCode::INVALID_ARGUMENT, "replica state of the wrong size (" +
                                                            std::to_string(req->parameters().size()) + " bytes, expected " +
                                                            std::to_string(gradientBytes()) + ")");
      }
      store->restore(reinterpret_cast<const float*>(req->parameters().data()),
                     reinterpret_cast<const float*>(req->momentum().data()), req->version());
      versionTime.resize(static_cast<std::size_t>(req->version()) + 1, req->t_s());
    } else if (req->version() == have + 1) {
      if (req->gradient().size() != gradientBytes()) {
        return fail(grpc::StatusCode::INVALID_ARGUMENT, "replica update of the wrong size");
      }
      const float* g = reinterpret_cast<const float*>(req->gradient().data());
      const double one = 1.0;
      store->apply(&g, &one, 1, req->lr());
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

  // A worker is (again) a member: the policy counts it, and the event says why.
  void nodeUpLocked(int rank, double t, const char* why) {
    if (policy->state(rank) == ParallelState::Down) {
      out.clear();
      policy->onWorkerUp(rank, t, out);
      applyOutputLocked(t);
    }
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::NODE);
      e->set_t_s(t);
      e->set_rank(rank);
      e->set_state("UP");
      e->set_code(v1::RunEvent::NODE_UP);
      e->set_detail(why);
      e->set_parallel_state(stateName(rank));
      publishLocked(e);
    }
  }

  void markDownLocked(int rank, double t, const char* why) {
    if (!joined[static_cast<std::size_t>(rank)]) {
      // A worker that died before joining must not hold back the start.
      joined[static_cast<std::size_t>(rank)] = 1;
      maybeStartLocked();
      t = now();
    }
    if (policy->state(rank) == ParallelState::Down) return;
    out.clear();
    policy->onWorkerDown(rank, t, out);
    applyOutputLocked(t);
    if (auto* e = newEventLocked()) {
      e->set_kind(pb::ClusterEvent::NODE);
      e->set_t_s(t);
      e->set_rank(rank);
      e->set_state("DOWN");
      e->set_code(v1::RunEvent::NODE_DOWN);
      e->set_detail(why);
      publishLocked(e);
    }
    releaseParkedLocked(t);
  }

  // --- time-driven decisions ------------------------------------------------------------
  void tickLoop() {
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
      double deadline = adopting ? std::min(policy->nextDeadline(), adoptDeadline) : policy->nextDeadline();
      if (t >= deadline) {
        out.clear();
        policy->onTick(t, out);
        applyOutputLocked(t);
        releaseParkedLocked(t);
        continue;
      }
      // A worker that has neither pushed nor pulled for `barrier_timeout_s` while others
      // wait is declared down, so bounded-staleness rules (whose minimum clock it holds)
      // cannot deadlock on a vanished node.
      if (started && !parked.empty() && !stopping) {
        for (int r = 0; r < options.workers; ++r) {
          const auto i = static_cast<std::size_t>(r);
          const bool isParked = std::any_of(parked.begin(), parked.end(), [r](PendingPull* p) { return p->rank() == r; });
          if (joined[i] && !isParked && policy->state(r) != ParallelState::Down && t - lastContact[i] > silence) {
            markDownLocked(r, t, "silent for longer than strategy.barrier_timeout_s");
          }
        }
        deadline = std::min(deadline, t + std::max(0.05, silence / 4));
      }
      const double wait = std::min(deadline - t, 1.0);
      tickCv.wait_for(lock, std::chrono::duration<double>(std::max(wait, 0.001)));
    }
  }
};

ParameterServer::ParameterServer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

ParameterServer::~ParameterServer() { shutdown(0.5); }

Result<std::unique_ptr<ParameterServer>> ParameterServer::start(ServerOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.workers <= 0) return Status::error("server: needs at least one worker");
  if (auto st = checkToken(options.security.token, options.name); !st) return st;
  if (options.security.tls && options.security.tls->keyPem.empty()) {
    return Status::error(options.name + ": TLS needs the server's key (security.tls_key)");
  }
  auto policy = makePolicy(options.spec.strategy(), options.spec.batch_size());
  if (!policy) return policy.status();
  impl->policy = std::move(policy).value();
  const auto count = options.initialParameters.size();
  impl->store = std::make_unique<ParameterStore>(std::move(options.initialParameters),
                                                 options.spec.optimizer().momentum(),
                                                 options.spec.optimizer().weight_decay());
  const auto workers = static_cast<std::size_t>(options.workers);
  impl->held.assign(workers, std::vector<float>(count, 0.0f));
  impl->sendBuffers.resize(workers + 1);
  impl->receiveBuffers.resize(workers);
  impl->gradientOf.assign(workers, nullptr);
  for (std::size_t r = 0; r < workers; ++r) impl->gradientOf[r] = impl->held[r].data();
  impl->baseVersionOf.assign(workers, 0);
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
  const auto& rec = o.spec.recovery();
  const std::int64_t n = impl->store->size();

  // A resumed server's clock runs from the start (its recovery events carry run time).
  if (o.resumeAtS >= 0 && !o.replica) impl->setClock(o.resumeAtS);
  // Recovery: where a restarted server's parameters come from.
  if (o.restoreCheckpoint) {
    if (o.checkpointDir.empty()) return Status::error(o.name + ": restoring needs a checkpoint directory");
    CheckpointDirectory dir(o.checkpointDir, std::max(1, rec.checkpoint_keep()));
    std::vector<std::string> skipped;
    auto latest = dir.loadLatest(&skipped, o.modelName, n);
    std::string skippedText;
    for (const auto& line : skipped) skippedText += "; skipped " + line;
    if (latest) {
      impl->store->restore(latest->parameters.data(), latest->momentum.data(), latest->version);
      impl->versionTime.assign(static_cast<std::size_t>(latest->version) + 1, o.resumeAtS > 0 ? o.resumeAtS : 0.0);
      impl->lastCheckpointVersion = latest->version;
      impl->emitRecoveryLocked(v1::RunEvent::RESTORED, "restored " + latest->path + " (version " + std::to_string(latest->version) +
                                               ", taken at " + std::to_string(latest->runTimeS).substr(0, 6) + " s)" +
                                               skippedText,
                               latest->version);
    } else {
      impl->emitRecoveryLocked(v1::RunEvent::STARTED_FRESH, latest.message() + skippedText + "; starting from the initial parameters",
                               0);
    }
  } else if (o.resumeAtS >= 0 && !o.adoptFromWorkers && !o.replica) {
    impl->emitRecoveryLocked(v1::RunEvent::STARTED_FRESH,
                             "restarted from the initial parameters (recovery " + recoveryName(rec.mode()) + ")", 0);
  }
  if (o.resumeAtS >= 0 && !o.replica) {
    for (auto& j : impl->joined) j = 1;
    for (auto& c : impl->lastContact) c = o.resumeAtS;
    if (o.adoptFromWorkers) {
      // Wait for the workers' parameters: until every worker rejoined, at most a few seconds.
      impl->adopting = true;
      impl->adoptDeadline = o.resumeAtS + std::min(5.0, o.spec.strategy().barrier_timeout_s());
      impl->emitRecoveryLocked(v1::RunEvent::ADOPTING, "restarted; waiting for the rejoining workers' parameters", 0);
    } else {
      impl->started = true;
    }
  }
  impl->policy->reset(o.workers, std::max(0.0, o.resumeAtS));
  if (rec.mode() == v1::RecoverySpec::CHAIN) {
    impl->isHead = !o.replica;
    impl->combined.assign(static_cast<std::size_t>(n), 0.0f);
    impl->replicator = std::make_unique<Replicator>(
        n, o.security, [raw = impl.get()](pb::ReplicaUpdate& u) { raw->snapshotState(u); },
        [raw = impl.get()](std::int64_t version) {
          std::lock_guard<std::mutex> lock(raw->mu);
          raw->replicatedVersion = std::max(raw->replicatedVersion, version);
          raw->releaseParkedLocked(raw->now());
        },
        [raw = impl.get()](const std::string& message) {
          std::lock_guard<std::mutex> lock(raw->mu);
          raw->emitRecoveryLocked(v1::RunEvent::REPLICA_UNREACHABLE, message, raw->store->version());
        });
    if (!o.chainNext.empty()) impl->replicator->setSuccessor(o.chainNext);
  }
  if (rec.mode() == v1::RecoverySpec::CHECKPOINT && !o.checkpointDir.empty()) {
    impl->checkpoints = std::make_unique<CheckpointDirectory>(o.checkpointDir, std::max(1, rec.checkpoint_keep()));
    if (auto st = impl->checkpoints->prepare(); !st) return st;
  }

  grpc::ServerBuilder builder;
  const std::string address = hostPort(impl->options.bindAddress, impl->options.port);
  builder.AddListeningPort(address, serverCredentials(impl->options.security), &impl->port);
  // gRPC sets SO_REUSEPORT by default, which would let a second server share a busy port
  // silently; we want the clear "address in use" error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Flow-control windows and frames sized for model-sized messages: with HTTP/2's 64 KB
  // defaults a 250 KB push needs several window updates (round trips) to get through.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1);
  builder.SetMaxReceiveMessageSize(messageLimit(impl->store->size()));
  builder.SetMaxSendMessageSize(messageLimit(impl->store->size()));
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return Status::error("server: cannot listen on " + address +
                         (impl->options.port != 0 ? " (port in use by another process?)" : ""));
  }
  auto* raw = impl.get();
  impl->ticker = std::thread([raw] { raw->tickLoop(); });
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
  m_impl->stopCv.wait(lock, [this] { return m_impl->stopping || m_impl->shuttingDown; });
}

void ParameterServer::shutdown(double graceSeconds) {
  if (!m_impl || !m_impl->server) return;
  std::unique_ptr<Replicator> replicator;
  {
    std::lock_guard<std::mutex> lock(m_impl->mu);
    if (m_impl->shuttingDown) return;
    m_impl->stopping = true;
    m_impl->releaseParkedLocked(m_impl->now());
    for (auto* w : m_impl->watchers) w->finishLocked(grpc::Status::OK);
    for (auto& j : m_impl->parkedJoins) j.reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server shutting down"));
    m_impl->parkedJoins.clear();
    m_impl->shuttingDown = true;
    m_impl->tickCv.notify_all();
    m_impl->stopCv.notify_all();
    m_impl->checkpointCv.notify_all();
    replicator = std::move(m_impl->replicator);
  }
  // The replicator's callbacks take the lock: stop it outside.
  replicator.reset();
  if (m_impl->checkpointWriter.joinable()) m_impl->checkpointWriter.join();
  m_impl->server->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(static_cast<int>(graceSeconds * 1000)));
  if (m_impl->ticker.joinable()) m_impl->ticker.join();
}

ServerStats ParameterServer::stats() const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  ServerStats s = m_impl->counters;
  s.version = m_impl->store->version();
  return s;
}

std::int64_t ParameterServer::snapshot(std::vector<float>& out) const {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  out.assign(m_impl->store->parameters(), m_impl->store->parameters() + m_impl->store->size());
  return m_impl->store->version();
}

}  // namespace dasp::net
