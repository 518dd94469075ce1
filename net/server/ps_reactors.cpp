// SPDX-License-Identifier: MIT
// The parameter server's call objects (internal: net/server/ps_reactors.h).
#include "net/server/ps_reactors.h"

#include "net/transport/payload_options.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace dasp::net {
namespace {

// A slice over `n` bytes of `parameters` from `offset` that holds the snapshot until gRPC
// drops the slice: gRPC may still be writing a chunk after it has reported the write done.
grpc::Slice sliceHolding(const ParameterStore::Snapshot& parameters, std::size_t offset, std::size_t n) {
  auto* holder = new ParameterStore::Snapshot(parameters);
  // gRPC's constructor takes a void*; it only reads a slice it is given.
  auto* data = const_cast<float*>(parameters->data());
  return grpc::Slice(reinterpret_cast<char*>(data) + offset, n,
                     [](void* held) { delete static_cast<ParameterStore::Snapshot*>(held); }, holder);
}

}  // namespace

// --- PullStreamReactor ----------------------------------------------------------------------

void ParameterServer::Impl::PullStreamReactor::setParameters(const ParameterStore::Snapshot& parameters,
                                                             std::size_t bytes, const SharedRegion*) {
  m_parameters = parameters;
  m_bytes = bytes;
}

void ParameterServer::Impl::PullStreamReactor::writeNext() {
  if (m_offset >= m_bytes && m_sentFirst) {
    m_parameters.reset();  // the chunks' slices hold the snapshot while gRPC needs it
    Finish(grpc::Status::OK);
    return;
  }
  const std::size_t n = std::min(kPayloadChunkBytes, m_bytes - m_offset);
  const std::string header = m_sentFirst ? std::string() : m_header.SerializeAsString();
  m_chunk = encodeChunk(m_sentFirst ? nullptr : &header,
                        n > 0 && m_parameters ? sliceHolding(m_parameters, m_offset, n) : grpc::Slice());
  m_offset += n;
  m_sentFirst = true;
  StartWrite(&m_chunk);
}

// --- PushStreamReactor ----------------------------------------------------------------------

void ParameterServer::Impl::PushStreamReactor::takeHeader(const std::string& bytes) {
  if (m_failed) return;
  pb::PushRequest header;
  if (!header.ParseFromString(bytes)) {
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunked push with a malformed header"));
    return;
  }
  const int r = header.rank();
  if (m_buffer != nullptr) {
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunked push with a second header"));
  } else if (r < 0 || r >= m_impl->options.workers) {
    fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "push from unknown rank " + std::to_string(r)));
  } else if (!m_impl->claimReceiveBuffer(r)) {
    fail(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "a chunked push from worker " + std::to_string(r) + " is already in flight"));
  } else {
    m_claimed = r;
    m_header = std::move(header);
    m_buffer = m_impl->receiveBuffer(r);
  }
}

char* ParameterServer::Impl::PushStreamReactor::payloadTarget(std::size_t n, std::string& refusal) {
  if (m_buffer == nullptr) {
    refusal = "chunked push without a header";
    return nullptr;
  }
  if (m_received + n > m_impl->gradientBytes()) {
    refusal = "gradient from worker " + std::to_string(m_header.rank()) + " has more than the model's " +
              std::to_string(m_impl->store->size()) + " parameters";
    return nullptr;
  }
  char* to = reinterpret_cast<char*>(m_buffer) + m_received;
  m_received += n;
  return to;
}

void ParameterServer::Impl::PushStreamReactor::sumLanded(bool all) {
  if (m_buffer == nullptr) return;
  const std::size_t landed = m_received / sizeof(float);
  const std::size_t upTo = all ? landed : landed / 4 * 4;
  if (upTo <= m_summed) return;
  m_norm.add(m_buffer + m_summed, static_cast<std::int64_t>(upTo - m_summed));
  m_summed = upTo;
}

void ParameterServer::Impl::PushStreamReactor::OnReadDone(bool ok) {
  std::unique_lock<std::mutex> order(m_readOrder);  // not held into Finish or StartRead
  if (!ok) {  // the client has sent everything
    if (!m_failed) sumLanded(true);
    const grpc::Status status =
        m_failed ? m_status : m_impl->handlePush(m_header, m_buffer, m_received, &m_reply, m_norm.squaredNorm());
    if (m_claimed >= 0) m_impl->releaseReceiveBuffer(m_claimed);
    m_claimed = -1;
    if (status.ok()) {
      bool own = false;
      (void)grpc::SerializationTraits<pb::PushReply>::Serialize(m_reply, m_response, &own);
    }
    order.unlock();
    Finish(status);
    return;
  }
  if (!m_failed) {
    // The header comes first in a chunk: it claims the buffer before the payload lands.
    const std::string wrong = decodeChunk(
        m_chunk, [this](const std::string& bytes) { takeHeader(bytes); },
        [this](std::size_t n, std::string& why) -> char* {
          if (m_failed) {
            why = m_status.error_message();
            return nullptr;
          }
          return payloadTarget(n, why);
        });
    if (!wrong.empty() && !m_failed) fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, wrong));
    if (!m_failed) sumLanded(false);
  }
  order.unlock();
  StartRead(&m_chunk);
}

// --- WatchReactor ---------------------------------------------------------------------------

void ParameterServer::Impl::WatchReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  writing = false;
  if (!ok) {
    finishLocked(grpc::Status::CANCELLED);
    return;
  }
  flushLocked();
}

void ParameterServer::Impl::WatchReactor::OnCancel() {
  std::lock_guard<std::mutex> lock(m_impl->mu);
  finishLocked(grpc::Status::CANCELLED);
}

void ParameterServer::Impl::WatchReactor::OnDone() {
  {
    std::lock_guard<std::mutex> lock(m_impl->mu);
    m_impl->watchers.erase(this);
  }
  delete this;
}

void ParameterServer::Impl::WatchReactor::flushLocked() {
  if (writing || done || pending.events_size() == 0) return;
  inFlight.Clear();
  inFlight.Swap(&pending);
  writing = true;
  StartWrite(&inFlight);
}

void ParameterServer::Impl::WatchReactor::finishLocked(const grpc::Status& status) {
  if (done) return;
  done = true;
  Finish(status);
}

}  // namespace dasp::net
