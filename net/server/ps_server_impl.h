// SPDX-License-Identifier: MIT
#pragma once
// INTERNAL to the parameter server: included only by net/ps_*.cpp and net/server/ps_reactors.h,
// never from outside the server's own files (the public interface is net/server/ps_server.h).
//
// ParameterServer::Impl, the gRPC service behind ParameterServer, is defined in parts:
//   ps_reactors.h/.cpp  the call objects: pull (unary, chunked), chunked push, Watch, refused
//   ps_rpcs.cpp         authentication and the RPC handlers: Join, Pull, PushPull, PullChunks,
//                       Push, PushChunks, Report, Control; admitPull and handlePush
//   ps_validate.cpp     the checks of every call's fields; the chunked push's buffer claim
//   ps_policy.cpp       applying the policy's output, answering parked pulls, the start,
//                       worker membership (up / down)
//   ps_events.cpp       the event hub: new events, publishing to watchers, the buffer kept
//                       while nobody watches, decisions, RECOVERY events, the Watch RPC
//   ps_recovery.cpp     checkpoints and their writer thread, the restore on a restart,
//                       stateless adoption and backlogs
//   ps_chain.cpp        chain replication: the Replicate RPC, promotion, SET_NEXT, the
//                       replicator's set-up and state snapshots
//   ps_server.cpp       ParameterServer itself: start, stop, shutdown, stats, the ticker
//   ps_record.cpp       the update record (options.recordPath) and the acknowledged version
//   ps_transport.cpp    the same-host transports: the Unix socket, the shared-memory regions
//   ps_doorbell.cpp     the PushPull calls rung on a region's doorbell (its thread per region)
//   ps_socket.cpp       the payload socket: its acceptor, and a thread per connection
//   ps_shards.cpp       sharding: shard 0's log of decisions; the other shards' joins,
//                       ranges, FollowShard and pulls
//
// Locking contract (one mutex, `mu`; the groups of fields below say what each is under):
// - Every field in "guarded by mu" is read and written only with `mu` held, by the RPC
//   handlers (gRPC's threads), the ticker, the checkpoint writer and the replicator's
//   callbacks. Functions named *Locked expect `mu` held. The one exception is start():
//   before the server serves, nothing else runs, so it calls *Locked functions without it.
// - Fields in "written once by start()" are set before the server serves and only read
//   afterwards, from any thread, without the lock. `store` and `policy` are such pointers;
//   the objects they point to are guarded by mu, except `store->size()` (constant).
// - `isHead` is atomic: written under mu (promotion), read by the handlers without it.
// - The run clock's fields (`startTicks`, `started`, `clockRunning`) are atomic: written
//   under mu, read also without it, where a call's arrival time is taken (`now()` in Pull,
//   PushPull, PullChunks and Join's probe). A reader that sees `started` sees the origin
//   it was set with (the origin is stored first; both are sequentially consistent).
// - The checkpoint copy (`checkpointParams` ... `checkpointT`) is handed over by
//   `checkpointDue`: written under mu only while it is false; while it is true the writer
//   thread reads the copy without the lock, and nobody writes it.
// - Per-rank send/receive buffers belong to that rank's one call in flight (see below).
// - The server, the ticker and the writer thread objects belong to the owning thread
//   (start() and shutdown()).

#include "net/server/ps_server.h"
#include "core/common/durations.h"

#include "core/events/run_events.h"
#include "core/params/checkpoint.h"
#include "core/params/gradient_guard.h"
#include "core/params/local_average.h"
#include "core/params/parameter_store.h"
#include "core/params/update_record.h"
#include "core/policy/sync_policy.h"
#include "net/server/replicator.h"
#include "net/server/shard_log.h"
#include "net/transport/chunk_codec.h"
#include "net/transport/shared_region.h"
#include "dasp/ps/v1/parameter_server.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace dasp::net {

namespace pb = dasp::ps::v1;
using Clock = std::chrono::steady_clock;

// The chunked calls are raw (ByteBuffer in, ByteBuffer out): their payload is read and
// written by net/transport/chunk_codec.h, past Protobuf, so it is copied once less each way.
using ChunkedRawService = pb::ParameterServer::WithRawCallbackMethod_PushChunks<
    pb::ParameterServer::WithRawCallbackMethod_PullChunks<pb::ParameterServer::CallbackService>>;

struct ParameterServer::Impl final : ChunkedRawService {
  // --- call objects (ps_reactors.h) -------------------------------------------------------
  class PendingPull;        // a parked or about-to-be-answered pull
  class PullReactor;        // unary pull (Pull, PushPull)
  class PullStreamReactor;  // chunked pull (PullChunks)
  class PushStreamReactor;  // chunked push (PushChunks)
  class WatchReactor;       // one Watch subscriber
  class DoorbellPull;       // the pull of a PushPull rung on a region's doorbell
  class DoorbellServer;     // the thread that answers one region's doorbell
  class SocketPull;         // the pull of a call on the payload socket
  class SocketServer;       // one connection to the payload socket and its thread
  template <typename Message>
  class RefusedWriter;      // a server-streaming call refused for its token
  template <typename Message>
  class RefusedReader;      // a client-streaming call refused for its token
  class ShardLogReader;     // shards 1..S-1: shard 0's FollowShard stream

  // REJECT events for refused calls: a burst of this many, then at most one per second
  // (each says how many were refused meanwhile without an event).
  static constexpr double kRefusalBurst = 5;
  static constexpr double kRefusalsPerSecond = 1;
  static constexpr int kUnwatchedMax = 50000;  // bound of `unwatched`
  // Bounds of what a client holding the token can make the server keep (RESOURCE_EXHAUSTED
  // beyond): parked pulls per rank (a worker has one; the evaluator one or two), joins
  // parked during a stateless adoption per worker, live watchers, and events pending for
  // one watcher that does not read (its stream is finished).
  static constexpr int kParkedPullsPerRank = 8;
  static constexpr int kParkedJoinsPerWorker = 4;
  static constexpr int kWatcherPendingMax = 50000;
  static constexpr int kMaxWatchers = 8;  // Watch streams (the runner has one per server)
  // Field ranges (ps_validate.cpp): Control SET_SLOWDOWN's slowdown is in (0, kMaxSlowdown]
  // (or 0: the node's own profile); a push's batch_size in [0, kMaxBatch].
  static constexpr double kMaxSlowdown = 1000;
  static constexpr int kMaxBatch = 1 << 24;

  // --- written once by start() before the server serves, then read-only -------------------
  ServerOptions options;
  std::unique_ptr<ParameterStore> store;     // the pointer (and size()); contents: mu
  std::unique_ptr<SyncPolicy> policy;        // the pointer; the policy's state: mu
  int port = 0;

  // --- per rank, owned by that rank's one call in flight (the server relies on a worker
  // having at most one pull and one push outstanding); the outer vectors: start() --------
  // receiveBuffer(rank) is filled by the chunked push's reactor.
  float* receiveBuffer(int rank) {
    auto& b = receiveBuffers[static_cast<std::size_t>(rank)];
    if (b.empty()) b.resize(static_cast<std::size_t>(store->size()));
    return b.data();
  }
  std::vector<std::vector<float>> receiveBuffers;  // per rank: chunked pushes

  // Same-host transports (ps_transport.cpp): where the socket and regions live, and the
  // socket's address ("unix:PATH"; empty: none).
  std::string localDir;
  bool ownsLocalDir = false;
  std::string unixAddress;

  // --- atomic --------------------------------------------------------------------------------
  std::atomic<bool> isHead{true};            // chain: false for replicas until promoted

  // --- guarded by mu --------------------------------------------------------------------------
  mutable std::mutex mu;
  std::condition_variable tickCv;            // wakes the ticker (wakeTickerIfDueLocked)
  // The run time the sleeping ticker will wake at by itself (−∞ while it is awake: it
  // then looks at everything before it sleeps again); waking it earlier is needed only for
  // a decision due before then.
  double tickerWakeAt = -std::numeric_limits<double>::infinity();
  std::condition_variable stopCv;            // waitForStop()
  std::condition_variable checkpointCv;      // wakes the checkpoint writer
  PolicyOutput out;                          // the policy's output of one decision (reused)
  std::atomic<Clock::rep> startTicks{Clock::now().time_since_epoch().count()};  // the run clock's origin
  bool stopping = false;
  bool shuttingDown = false;
  std::atomic<bool> started{false};       // every worker joined: the run's clock runs
  std::atomic<bool> clockRunning{false};  // now() runs (a resumed server: from the start)
  std::uint64_t incarnation = 0;             // changes on every (re)start and promotion
  std::vector<PendingPull*> parked;
  std::vector<std::vector<float>> held;      // per rank: a gradient the policy holds
  std::vector<const float*> gradientOf;      // per rank: where its current gradient lives
  std::vector<std::int64_t> baseVersionOf;   // per rank: base version of its current gradient
  std::vector<std::vector<float>> clippedOf; // per rank: its last gradient as the guard clipped it
  std::vector<char> pushStreaming;           // per rank: a chunked push holds its receive buffer
  std::vector<char> joined;
  std::vector<double> lastContact;           // per rank, server seconds
  std::vector<double> lastWait;              // per rank, the wait of its last pull
  std::vector<double> lastRelease;           // per rank, when its last pull was answered
  std::vector<double> slowdownOverride;      // per rank, 0 = none
  // Server time at which each version from versionTimeBase on was made: a restore, an
  // adoption or a replica's new state starts it afresh at its version, so its size is the
  // number of updates this process made, whatever version a client names.
  std::vector<double> versionTime{0.0};
  std::int64_t versionTimeBase = 0;
  std::vector<const float*> applyPtrs;       // reused per update
  std::vector<double> applyWeights;
  ServerStats counters;
  std::unique_ptr<GradientGuard> guard;      // strategy.gradient_guard (the pointer: start())
  // Authentication: the REJECT events' rate limit.
  double refusalBudget = kRefusalBurst;
  double refusalBudgetT = 0;
  std::int64_t refusalsUnreported = 0;
  // Events: the subscribers, and the events while nobody watches (a restarted or promoted
  // server before the runner has re-subscribed), handed to the next watcher; bounded.
  std::unordered_set<WatchReactor*> watchers;
  pb::EventBatch unwatched;
  // Shared memory: per rank, the region of its latest join asking for one (null: none). A
  // call holds its own reference, so a re-join's new region never pulls one from under it.
  std::vector<std::shared_ptr<SharedRegion>> regions;
  std::int64_t regionsMade = 0;
  // Per rank, a region whose parameter slot holds the store at `revision`, because the
  // update was written there as it was applied (a doorbell call's own update: its worker
  // waits, so it does not read the slot meanwhile); its pull then copies nothing. Reset
  // when the rank gets a new region, so a region made where a freed one was is never
  // taken for it.
  struct SlotHolding {
    const SharedRegion* region = nullptr;
    std::int64_t revision = -1;
  };
  std::vector<SlotHolding> slotHolds;
  // A doorbell call (a PushPull whose worker waits on its region for the answer); {} is
  // none. (No member initializers: it is a default argument inside this class.)
  struct DoorbellCall {
    SharedRegion* region;
    std::uint32_t call;
  };
  // While a doorbell call's push is handled (under the lock): the update it makes also
  // goes into its region's parameter slot (applyOutputLocked) if the call is still
  // current, as a late answer is dropped (net/transport/doorbell.h): a worker that gave up
  // on it may be computing from the slot.
  DoorbellCall pushCall{};
  int pushCallRank = -1;
  // Per rank, the thread answering its region's doorbell (null: none); those of regions a
  // re-join replaced, closed, until their threads have ended. shutdown() moves both out
  // under the lock and joins them outside it (their threads take the lock).
  std::vector<std::unique_ptr<DoorbellServer>> doorbells;
  std::vector<std::unique_ptr<DoorbellServer>> retiredDoorbells;
  // The payload socket's connections (net/transport/payload_socket.h). shutdown() moves
  // them out under the lock and finishes them outside it, as the doorbells.
  std::vector<std::unique_ptr<SocketServer>> socketServers;
  // Chain.
  std::int64_t replicatedVersion = -1;       // chain: the version the tail holds
  std::vector<float> combined;               // chain: Σ w·g of one update (reused)
  // Stateless recovery.
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
  std::vector<char> offered;                 // per rank: rejoined (and offered) during the adoption
  double adoptDeadline = 0;                  // start anyway at this run time
  std::int64_t adoptedVersion = -1;
  std::string adoptedFrom;
  std::vector<float> adoptedWhole;  // sharded shard 0: the whole model adopted (each shard takes its range)
  // Recovery LOCAL: the rejoining workers' copies, averaged at the adoption by their local
  // steps; the version that adoption made and the steps it merged (what the current
  // parameters weigh against a copy that returns later).
  LocalModelAverage localCopies;
  std::int64_t localAdoptionVersion = -1;
  std::int64_t localMerged = 0;
  // Stateless, shards 1..S-1: per rank, its backlog pushes' ranges that shard 0's BACKLOG
  // steps have not added yet, oldest first (a worker flushes its backlog without waiting
  // for them), and the buffers of those added (reused).
  struct BacklogRange {
    std::int64_t call = 0;
    std::vector<float> values;
  };
  std::vector<std::deque<BacklogRange>> backlogRanges;
  std::vector<std::vector<float>> spareRanges;
  // The update record (options.recordPath; null: none) and its scratch buffer.
  std::unique_ptr<UpdateRecordWriter> record;
  std::vector<float> recordScratch;
  // Sharding, shard 0: a sender of the decisions to each other shard (start(); the
  // pointers are moved out by shutdown()); a step, reused; why the run ended when a shard
  // stopped following (empty: it did not).
  std::vector<std::unique_ptr<ShardLogSender>> shardLogs;
  // Shard 0: whom shardLogs[k] goes to (a shard, or a replica of one: chain replication
  // per shard), and where the nodes reach shard i now ([i - 1]: its first address, or the
  // replica that took its place).
  struct ShardFollower {
    int shard = 0;
    std::string address;
    bool head = true;  // the shard's nodes pull from it
    bool live = true;  // its log has not broken
  };
  std::vector<ShardFollower> shardFollowers;
  std::vector<std::string> servingShardAddresses;
  // Shards 1..S-1: whether this one answers the nodes' pulls (a replica: once shard 0's
  // SERVE says it took its shard's place; until then it keeps no answers).
  bool answersPulls = true;
  pb::ShardStep shardStep;
  std::string failure;
  // Shard 0: a shard's log broke (it is gone, or refused a step): the server answers no
  // more calls (UNAVAILABLE; never "stop", so the workers wait for a restarted shard 0)
  // and `dasp server` exits with `failure`. Read without the lock on every call.
  std::atomic<bool> shardGone{false};
  // A sharded server: this shard's initial range (RESTORE of version 0); shard 0 restarted
  // in a run with recovery: the version every shard restores to (-1: none, a first start).
  std::vector<float> initialRange;
  std::int64_t restoreVersion = -1;
  // Sharding, shards 1..S-1: per rank, the range of its latest push and the call that
  // pushed it (-1: none); per rank + 1 (0: the evaluator), the answers shard 0 released
  // that await their pulls, newest last (a few); whether shard 0's stream is open.
  struct Released {
    std::int64_t call = 0;
    std::int64_t version = 0;
    bool stop = false;
    bool abandoned = false;               // shard 0 refused the call's push: no answer
    ParameterStore::Snapshot parameters;  // null: none to send (a worker's pull after stop)
  };
  static constexpr std::size_t kReleasedKept = 8;
  std::vector<std::vector<float>> receivedRange;
  std::vector<std::int64_t> receivedCall;
  // Per rank, the buffer a push is being received into (swapped with receivedRange when
  // whole), and whether one is (a rank has one push in flight).
  std::vector<std::vector<float>> receivingRange;
  std::vector<char> receiving;
  std::vector<std::deque<Released>> released;
  // The server's (a shard's) load since `loadSince` (SHARD_LOAD events: noteLoadLocked;
  // the one server of an unsharded run is shard 0 of 1, and the profile of a measured run
  // reads its apply and serve times).
  double loadSince = 0;
  double loadApplyS = 0, loadServeS = 0;
  // The one stream of shard 0's log this shard follows (a FollowShard reader, or a payload
  // socket connection); null: none yet, or it ended.
  const void* shardLogFrom = nullptr;
  // Checkpoints: when the last copy was taken, and whether one waits for the writer.
  bool checkpointDue = false;                // a copy waits for the writer
  std::int64_t lastCheckpointVersion = 0;
  double lastCheckpointT = 0;

  // --- the checkpoint copy: handed to the writer thread by checkpointDue (see the top) ----
  // Checkpoints: the writer thread writes the copy taken under `mu`.
  std::vector<float> checkpointParams, checkpointMomentum;
  std::int64_t checkpointVersion = 0;
  double checkpointT = 0;

  // --- the owning thread's (start() and shutdown()) -----------------------------------------
  // Declared last, so destroyed first (in reverse order; keep the order): by then
  // shutdown() has stopped the replicator, joined the threads and shut the server down.
  std::unique_ptr<grpc::Server> server;
  std::thread ticker;
  // The pointer is guarded by mu (shutdown() moves it out under the lock and destroys it
  // outside, since its callbacks take the lock); the Replicator is thread-safe.
  std::unique_ptr<Replicator> replicator;    // chain: the link to the successor
  std::unique_ptr<CheckpointDirectory> checkpoints;  // set by start(), then used by the writer
  std::thread checkpointWriter;
  // The payload socket (ps_socket.cpp; none with TLS): its listening socket and port, the
  // pipe that wakes its acceptor, and the acceptor thread.
  int socketListener = -1;
  int socketPort = 0;
  int socketWake[2] = {-1, -1};
  std::thread socketAcceptor;

  // --- clock and small helpers (here) --------------------------------------------------------
  Clock::time_point startPoint() const { return Clock::time_point(Clock::duration(startTicks.load())); }
  void setStartPoint(Clock::time_point t) { startTicks.store(t.time_since_epoch().count()); }
  double sinceStart() const { return std::chrono::duration<double>(Clock::now() - startPoint()).count(); }
  // Run time: 0 until every worker has joined (so nothing before the start, such as join
  // events or the evaluator's first report, carries start-up time), then seconds since.
  // A resumed server continues the run's clock from the moment it starts.
  double now() const {
    if (!started && !clockRunning) return 0.0;
    return options.clock ? options.clock() : sinceStart();
  }
  void setClock(double t) {
    setStartPoint(Clock::now() - std::chrono::duration_cast<Clock::duration>(durationFromSeconds(t)));
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
  grpc::Status shardGoneStatus() const {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, options.name + ": a shard is gone; shard 0 waits for its restart");
  }
  grpc::Status notHead() const {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        options.name + " is a chain replica, not the head");
  }
  std::size_t gradientBytes() const { return static_cast<std::size_t>(store->size()) * sizeof(float); }
  // Sharding: whether there are other shards, and whether this is one of them (not 0).
  bool sharded() const { return options.layout.shards() > 1; }
  bool follower() const { return options.shard > 0; }
  void restartVersionTimesLocked(std::int64_t version, double t) {
    versionTime.assign(1, t);
    versionTimeBase = version;
  }
  double versionTimeLocked(std::int64_t version) const {
    const std::int64_t i = std::max<std::int64_t>(0, version - versionTimeBase);
    return versionTime[std::min(versionTime.size() - 1, static_cast<std::size_t>(i))];
  }
  const char* stateName(int rank) const {
    return rank >= 0 && rank < options.workers ? toString(policy->state(rank)) : "";
  }
  // Chain replication of one server (a sharded server's chains are its shards' replicas).
  bool chainMode() const { return options.spec.recovery().mode() == v1::RecoverySpec::CHAIN && !sharded(); }
  bool forwardsEachUpdate() const {
    return chainMode() && isHead && replicator && options.spec.recovery().forward_every() <= 1 &&
           replicator->hasSuccessor();
  }

  // --- authentication (ps_rpcs.cpp) ----------------------------------------------------------
  grpc::Status authorize(const grpc::CallbackServerContext* ctx, const char* rpc);
  // A call refused for its token (`why`): counted, a REJECT event naming `peer`, and the
  // PERMISSION_DENIED status (authorize(), and the doorbell's calls).
  grpc::Status refuseToken(const char* rpc, const std::string& why, const std::string& peer);
  grpc::ServerUnaryReactor* refusedUnary(grpc::CallbackServerContext* ctx, const char* rpc);

  // --- RPCs (ps_rpcs.cpp; Watch: ps_events.cpp; Replicate: ps_chain.cpp) ------------------------
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* ctx, const pb::JoinRequest* req,
                                 pb::JoinReply* reply) override;
  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const pb::PullRequest* req,
                                 pb::PullReply* reply) override;
  grpc::ServerUnaryReactor* PushPull(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                     pb::PullReply* reply) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* PullChunks(grpc::CallbackServerContext* ctx,
                                                         const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* ctx, const pb::PushRequest* req,
                                 pb::PushReply* reply) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* PushChunks(grpc::CallbackServerContext* ctx,
                                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* ctx, const pb::EvaluationReport* req,
                                   pb::ReportReply* reply) override;
  grpc::ServerUnaryReactor* Control(grpc::CallbackServerContext* ctx, const pb::ControlRequest* req,
                                    pb::ControlReply* reply) override;
  grpc::ServerWriteReactor<pb::EventBatch>* Watch(grpc::CallbackServerContext* ctx, const pb::WatchRequest*) override;
  grpc::ServerUnaryReactor* Replicate(grpc::CallbackServerContext* ctx, const pb::ReplicaUpdate* req,
                                      pb::ReplicaAck* reply) override;
  // Shards 1..S-1, shard 0's log from stream `from` (ps_shards.cpp): claimed by one stream
  // (ALREADY_EXISTS for another), its batches carried out in order (an error ends the
  // log, and is said), released when the stream ends.
  grpc::Status claimShardLogLocked(const void* from);
  grpc::Status followShardLogLocked(const void* from, const pb::ShardLog& batch);
  void endShardLogLocked(const void* from);
  grpc::ServerReadReactor<pb::ShardLog>* FollowShard(grpc::CallbackServerContext* ctx,
                                                     pb::ShardLogReply* reply) override;
  // `call`: the node's PullRequest/PushRequest call_seq (a sharded server's other shards
  // answer the pull shard 0 released with that number).
  void admitPull(PendingPull* reactor, std::int64_t call);
  // `squaredNorm`: the gradient's, when the caller summed it already (as chunks landed).
  // `doorbell`: the push of a doorbell call, whose update is also written into the
  // region's parameter slot (slotHolds).
  grpc::Status handlePush(const pb::PushRequest& req, const float* grad, std::size_t bytes, pb::PushReply* reply,
                          std::optional<double> squaredNorm = std::nullopt, DoorbellCall doorbell = {});
  grpc::Status handlePushOf(const pb::PushRequest& req, SharedRegion* region, pb::PushReply* reply,
                            DoorbellCall doorbell = {});
  // A refused push: counted, a REJECT event (with the push's version and loss; `code` and
  // `norm` when the guard refused it), INVALID_ARGUMENT with `why` and a PushRefusal of
  // `reason` in its details.
  grpc::Status rejectLocked(int rank, const std::string& why, pb::PushRefusal::Reason reason,
                            const pb::PushRequest& req, EventCode code = v1::RunEvent::CODE_UNSPECIFIED,
                            double norm = 0);
  // The fields of each call (ps_validate.cpp): OK, or INVALID_ARGUMENT naming the field and
  // the value. A push's gradient goes through the guard in handlePush.
  grpc::Status checkPushFields(const pb::PushRequest& req) const;
  grpc::Status checkJoinFields(const pb::JoinRequest& req) const;
  grpc::Status checkControlFields(const pb::ControlRequest& req) const;
  grpc::Status checkReportFields(const pb::EvaluationReport& req) const;
  grpc::Status checkReplicaUpdate(const pb::ReplicaUpdate& req) const;
  // A chunked push claims (and gives back) its rank's receive buffer: one at a time.
  bool claimReceiveBuffer(int rank);
  void releaseReceiveBuffer(int rank);

  // --- applying the policy, pulls, start, membership (ps_policy.cpp) ---------------------------
  void applyOutputLocked(double t);
  void answerPullLocked(PendingPull* r, double t);
  void releaseParkedLocked(double t);
  bool mayAnswerLocked(PendingPull* r, double t);
  void maybeStartLocked();
  void cancelPull(PendingPull* r);
  void nodeUpLocked(int rank, double t, const char* why);
  void markDownLocked(int rank, double t, const char* why);

  // --- events (ps_events.cpp) ------------------------------------------------------------------
  pb::ClusterEvent* newEventLocked();
  void publishLocked(pb::ClusterEvent* e);
  void emitDecisionsLocked();
  // The server's load (ps_events.cpp): ApplyTimer and ServeTimer measure the time of an
  // apply and of a call's serving (less the applying done meanwhile on its thread);
  // noteLoadLocked sends a SHARD_LOAD event once a period of a second or more is over.
  class ApplyTimer;
  class ServeTimer;
  static double& applySecondsOfThisThread() {
    thread_local double seconds = 0;
    return seconds;
  }
  void noteLoadLocked(double t);
  // A promotion or chain step is about this server: the event's `target` names it.
  void emitRecoveryLocked(EventCode what, const std::string& detail, std::int64_t version, int rank = -1,
                          std::int64_t count = 0, double ageS = 0, std::int64_t dropped = 0, double outageS = 0);

  // --- recovery: checkpoints, restarts, stateless (ps_recovery.cpp) -----------------------------
  Status restoreBeforeServing();
  Status openCheckpoints();
  void afterUpdateLocked(double t);
  void maybeCheckpointLocked(double t);
  // The copy of the parameters and momentum at this version, handed to the writer thread.
  void takeCheckpointLocked(double t);
  void writeCheckpoints();
  // A worker rejoined during the stateless adoption: the rest get a few seconds from now.
  void noteAdoptionOfferLocked(int rank, double t);
  void finishAdoptionLocked();
  // Workers train copies through an outage: LOCAL, or CHAIN with local_copies.
  bool localMode() const { return trainsLocalCopies(options.spec.recovery()); }
  // Recovery LOCAL: the average of the copies, adopted (finishAdoptionLocked).
  void adoptLocalAverageLocked(double t);
  // Recovery LOCAL: `rank`'s copy (`steps` local steps on version `base`) returned to a
  // server that did not take it into an adoption: merged into the current parameters.
  void mergeReturningCopyLocked(int rank, const std::string& name, const float* copy, std::int64_t base,
                                std::int64_t steps, double t);
  // `clipScale`: the guard's factor the gradient was clipped by (1: none).
  grpc::Status handleBacklogLocked(const pb::PushRequest& req, const float* grad, float clipScale, double t,
                                   pb::PushReply* reply);

  // --- chain (ps_chain.cpp) --------------------------------------------------------------------
  void setUpChain();
  void fillStateLocked(pb::ReplicaUpdate& u) const;
  void snapshotState(pb::ReplicaUpdate& u);
  void promoteLocked(double t);
  bool setNextLocked(const std::string& address, pb::ControlReply* reply, std::string& detail);

  // --- sharding (ps_shards.cpp) ------------------------------------------------------------------
  // start(): the per-rank state of shards 1..S-1, or shard 0's senders (the others listen).
  void setUpShards();
  // Shard 0: appends `shardStep` (filled by the caller) to every other shard's log.
  void logStepLocked();
  void logRankStepLocked(pb::ShardStep::Kind kind, int rank, std::int64_t call = 0);
  // Shard 0's gradient guard judges the whole gradient: this range's squared norm (at a
  // block boundary) continued with the other shards' block sums the push relays; an
  // error when they do not fit the layout.
  grpc::Status wholeSquaredNorm(const pb::PushRequest& req, double& squaredNorm) const;
  // Shards 1..S-1: a worker's join (the rank shard 0 gave it; transports), its push of this
  // shard's range (kept; answered with the block sums), a pull (answered with what shard 0
  // released for its call), and one of shard 0's steps (an error when it cannot be carried
  // out: the shards would no longer hold one model).
  grpc::Status followerJoinLocked(const pb::JoinRequest& req, pb::JoinReply* reply);
  grpc::Status receiveRange(const pb::PushRequest& req, const float* grad, std::size_t bytes, pb::PushReply* reply);
  void admitFollowerPullLocked(PendingPull* r);
  bool answerReleasedLocked(PendingPull* r);
  grpc::Status applyShardStepLocked(const pb::ShardStep& step);

  // --- a sharded server's recovery (ps_shard_recovery.cpp) ---------------------------------------
  // The versions of this shard's checkpoints that read back intact, ascending.
  std::vector<std::int64_t> validCheckpointVersions() const;
  // A restarted shard 0 (start(), before serving): the version every shard restores to,
  // the newest checkpoint all of them hold (0, the initial parameters, without one or
  // under recovery NONE); its own range restored, and the recovery event.
  Status restoreShardsBeforeServing();
  // Every parked pull refused with `status` (and forgotten).
  void refuseParkedLocked(const grpc::Status& status);
  // Shard 0: a shard's log broke (`why`): no more calls are answered (shardGone).
  void loseShardLocked(const std::string& why);
  // Shard 0: the log to shardFollowers[k] broke. A replica leaves its shard's chain; a
  // shard is replaced by its first live replica (SERVE), else lost (loseShardLocked).
  void shardFollowerLostLocked(std::size_t k, const std::string& why);
  // Shards 1..S-1: CHECKPOINT (the range at shard 0's checkpoint, to the writer) and
  // RESTORE (the range as of a version; every node's calls forgotten).
  grpc::Status checkpointRangeLocked(const pb::ShardStep& step);
  grpc::Status restoreRangeLocked(const pb::ShardStep& step);
  // Stateless, sharded: shard 0 sends each other shard its range of the adopted model (or
  // the initial one); shards 1..S-1 queue a backlog push's range, add it to the rank's sum
  // at BACKLOG, and apply the sum at APPLY_BACKLOG, as shard 0 does with its range.
  void restoreAdoptedShardsLocked();
  grpc::Status queueBacklogRangeLocked(std::size_t rank, std::int64_t call);
  grpc::Status addBacklogRangeLocked(const pb::ShardStep& step);
  grpc::Status applyBacklogLocked(const pb::ShardStep& step);

  // --- the update record and the acknowledged version (ps_record.cpp) ---------------------------
  Status openRecord();
  // The state now (parameters, momentum, version) as a record of `kind`.
  void recordStateLocked(UpdateRecordKind kind);
  // The update just applied, as its combined gradient Σ w·g and lr (store->version() after it).
  void recordUpdateLocked(const float* const* gradients, const double* weights, int count, double lr);
  // What a reply vouches for (PullReply/PushReply acked_version): the version, or in a
  // chain that forwards every update, the version the tail holds.
  std::int64_t vouchedVersionLocked() const;

  // --- same-host transports (ps_transport.cpp) --------------------------------------------------
  // start(): the Unix socket (unless cluster.transport is TCP), before the server is built.
  Status addLocalPort(grpc::ServerBuilder& builder);
  // shutdown(): the socket, regions no worker attached, and a directory this server made.
  void removeLocalFiles();
  // Join: what the worker asked for (JoinRequest.transport) and this server offers.
  grpc::Status offerTransportLocked(const pb::JoinRequest& req, int rank, pb::JoinReply* reply);
  std::shared_ptr<SharedRegion> regionOf(int rank);
  grpc::Status noRegion(int rank) const;
  // Join (ps_doorbell.cpp): starts the thread answering `rank`'s new region's doorbell and
  // closes the one of the region it replaces.
  void openDoorbellLocked(int rank, std::shared_ptr<SharedRegion> region);
  // shutdown(): closes every doorbell and hands their threads over, to be joined unlocked.
  std::vector<std::unique_ptr<DoorbellServer>> closeDoorbellsLocked();

  // --- the payload socket (ps_socket.cpp) --------------------------------------------------------
  // start(): listens beside gRPC, on the same host, and starts the acceptor. Not with TLS.
  Status openPayloadSocket();
  void acceptLoop();
  // At most this many connections at once (a worker holds one).
  std::size_t maxSocketConnections() const { return 2 * static_cast<std::size_t>(options.workers) + 4; }
  // shutdown(): stops the acceptor (joined here, without the lock) and finishes every
  // connection, each given `graceS` for a reply in progress.
  void closePayloadSocket(double graceS);

  // --- time-driven decisions (ps_server.cpp) ---------------------------------------------------
  void tickLoop();
  // The run time of the ticker's next decision: the policy's deadline, the adoption's, and
  // the silence check while pulls are parked.
  double nextTickLocked(double t) const;
  // After a push or a parked pull: wakes the ticker only if its next decision is now due
  // before the time it sleeps to. Waking it on every call cost two context switches and a
  // contended lock per iteration (measured: `dasp bench ps`, 1 worker).
  void wakeTickerIfDueLocked();
};

}  // namespace dasp::net
