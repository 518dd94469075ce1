// SPDX-License-Identifier: MIT
#include "net/server/replicator.h"

#include "net/client/ps_client.h"
#include "net/transport/payload_options.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <limits>

namespace dasp::net {
namespace {

constexpr double kCallTimeoutS = 5.0;
constexpr auto kRetryPause = std::chrono::milliseconds(200);

}  // namespace

Replicator::Replicator(std::int64_t parameters, NodeSecurity security, Snapshot snapshot, Done onAck,
                       OnError onError)
    : m_parameters(parameters),
      m_security(std::move(security)),
      m_snapshot(std::move(snapshot)),
      m_onAck(std::move(onAck)),
      m_onError(std::move(onError)) {
  m_thread = std::thread([this] { loop(); });
}

Replicator::~Replicator() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
  for (auto& p : m_queue) {
    if (p.reply) p.reply(false, -1);
  }
}

void Replicator::setSuccessor(const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_successor = address;
    ++m_generation;
    m_needsCatchUp = !address.empty();
  }
  m_cv.notify_all();
}

std::string Replicator::successor() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_successor;
}

bool Replicator::hasSuccessor() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return !m_successor.empty();
}

std::int64_t Replicator::ackedVersion() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_acked;
}

std::unique_ptr<Replicator::Update> Replicator::acquire() {
  std::lock_guard<std::mutex> lock(m_mu);
  if (m_free.empty()) return std::make_unique<Update>();
  auto u = std::move(m_free.back());
  m_free.pop_back();
  return u;
}

void Replicator::enqueue(std::unique_ptr<Update> update, Reply reply) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_queue.push_back({std::move(update), std::move(reply)});
  }
  m_cv.notify_all();
}

void Replicator::loop() {
  std::unique_ptr<dasp::ps::v1::ParameterServer::Stub> stub;
  std::uint64_t stubGeneration = std::numeric_limits<std::uint64_t>::max();
  Update state;  // catch-up message, reused
  bool reported = false;
  std::vector<Pending> finished;
  auto ack = [&](std::int64_t version) {
    for (auto& p : finished) {
      if (p.reply) p.reply(true, version);
    }
    {
      std::lock_guard<std::mutex> lock(m_mu);
      for (auto& p : finished) {
        if (p.update && m_free.size() < 4) m_free.push_back(std::move(p.update));
      }
    }
    finished.clear();
    if (m_onAck) m_onAck(version);
  };

  std::unique_lock<std::mutex> lock(m_mu);
  while (true) {
    m_cv.wait(lock, [&] { return m_stop || !m_queue.empty() || (!m_successor.empty() && m_needsCatchUp); });
    if (m_stop) break;
    if (m_successor.empty()) {
      // This server is the tail: what is queued is held by the whole chain.
      std::int64_t version = m_acked;
      while (!m_queue.empty()) {
        version = std::max(version, m_queue.front().update->version());
        finished.push_back(std::move(m_queue.front()));
        m_queue.pop_front();
      }
      m_acked = version;
      lock.unlock();
      ack(version);
      lock.lock();
      continue;
    }
    const std::uint64_t generation = m_generation;
    const std::string address = m_successor;
    const bool catchUp = m_needsCatchUp;
    m_needsCatchUp = false;
    Update* message = catchUp ? &state : m_queue.front().update.get();
    lock.unlock();

    if (stubGeneration != generation) {
      grpc::ChannelArguments args;
      sizeChannelForPayload(args, m_parameters);
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      stub = dasp::ps::v1::ParameterServer::NewStub(openChannel(address, m_security, args));
      stubGeneration = generation;
      reported = false;
    }
    if (catchUp) m_snapshot(state);  // takes the server's lock, not ours
    grpc::ClientContext context;
    setDeadline(context, kCallTimeoutS);
    attachToken(context, m_security);
    dasp::ps::v1::ReplicaAck reply;
    const grpc::Status status = stub->Replicate(&context, *message, &reply);

    lock.lock();
    if (generation != m_generation) continue;  // the chain changed meanwhile: catch up anew
    if (status.ok()) {
      reported = false;
      const std::int64_t version = reply.version();
      m_acked = std::max(m_acked, version);
      while (!m_queue.empty() && m_queue.front().update->version() <= version) {
        finished.push_back(std::move(m_queue.front()));
        m_queue.pop_front();
      }
      lock.unlock();
      ack(version);
      lock.lock();
      continue;
    }
    // A gap (the successor missed updates) is healed by sending the whole state.
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION || catchUp) m_needsCatchUp = true;
    if (!reported && m_onError) {
      reported = true;
      const std::string text = "replica " + address + " cannot be reached (" + describe(status) +
                               "); updates are kept and retried until the chain is repaired";
      lock.unlock();
      m_onError(text);
      lock.lock();
    }
    m_cv.wait_for(lock, kRetryPause, [&] { return m_stop || generation != m_generation; });
  }
}

}  // namespace dasp::net
