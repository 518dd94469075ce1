// SPDX-License-Identifier: MIT
// The calls a same-host node rings on its shared-memory region's doorbell
// (net/transport/doorbell.h; internal: net/server/ps_server_impl.h): a worker's PushPull,
// and the Push and Pull of a range of a sharded server. Each is handled as its RPC handles
// one: the run token, then the push (handlePushOf), then the pull parked or answered
// through admitPull; only the way in and out differs.
#include "net/server/ps_reactors.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace dasp::net {
namespace {

// How often a parked pull's worker is looked at (its liveness lock; a cancelled call): a
// worker that died waiting loses its parked pull within this, as a gRPC call is cancelled
// when its connection drops. An idle doorbell sleeps longer.
constexpr std::chrono::milliseconds kParkedLook(50);
constexpr std::chrono::seconds kIdleLook(1);

// Answers `call` with a status that is not OK (its message and details), through the block.
void answerWith(Doorbell& doorbell, std::uint32_t call, const grpc::Status& status) {
  doorbell.answer(call, static_cast<int>(status.error_code()), {}, status.error_message(), status.error_details());
}

}  // namespace

// --- DoorbellPull ---------------------------------------------------------------------------

void ParameterServer::Impl::DoorbellPull::setParameters(const ParameterStore::Snapshot& parameters,
                                                       std::size_t bytes, const SharedRegion* holdsThem) {
  if (!m_doorbell.isCurrent(m_call)) return;  // the worker reads the slot for another call now
  if (holdsThem != m_region) std::memcpy(m_region->parameters(), parameters->data(), bytes);
  m_reply.set_parameters_in_shm(true);
}

void ParameterServer::Impl::DoorbellPull::complete() {
  (void)m_reply.SerializeToString(&m_bytes);
  m_doorbell.answer(m_call, static_cast<int>(grpc::StatusCode::OK), m_bytes);
  m_answered.store(true, std::memory_order_release);
}

void ParameterServer::Impl::DoorbellPull::answer(const grpc::Status& status) {
  answerWith(m_doorbell, m_call, status);
  m_answered.store(true, std::memory_order_release);
}

// --- DoorbellServer -------------------------------------------------------------------------

ParameterServer::Impl::DoorbellServer::DoorbellServer(Impl* impl, int rank, std::shared_ptr<SharedRegion> region)
    : m_impl(impl),
      m_rank(rank),
      m_region(std::move(region)),
      m_doorbell(m_region->doorbell()),
      m_thread([this] { loop(); }) {}

ParameterServer::Impl::DoorbellServer::~DoorbellServer() {
  close();
  if (m_thread.joinable()) m_thread.join();
}

void ParameterServer::Impl::DoorbellServer::loop() {
  std::uint32_t seen = 0;
  while (!m_doorbell.isClosed()) {
    if (m_pull && (m_pull->answered() || m_doorbell.cancelledCall() == m_pull->call() || !m_region->peerAlive())) {
      dropPull();
    }
    const std::uint32_t call = m_doorbell.waitForRequest(seen, m_pull ? kParkedLook : kIdleLook);
    if (m_doorbell.isClosed()) break;
    if (call != seen) {
      seen = call;
      handle(call);
    }
  }
  dropPull();
  m_ended.store(true, std::memory_order_release);
}

void ParameterServer::Impl::DoorbellServer::dropPull() {
  if (!m_pull) return;
  m_impl->cancelPull(m_pull.get());  // under the lock: also waits out an answer in progress
  m_pull.reset();
}

std::string ParameterServer::Impl::DoorbellServer::callName(DoorbellKind kind) const {
  const char* name = kind == DoorbellKind::Push ? "Push" : kind == DoorbellKind::Pull ? "Pull" : "PushPull";
  return std::string(name) + " (doorbell of rank " + std::to_string(m_rank) + ")";
}

void ParameterServer::Impl::DoorbellServer::handle(std::uint32_t call) {
  dropPull();  // a worker has one call: a new one supersedes one it gave up on
  auto refuse = [&](const grpc::Status& status) { answerWith(m_doorbell, call, status); };
  // Built only for a refusal: a good call allocates nothing here.
  DoorbellKind kind = DoorbellKind::PushPull;
  auto where = [&] { return callName(kind); };
  if (!m_doorbell.takeRequest(call, kind, m_token, m_request)) {
    refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, where() + ": a request beyond the block's bounds"));
    return;
  }
  if (!tokensEqual(m_token, m_impl->options.security.token)) {
    refuse(m_impl->refuseToken("a doorbell call", m_token.empty() ? "missing run token" : "wrong run token",
                               "the shared memory of rank " + std::to_string(m_rank)));
    return;
  }
  if (!m_impl->isHead) {
    refuse(m_impl->notHead());
    return;
  }
  if (kind == DoorbellKind::Pull) {
    handlePull(call);
    return;
  }
  if (!m_push.ParseFromString(m_request)) {
    refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, where() + ": a request that is not a PushRequest"));
    return;
  }
  if (m_push.rank() != m_rank || !m_push.gradient_in_shm()) {
    refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        where() + ": a push of rank " + std::to_string(m_push.rank()) +
                            (m_push.gradient_in_shm() ? "" : " whose gradient is not in shared memory") +
                            " (the region belongs to rank " + std::to_string(m_rank) + ")"));
    return;
  }
  m_pushed.Clear();
  // A PushPull's update also goes into the slot the worker reads its parameters from.
  const DoorbellCall slotCall = kind == DoorbellKind::PushPull ? DoorbellCall{m_region.get(), call} : DoorbellCall{};
  if (auto status = m_impl->handlePushOf(m_push, m_region.get(), &m_pushed, slotCall); !status.ok()) {
    refuse(status);
    return;
  }
  if (kind == DoorbellKind::Push) {
    (void)m_pushed.SerializeToString(&m_reply);
    m_doorbell.answer(call, static_cast<int>(grpc::StatusCode::OK), m_reply);
    return;
  }
  m_pull = std::make_unique<DoorbellPull>(m_rank, m_impl->now(), m_region.get(), call);
  m_impl->admitPull(m_pull.get(), m_push.call_seq());
}

// A pull rung on the doorbell (a sharded server's node pulls a range): the parameters go
// into the region's slot, as a PushPull's do.
void ParameterServer::Impl::DoorbellServer::handlePull(std::uint32_t call) {
  auto where = [&] { return callName(DoorbellKind::Pull); };
  if (!m_pullRequest.ParseFromString(m_request)) {
    answerWith(m_doorbell, call,
               grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, where() + ": a request that is not a PullRequest"));
    return;
  }
  if (m_pullRequest.rank() != m_rank || !m_pullRequest.parameters_in_shm()) {
    answerWith(m_doorbell, call,
               grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            where() + ": a pull of rank " + std::to_string(m_pullRequest.rank()) +
                                (m_pullRequest.parameters_in_shm() ? "" : " that does not take shared memory") +
                                " (the region belongs to rank " + std::to_string(m_rank) + ")"));
    return;
  }
  m_pull = std::make_unique<DoorbellPull>(m_rank, m_impl->now(), m_region.get(), call, m_pullRequest.min_version());
  m_impl->admitPull(m_pull.get(), m_pullRequest.call_seq());
}

// --- opening and closing ----------------------------------------------------------------------

void ParameterServer::Impl::openDoorbellLocked(int rank, std::shared_ptr<SharedRegion> region) {
  if (shuttingDown) {
    // A join during shutdown: no thread is started that shutdown() would not join; the
    // worker finds the doorbell closed (UNAVAILABLE) as if the server had gone.
    Doorbell(region->doorbell()).close();
    return;
  }
  // Threads of replaced regions that have ended are joined here (at once: they are done).
  retiredDoorbells.erase(std::remove_if(retiredDoorbells.begin(), retiredDoorbells.end(),
                                        [](const std::unique_ptr<DoorbellServer>& d) { return d->ended(); }),
                         retiredDoorbells.end());
  auto& slot = doorbells[static_cast<std::size_t>(rank)];
  if (slot) {
    slot->close();
    retiredDoorbells.push_back(std::move(slot));
  }
  slot = std::make_unique<DoorbellServer>(this, rank, std::move(region));
}

std::vector<std::unique_ptr<ParameterServer::Impl::DoorbellServer>> ParameterServer::Impl::closeDoorbellsLocked() {
  std::vector<std::unique_ptr<DoorbellServer>> all = std::move(retiredDoorbells);
  retiredDoorbells.clear();
  for (auto& d : doorbells) {
    if (!d) continue;
    d->close();
    all.push_back(std::move(d));
  }
  return all;
}

}  // namespace dasp::net
