// SPDX-License-Identifier: MIT
#pragma once
// INTERNAL to the parameter server (see net/server/ps_server_impl.h): the call objects of
// ParameterServer::Impl. gRPC calls a reactor's reactions one at a time; what a reactor
// shares with the server is guarded by Impl::mu as each field says.

#include "net/server/ps_server_impl.h"
#include "net/transport/payload_socket.h"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dasp::net {

// A parked (or about to be answered) pull, unary or chunked. Answered or cancelled
// exactly once, under Impl::mu.
class ParameterServer::Impl::PendingPull {
 public:
  PendingPull(int rank, double arrivedAt, std::int64_t minVersion)
      : m_rank(rank), m_arrivedAt(arrivedAt), m_minVersion(minVersion) {}
  virtual ~PendingPull() = default;
  int rank() const { return m_rank; }
  double arrivedAt() const { return m_arrivedAt; }
  std::int64_t minVersion() const { return m_minVersion; }
  virtual pb::PullReply& header() = 0;
  // The version to send: `bytes` of `parameters`, copied or (a chunked pull) held and sent.
  // `holdsThem`: a region whose parameter slot holds them already (Impl::slotHolds), or null.
  virtual void setParameters(const ParameterStore::Snapshot& parameters, std::size_t bytes,
                             const SharedRegion* holdsThem) = 0;
  virtual void complete() = 0;   // the header (and parameters) are set: send
  virtual void abandon() = 0;    // finish with CANCELLED
  virtual void refuse(const grpc::Status& status) = 0;  // finish with `status`, never parked
  bool finished = false;         // guarded by Impl::mu
  // Chain with per-update forwarding: the policy has released this pull, which now waits
  // until the tail holds `ackVersion` (everything applied when it was released).
  // Both guarded by Impl::mu.
  bool cleared = false;
  std::int64_t ackVersion = 0;
  // The node's call number (admitPull): a sharded server's shards answer the same call
  // with the same version. Guarded by Impl::mu.
  std::int64_t call = 0;

 private:
  int m_rank;
  double m_arrivedAt;
  std::int64_t m_minVersion;
};

// A unary pull. With a shared-memory region (the worker asked for it), the parameters are
// copied into the region's parameter slot, not into the reply.
class ParameterServer::Impl::PullReactor final : public grpc::ServerUnaryReactor, public PendingPull {
 public:
  PullReactor(Impl* impl, int rank, pb::PullReply* reply, double arrivedAt, std::int64_t minVersion,
              std::shared_ptr<SharedRegion> region = nullptr)
      : PendingPull(rank, arrivedAt, minVersion), m_impl(impl), m_reply(reply), m_region(std::move(region)) {}
  void OnCancel() override { m_impl->cancelPull(this); }
  void OnDone() override { delete this; }
  pb::PullReply& header() override { return *m_reply; }
  void setParameters(const ParameterStore::Snapshot& parameters, std::size_t bytes,
                     const SharedRegion* holdsThem) override {
    if (m_region) {
      if (holdsThem != m_region.get()) std::memcpy(m_region->parameters(), parameters->data(), bytes);
      m_reply->set_parameters_in_shm(true);
      return;
    }
    m_reply->mutable_parameters()->assign(reinterpret_cast<const char*>(parameters->data()), bytes);
  }
  void complete() override { Finish(grpc::Status::OK); }
  void abandon() override { Finish(grpc::Status::CANCELLED); }
  void refuse(const grpc::Status& status) override { Finish(status); }

 private:
  Impl* m_impl;
  pb::PullReply* m_reply;
  std::shared_ptr<SharedRegion> m_region;
};

// A chunked pull: it holds the store's snapshot of the version it answers with (no copy),
// and writes it in chunks whose payload slices point into the snapshot, which no update
// changes while the call holds it (ParameterStore). Its own fields are touched by
// complete() (under Impl::mu, before the first write) and then only by the write sequence
// (one write in flight). It drops the snapshot once the last chunk is written; each
// chunk's slice holds it until gRPC has sent that chunk.
class ParameterServer::Impl::PullStreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                                                       public PendingPull {
 public:
  PullStreamReactor(Impl* impl, int rank, double arrivedAt, std::int64_t minVersion)
      : PendingPull(rank, arrivedAt, minVersion), m_impl(impl) {}
  void OnCancel() override { m_impl->cancelPull(this); }
  void OnDone() override { delete this; }
  void OnWriteDone(bool ok) override {
    if (!ok) return;  // the call is cancelled or broken; OnDone follows
    writeNext();
  }
  pb::PullReply& header() override { return m_header; }
  void setParameters(const ParameterStore::Snapshot& parameters, std::size_t bytes,
                     const SharedRegion* holdsThem) override;
  void complete() override { writeNext(); }
  void abandon() override { Finish(grpc::Status::CANCELLED); }
  void refuse(const grpc::Status& status) override { Finish(status); }

 private:
  void writeNext();
  Impl* m_impl;
  pb::PullReply m_header;
  grpc::ByteBuffer m_chunk;  // the chunk being written
  ParameterStore::Snapshot m_parameters;
  std::size_t m_bytes = 0;
  std::size_t m_offset = 0;
  bool m_sentFirst = false;
};

// A chunked push: chunks are gathered into the rank's receive buffer (allocated once),
// then handled as one push. The gradient's norm is summed as each chunk lands, while it is
// in cache, so the guard needs no pass of its own. Its fields are its own (one read in
// flight at a time). It claims the buffer on the header (one chunked push per rank at a
// time) and gives it back once the push is handled, or when the call ends.
class ParameterServer::Impl::PushStreamReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PushStreamReactor(Impl* impl, grpc::ByteBuffer* response) : m_impl(impl), m_response(response) {
    StartRead(&m_chunk);
  }
  void OnReadDone(bool ok) override;
  void OnDone() override {
    if (m_claimed >= 0) m_impl->releaseReceiveBuffer(m_claimed);
    delete this;
  }

 private:
  void fail(grpc::Status status) {
    m_failed = true;
    m_status = std::move(status);
  }
  // The payload of a chunk: into the claimed receive buffer (nullptr and `refusal` when
  // there is none yet or it would overflow).
  char* payloadTarget(std::size_t n, std::string& refusal);
  void takeHeader(const std::string& bytes);
  // Adds the landed values not yet summed to the norm: whole groups of 4 (so that the sum
  // equals gradientNorm()'s), and with `all` the rest too.
  void sumLanded(bool all);
  Impl* m_impl;
  grpc::ByteBuffer* m_response;
  pb::PushReply m_reply;
  grpc::ByteBuffer m_chunk;
  pb::PushRequest m_header;
  float* m_buffer = nullptr;
  std::size_t m_received = 0;
  std::size_t m_summed = 0;  // values of m_buffer added to m_norm
  GradientNormSum m_norm;
  int m_claimed = -1;  // the rank whose receive buffer this call holds
  bool m_failed = false;
  grpc::Status m_status;
  // Held by each OnReadDone. gRPC runs them one at a time, but on any of its threads and
  // ordered by its own synchronization, which ThreadSanitizer does not see (gRPC is not
  // built with it): the lock states the order, so the chunks one thread gathered happen
  // before the push another thread applies. Never contended.
  std::mutex m_readOrder;
};

// One Watch subscriber: events are appended under Impl::mu and written in batches, one
// write in flight at a time. Its public fields are guarded by Impl::mu.
class ParameterServer::Impl::WatchReactor final : public grpc::ServerWriteReactor<pb::EventBatch> {
 public:
  explicit WatchReactor(Impl* impl) : m_impl(impl) {}
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  // Called with Impl::mu held.
  void flushLocked();
  void finishLocked(const grpc::Status& status);
  pb::EventBatch pending;
  pb::EventBatch inFlight;
  bool writing = false;
  bool done = false;

 private:
  Impl* m_impl;
};

// The time of one apply (made under Impl::mu, as applies are): added to the server's (or
// the shard's) load and to its thread's apply seconds (a ServeTimer around it subtracts
// them).
class ParameterServer::Impl::ApplyTimer {
 public:
  explicit ApplyTimer(Impl* impl) : m_impl(impl), m_start(Clock::now()) {}
  ~ApplyTimer() {
    const double s = std::chrono::duration<double>(Clock::now() - m_start).count();
    m_impl->loadApplyS += s;
    applySecondsOfThisThread() += s;
  }
  ApplyTimer(const ApplyTimer&) = delete;
  ApplyTimer& operator=(const ApplyTimer&) = delete;

 private:
  Impl* m_impl;
  Clock::time_point m_start;
};

// The serving time of one call: its time less what its thread spent applying meanwhile,
// counted when it ends. Its destructor takes Impl::mu: it must be made before any lock of
// its scope (then it ends after them), or with `locked` when the caller holds mu for the
// timer's whole life.
class ParameterServer::Impl::ServeTimer {
 public:
  explicit ServeTimer(Impl* impl, bool locked = false)
      : m_impl(impl), m_locked(locked), m_start(Clock::now()), m_applyBefore(applySecondsOfThisThread()) {}
  ~ServeTimer() {
    const double s = std::chrono::duration<double>(Clock::now() - m_start).count() -
                     (applySecondsOfThisThread() - m_applyBefore);
    if (m_locked) {
      count(s);
      return;
    }
    std::lock_guard<std::mutex> lock(m_impl->mu);
    count(s);
  }
  ServeTimer(const ServeTimer&) = delete;
  ServeTimer& operator=(const ServeTimer&) = delete;

 private:
  void count(double s) {
    m_impl->loadServeS += std::max(0.0, s);
    m_impl->noteLoadLocked(m_impl->now());
  }
  Impl* m_impl;
  bool m_locked;
  Clock::time_point m_start;
  double m_applyBefore;
};

// The pull of a PushPull or Pull rung on a region's doorbell (ps_doorbell.cpp): answered through
// the doorbell block, its parameters into the region's parameter slot — unless the worker
// has given up on the call (it then reads that slot for a gRPC pull instead). Owned by the
// region's DoorbellServer; answered (once, under Impl::mu) by whichever thread releases it.
class ParameterServer::Impl::DoorbellPull final : public PendingPull {
 public:
  DoorbellPull(int rank, double arrivedAt, SharedRegion* region, std::uint32_t call, std::int64_t minVersion = -1)
      : PendingPull(rank, arrivedAt, minVersion), m_region(region), m_doorbell(region->doorbell()), m_call(call) {}
  std::uint32_t call() const { return m_call; }
  bool answered() const { return m_answered.load(std::memory_order_acquire); }
  pb::PullReply& header() override { return m_reply; }
  void setParameters(const ParameterStore::Snapshot& parameters, std::size_t bytes,
                     const SharedRegion* holdsThem) override;
  void complete() override;
  void abandon() override { answer(grpc::Status(grpc::StatusCode::CANCELLED, "the pull was cancelled")); }
  void refuse(const grpc::Status& status) override { answer(status); }
  // Answers with `status` (not OK), through the block.
  void answer(const grpc::Status& status);

 private:
  SharedRegion* m_region;
  Doorbell m_doorbell;
  std::uint32_t m_call;
  pb::PullReply m_reply;
  std::string m_bytes;  // the serialized reply
  std::atomic<bool> m_answered{false};
};

// The thread that answers one region's doorbell: it sleeps on the block, takes each call
// (the run token, the rank, the push through handlePushOf as PushPull does), answers a
// Push with its PushReply, parks a pull like any other, and drops a parked pull whose worker gave up on it or is gone (the
// region's liveness lock). Made and closed under Impl::mu (openDoorbellLocked); close()
// only flags and wakes, so it may be called with the lock held; the destructor joins the
// thread and must be called without it.
class ParameterServer::Impl::DoorbellServer {
 public:
  DoorbellServer(Impl* impl, int rank, std::shared_ptr<SharedRegion> region);
  ~DoorbellServer();
  DoorbellServer(const DoorbellServer&) = delete;
  DoorbellServer& operator=(const DoorbellServer&) = delete;
  void close() { m_doorbell.close(); }
  bool ended() const { return m_ended.load(std::memory_order_acquire); }

 private:
  void loop();
  void handle(std::uint32_t call);
  void handlePull(std::uint32_t call);
  std::string callName(DoorbellKind kind) const;  // "Pull (doorbell of rank 3)", for errors
  // The parked pull is given up (cancelled if still parked) and freed.
  void dropPull();
  Impl* m_impl;
  int m_rank;
  std::shared_ptr<SharedRegion> m_region;
  Doorbell m_doorbell;
  // The thread's own.
  std::unique_ptr<DoorbellPull> m_pull;
  std::string m_token, m_request, m_reply;
  pb::PushRequest m_push;
  pb::PullRequest m_pullRequest;
  pb::PushReply m_pushed;
  std::atomic<bool> m_ended{false};
  std::thread m_thread;  // last: starts once the rest is built
};

// The pull of a call on the payload socket (ps_socket.cpp): answered under Impl::mu by
// whichever thread releases it, which only keeps the reply and the snapshot and wakes the
// connection's thread; that thread sends them, outside the lock.
class ParameterServer::Impl::SocketPull final : public PendingPull {
 public:
  SocketPull(int rank, double arrivedAt, std::int64_t minVersion, std::condition_variable& answered)
      : PendingPull(rank, arrivedAt, minVersion), m_answered(answered) {}
  pb::PullReply& header() override { return m_reply; }
  void setParameters(const ParameterStore::Snapshot& parameters, std::size_t bytes, const SharedRegion*) override {
    m_parameters = parameters;
    m_bytes = bytes;
  }
  void complete() override { m_answered.notify_all(); }
  void abandon() override { refuse(grpc::Status(grpc::StatusCode::CANCELLED, "the pull was cancelled")); }
  void refuse(const grpc::Status& status) override {
    m_status = status;
    m_answered.notify_all();
  }
  // Read by the connection's thread once `finished` is set (under Impl::mu).
  const grpc::Status& status() const { return m_status; }
  const float* parameters() const { return m_parameters ? m_parameters->data() : nullptr; }
  std::size_t bytes() const { return m_parameters ? m_bytes : 0; }

 private:
  std::condition_variable& m_answered;
  pb::PullReply m_reply;
  grpc::Status m_status;
  ParameterStore::Snapshot m_parameters;
  std::size_t m_bytes = 0;
};

// One connection to the payload socket and its thread (ps_socket.cpp): it reads one call
// at a time (net/transport/payload_socket.h), checks the run token of each, handles a push
// as PushChunks does (the payload straight into the connection's own buffer, allocated once,
// its norm summed as it lands) and parks a pull like any other. A connection must make a call with the
// right token within kFirstCallS of connecting; a malformed call or a wrong token ends it.
// Made under Impl::mu by the acceptor; close() only flags and wakes, so it may be called
// with the lock held; finish() waits out a reply being sent, then joins, without it.
class ParameterServer::Impl::SocketServer {
 public:
  static constexpr double kFirstCallS = 10;  // a connection that says nothing is closed
  static constexpr double kCallS = 60;       // the rest of a call, once its header came
  // A batch of shard 0's log: a decision names every gradient it applies (65,536 workers'
  // take well under this), as the gRPC stream's 64 MB limit does.
  static constexpr std::uint64_t kShardLogMax = 64ull << 20;
  SocketServer(Impl* impl, int fd);
  ~SocketServer() { finish(0); }
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;
  void close();
  // Gives a reply in progress `graceS` to go out, then breaks the connection and joins.
  void finish(double graceS);
  bool ended() const { return m_ended.load(std::memory_order_acquire); }

 private:
  void loop();
  // One call after its header; false when the connection must end.
  bool serve(const SocketCallHeader& header);
  bool servePush(const SocketCallHeader& header, SocketClock::time_point deadline);
  bool servePull(int rank, std::int64_t minVersion, std::int64_t call);
  bool serveShardLog(const SocketCallHeader& header, SocketClock::time_point deadline);
  // Parks `pull` until it is answered; false (the pull cancelled) when the worker goes or
  // the server closes.
  bool awaitAnswer(SocketPull& pull);
  // A call refused before its payload is read: the payload is read and dropped, and the
  // connection goes on (false: it cannot).
  bool refuseUnread(const SocketCallHeader& header, SocketClock::time_point deadline, const grpc::Status& status);
  // Reads and drops `n` payload bytes of a call that is refused, when a sane worker could
  // have sent them (false: too many, or the connection failed).
  bool drain(std::uint64_t n, SocketClock::time_point deadline);
  bool reply(const grpc::Status& status, const std::string& body, const float* payload, std::size_t bytes);
  Impl* m_impl;
  int m_fd;
  // The thread's own.
  bool m_authenticated = false;
  std::string m_token, m_request, m_body;
  std::vector<float> m_gradient;  // a push's payload (handlePush copies what it keeps)
  pb::PushRequest m_push;
  pb::PushReply m_pushed;
  pb::PullRequest m_pull;
  pb::ShardLog m_log;
  std::condition_variable m_answered;  // waited on with Impl::mu
  std::atomic<bool> m_closing{false};
  std::atomic<bool> m_ended{false};
  std::mutex m_endMu;
  std::condition_variable m_endCv;
  std::thread m_thread;  // last: starts once the rest is built
};

// Streaming calls refused before they start (a missing or wrong run token): the reactor
// only finishes with the status and deletes itself when gRPC is done with it.
template <typename Message>
class ParameterServer::Impl::RefusedWriter final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit RefusedWriter(grpc::Status status) { this->Finish(std::move(status)); }
  void OnDone() override { delete this; }
};
template <typename Message>
class ParameterServer::Impl::RefusedReader final : public grpc::ServerReadReactor<Message> {
 public:
  explicit RefusedReader(grpc::Status status) { this->Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace dasp::net
