// SPDX-License-Identifier: MIT
#include "net/client/sharded_link.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <utility>

namespace dasp::net {

namespace {

// The number of a node's next call (call_seq), unique to the call among every link this
// process opens and, with a random start per process, among a node's processes: a shard
// keeps shard 0's answers to a node's calls until a pull takes them, so a link made after
// an outage (the evaluator tries one per server, a restarted worker starts afresh) must
// never reuse the number of a call whose answer may still be on its way to a shard.
std::int64_t nextCallNumber() {
  static std::atomic<std::int64_t> next{[] {
    std::random_device random;
    // 31 random bits above 2^31 calls per process: positive, and never reached in a run.
    return static_cast<std::int64_t>(random() & 0x7fffffffU) << 31;
  }()};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

// A thread that runs one task at a time for its shard (a push or a pull of its range):
// run() hands it over, wait() returns once it is done. A thread kept for the link's life,
// so an iteration starts none.
class ShardedLink::Caller {
 public:
  Caller() : m_thread([this] { loop(); }) {}
  ~Caller() {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_stop = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }
  void run(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_task = std::move(task);
      m_busy = true;
    }
    m_cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(m_mu);
    m_cv.wait(lock, [this] { return !m_busy; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_mu);
    while (true) {
      m_cv.wait(lock, [this] { return m_stop || m_task; });
      if (!m_task) return;  // stopping, nothing left to run
      auto task = std::move(m_task);
      m_task = nullptr;
      lock.unlock();
      task();
      lock.lock();
      m_busy = false;
      m_cv.notify_all();
    }
  }

  std::mutex m_mu;
  std::condition_variable m_cv;
  std::function<void()> m_task;  // guarded by m_mu
  bool m_busy = false;           // guarded by m_mu
  bool m_stop = false;           // guarded by m_mu
  std::thread m_thread;
};

Result<std::unique_ptr<ShardedLink>> ShardedLink::join(std::shared_ptr<PsClient> shard0, const pb::JoinRequest& request,
                                                        const pb::JoinReply& reply, const NodeSecurity& security,
                                                        LocalTransport transport, double timeoutS) {
  const std::vector<std::int64_t> begin(reply.shard_begin().begin(), reply.shard_begin().end());
  auto layout = shardLayoutFrom(begin);
  if (!layout) return Status::error("the server's join reply: " + layout.message());
  const int shards = layout->shards();
  if (reply.shard_addresses_size() != shards - 1) {
    return Status::error("the server's join reply names " + std::to_string(reply.shard_addresses_size()) +
                         " other shards for a layout of " + std::to_string(shards));
  }
  if (layout->parameters() != request.parameter_count()) {
    return Status::error("the server's shards hold " + std::to_string(layout->parameters()) + " parameters, the model " +
                         std::to_string(request.parameter_count()));
  }
  std::vector<std::shared_ptr<PsClient>> clients{std::move(shard0)};
  pb::JoinRequest rangeJoin = request;
  rangeJoin.set_requested_rank(reply.rank());
  for (int i = 1; i < shards; ++i) {
    const std::string& address = reply.shard_addresses(i - 1);
    auto client = std::make_shared<PsClient>(address, layout->size(i), security, transport);
    pb::JoinReply joined;
    const grpc::Status st = client->join(rangeJoin, joined, timeoutS);
    if (!st.ok()) {
      return Status::error("cannot join shard " + std::to_string(i) + " at " + address + ": " + describe(st));
    }
    clients.push_back(std::move(client));
  }
  if (reply.shard_replica_addresses_size() != reply.shard_replica_of_size()) {
    return Status::error("the server's join reply names " + std::to_string(reply.shard_replica_addresses_size()) +
                         " shard replicas but the shards of " + std::to_string(reply.shard_replica_of_size()));
  }
  // Only a worker pushes: the evaluator needs no replica.
  std::vector<Replica> replicas;
  for (int k = 0; k < reply.shard_replica_addresses_size() && reply.rank() >= 0; ++k) {
    const int shard = reply.shard_replica_of(k);
    const std::string& address = reply.shard_replica_addresses(k);
    if (shard < 1 || shard >= shards) {
      return Status::error("the server's join reply names a replica of shard " + std::to_string(shard) + " of " +
                           std::to_string(shards));
    }
    Replica replica;
    replica.shard = shard;
    replica.client = std::make_shared<PsClient>(address, layout->size(shard), security, transport);
    pb::JoinReply joined;
    const grpc::Status st = replica.client->join(rangeJoin, joined, timeoutS);
    if (!st.ok()) {
      return Status::error("cannot join the replica of shard " + std::to_string(shard) + " at " + address + ": " +
                           describe(st));
    }
    replicas.push_back(std::move(replica));
  }
  return std::unique_ptr<ShardedLink>(
      new ShardedLink(std::move(layout).value(), std::move(clients), std::move(replicas)));
}

ShardedLink::ShardedLink(ShardLayout layout, std::vector<std::shared_ptr<PsClient>> clients,
                         std::vector<Replica> replicas)
    : m_layout(std::move(layout)), m_clients(std::move(clients)), m_replicas(std::move(replicas)) {
  const auto s = static_cast<std::size_t>(shards());
  const auto onShm = [](const std::shared_ptr<PsClient>& c) { return c->transport() == LocalTransport::Shm; };
  m_inline = std::all_of(m_clients.begin() + 1, m_clients.end(), onShm) &&
             std::all_of(m_replicas.begin(), m_replicas.end(), [&](const Replica& r) { return onShm(r.client); });
  m_callers.resize(s);
  for (std::size_t i = 1; i < s && !m_inline; ++i) m_callers[i] = std::make_unique<Caller>();
  for (auto& r : m_replicas) {
    if (!m_inline) r.caller = std::make_unique<Caller>();
  }
  m_params.resize(static_cast<std::size_t>(m_layout.parameters()));
  m_rangePush.resize(s);
  m_pushReplies.resize(s);
  m_pullReplies.resize(s);
  m_rangeParams.assign(s, nullptr);
  m_status.resize(s);
}

ShardedLink::~ShardedLink() = default;

void ShardedLink::onOtherShards(const std::function<void(int)>& call) {
  if (m_inline) {
    for (int i = 1; i < shards(); ++i) call(i);
    return;
  }
  for (int i = 1; i < shards(); ++i) m_callers[static_cast<std::size_t>(i)]->run([&call, i] { call(i); });
  for (int i = 1; i < shards(); ++i) m_callers[static_cast<std::size_t>(i)]->wait();
}

void ShardedLink::startRangePulls(int rank, std::int64_t call, double timeoutS) {
  m_rangePull.set_rank(rank);
  m_rangePull.set_call_seq(call);
  m_rangePull.set_min_version(-1);
  m_pullTimeoutS = timeoutS;
  for (int i = 1; i < shards(); ++i) {
    const auto s = static_cast<std::size_t>(i);
    m_pullReplies[s].Clear();
    if (m_inline) {
      m_clients[s]->startPull(m_rangePull);
    } else {
      m_callers[s]->run([this, s] {
        m_status[s] = m_clients[s]->pullParameters(m_rangePull, m_pullReplies[s], m_rangeParams[s], m_pullTimeoutS);
      });
    }
  }
}

void ShardedLink::finishRangePulls(const grpc::Status& status0) {
  // Shard 0 answered nothing (it is unreachable, or the call timed out): the ranges' pulls
  // would wait for a release that may never come.
  const bool giveUp = !status0.ok() && !pushRefusalOf(status0);
  for (int i = 1; i < shards(); ++i) {
    const auto s = static_cast<std::size_t>(i);
    if (!m_inline) {
      m_callers[s]->wait();
    } else if (giveUp) {
      m_clients[s]->cancelPull();
      m_status[s] = grpc::Status(grpc::StatusCode::CANCELLED, "shard 0 did not answer the call");
    } else {
      m_status[s] = m_clients[s]->finishPull(m_rangePull, m_pullReplies[s], m_rangeParams[s], m_pullTimeoutS);
    }
  }
}

void ShardedLink::clearRelayed(pb::PushRequest& request) {
  request.clear_relayed_block_sums();
  request.clear_shard_refusal();
}

grpc::Status ShardedLink::pushOtherRanges(pb::PushRequest& request, const float* gradient, std::int64_t call,
                                          double timeoutS) {
  request.set_call_seq(call);
  clearRelayed(request);
  const std::function<void(int)> push = [&](int i) {
    const auto s = static_cast<std::size_t>(i);
    pb::PushRequest& range = m_rangePush[s];
    range.set_rank(request.rank());
    range.set_call_seq(call);
    range.set_base_version(request.base_version());
    range.set_batch_size(request.batch_size());
    range.set_backlog_total(request.backlog_total());  // a stateless worker's backlog
    range.set_backlog_index(request.backlog_index());
    m_pushReplies[s].Clear();
    m_status[s] = m_clients[s]->pushGradient(range, gradient + m_layout.offset(i), m_pushReplies[s], timeoutS);
  };
  const grpc::Status replicas = pushReplicas(request, gradient, call, timeoutS, [&] { onOtherShards(push); });
  for (int i = 1; i < shards(); ++i) {
    const auto s = static_cast<std::size_t>(i);
    if (m_status[s].ok()) continue;
    const auto reason = pushRefusalOf(m_status[s]);
    if (!reason) return m_status[s];  // the range went nowhere: the caller recovers as from any failed push
    // Shard 0 refuses the push for it, and counts and reports it as its own refusals.
    auto* refusal = request.mutable_shard_refusal();
    refusal->set_shard(i);
    refusal->set_reason(*reason);
    refusal->set_message(m_status[s].error_message());
    return grpc::Status::OK;
  }
  // A replica that did not take its range (it is gone): shard 0 must not decide on it.
  if (!replicas.ok()) return replicas;
  for (int i = 1; i < shards(); ++i) {
    for (const double sum : m_pushReplies[static_cast<std::size_t>(i)].block_sums()) request.add_relayed_block_sums(sum);
  }
  return grpc::Status::OK;
}

grpc::Status ShardedLink::pushReplicas(const pb::PushRequest& request, const float* gradient, std::int64_t call,
                                       double timeoutS, const std::function<void()>& pushShards) {
  const auto pushOne = [&](Replica& r) {
    r.push.set_rank(request.rank());
    r.push.set_call_seq(call);
    r.push.set_base_version(request.base_version());
    r.push.set_batch_size(request.batch_size());
    r.push.set_backlog_total(request.backlog_total());
    r.push.set_backlog_index(request.backlog_index());
    r.reply.Clear();
    r.status = r.client->pushGradient(r.push, gradient + m_layout.offset(r.shard), r.reply, timeoutS);
  };
  for (auto& r : m_replicas) {
    if (r.caller) r.caller->run([&pushOne, &r] { pushOne(r); });
  }
  pushShards();
  for (auto& r : m_replicas) {
    if (r.caller) {
      r.caller->wait();
    } else {
      pushOne(r);
    }
  }
  for (const auto& r : m_replicas) {
    if (!r.status.ok()) {
      return grpc::Status(r.status.error_code(),
                          "the replica of shard " + std::to_string(r.shard) + ": " + r.status.error_message(),
                          r.status.error_details());
    }
  }
  return grpc::Status::OK;
}

grpc::Status ShardedLink::assemble(const grpc::Status& status0, const pb::PullReply& reply, const float* params0,
                                   const float*& params) {
  params = nullptr;
  if (!status0.ok()) return status0;
  for (int i = 1; i < shards(); ++i) {
    const auto& st = m_status[static_cast<std::size_t>(i)];
    if (!st.ok()) return grpc::Status(st.error_code(), "shard " + std::to_string(i) + ": " + st.error_message());
  }
  for (int i = 1; i < shards(); ++i) {
    const auto& other = m_pullReplies[static_cast<std::size_t>(i)];
    if (other.version() != reply.version() || other.stop() != reply.stop()) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "a torn pull: shard " + std::to_string(i) + " answered version " +
                              std::to_string(other.version()) + (other.stop() ? " (stop)" : "") + ", shard 0 " +
                              std::to_string(reply.version()) + (reply.stop() ? " (stop)" : ""));
    }
  }
  if (params0 == nullptr) return grpc::Status::OK;  // a worker's pull after stop: no parameters
  m_rangeParams[0] = params0;
  for (int i = 0; i < shards(); ++i) {
    const float* range = m_rangeParams[static_cast<std::size_t>(i)];
    if (range == nullptr) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "shard " + std::to_string(i) + " answered version " + std::to_string(reply.version()) +
                              " without its range of the parameters");
    }
    std::memcpy(m_params.data() + m_layout.offset(i), range, static_cast<std::size_t>(m_layout.size(i)) * sizeof(float));
  }
  ++m_assembled;
  params = m_params.data();
  return grpc::Status::OK;
}

grpc::Status ShardedLink::pullParameters(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                                         double timeoutS) {
  const std::int64_t call = nextCallNumber();
  pb::PullRequest first = request;
  first.set_call_seq(call);
  startRangePulls(request.rank(), call, timeoutS);
  const float* params0 = nullptr;
  const grpc::Status status0 = m_clients[0]->pullParameters(first, reply, params0, timeoutS);
  finishRangePulls(status0);
  return assemble(status0, reply, params0, params);
}

grpc::Status ShardedLink::pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply,
                                       double timeoutS) {
  const std::int64_t call = nextCallNumber();
  grpc::Status status = pushOtherRanges(request, gradient, call, timeoutS);
  if (status.ok()) status = m_clients[0]->pushGradient(request, gradient, reply, timeoutS);
  clearRelayed(request);
  return status;
}

grpc::Status ShardedLink::pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply,
                                   const float*& params, double timeoutS) {
  params = nullptr;
  const std::int64_t call = nextCallNumber();
  if (grpc::Status st = pushOtherRanges(request, gradient, call, timeoutS); !st.ok()) {
    clearRelayed(request);
    return st;
  }
  if (request.shard_refusal().shard() > 0) {
    // Shard 0 refuses the push: no shard answers a pull of this call.
    const float* none = nullptr;
    const grpc::Status refused = m_clients[0]->pushPull(request, gradient, reply, none, timeoutS);
    clearRelayed(request);
    return refused;
  }
  startRangePulls(request.rank(), call, timeoutS);
  const float* params0 = nullptr;
  const grpc::Status status0 = m_clients[0]->pushPull(request, gradient, reply, params0, timeoutS);
  finishRangePulls(status0);
  clearRelayed(request);
  return assemble(status0, reply, params0, params);
}

grpc::Status ShardedLink::report(const pb::EvaluationReport& request, pb::ReportReply& reply, double timeoutS) {
  return m_clients[0]->report(request, reply, timeoutS);
}

std::string ShardedLink::takeTransportNote() {
  std::string notes;
  for (int i = 0; i < shards(); ++i) {
    const std::string note = m_clients[static_cast<std::size_t>(i)]->takeTransportNote();
    if (!note.empty()) notes += (notes.empty() ? "" : "; ") + ("shard " + std::to_string(i) + ": " + note);
  }
  return notes;
}

std::int64_t ShardedLink::bytesSent() const {
  std::int64_t sum = 0;
  for (const auto& c : m_clients) sum += c->bytesSent();
  for (const auto& r : m_replicas) sum += r.client->bytesSent();
  return sum;
}

std::int64_t ShardedLink::bytesReceived() const {
  std::int64_t sum = 0;
  for (const auto& c : m_clients) sum += c->bytesReceived();
  return sum;
}

std::string ShardedLink::describeTransports() const {
  std::string text;
  for (const auto& c : m_clients) {
    text += (text.empty() ? "" : ", ") + std::string(nameOf(c->transport())) +
            (c->onPayloadSocket() ? " (payload socket)" : "");
  }
  return text;
}

}  // namespace dasp::net
