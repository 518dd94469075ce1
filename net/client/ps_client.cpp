// SPDX-License-Identifier: MIT
#include "net/client/ps_client.h"

#include "net/client/link_emulation.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace dasp::net {

void setDeadline(grpc::ClientContext& context, double seconds) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6)));
}

// The server refused a push (the INVALID_ARGUMENT status carries a PushRefusal): the
// reason, or nullopt for any other status.
std::optional<ps::v1::PushRefusal::Reason> pushRefusalOf(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) return std::nullopt;
  ps::v1::PushRefusal refusal;
  if (!refusal.ParseFromString(status.error_details())) return ps::v1::PushRefusal::REASON_UNSPECIFIED;
  return refusal.reason();
}

std::string describe(const grpc::Status& status) {
  static const char* names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
                                "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  std::string text = code >= 0 && code < 17 ? names[code] : std::to_string(code);
  if (!status.error_message().empty()) text += ": " + status.error_message();
  return text;
}

namespace {
constexpr std::size_t kChunkThreshold = 4u << 20;
constexpr std::size_t kChunkBytes = 2u << 20;

// A call over this process's link (LinkCut): held before it leaves and its reply held after
// it arrives while the link is cut, and DEADLINE_EXCEEDED when the deadline passes first.
// A reply held past the deadline is lost to the caller although the server acted on the
// request, as over a real cut link.
template <typename Call>
grpc::Status throughLink(double timeoutS, Call&& call) {
  const auto deadline = LinkCut::Clock::now() + std::chrono::duration_cast<LinkCut::Clock::duration>(
                                                    std::chrono::duration<double>(timeoutS));
  const grpc::Status cut(grpc::StatusCode::DEADLINE_EXCEEDED,
                         "the link to the server is cut (DISCONNECT drill): no reply within the deadline");
  if (!LinkCut::waitUntilUp(deadline)) return cut;
  grpc::Status status = call();
  if (!LinkCut::waitUntilUp(deadline)) return cut;
  return status;
}
}  // namespace

PsClient::PsClient(const std::string& address, std::int64_t parameters, NodeSecurity security)
    : m_address(address),
      m_security(std::move(security)),
      m_parameters(parameters),
      m_chunked(static_cast<std::size_t>(parameters) * sizeof(float) > kChunkThreshold) {
  grpc::ChannelArguments args;
  const std::int64_t bytes = parameters * 4 + (16 << 20);
  const int limit = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(bytes, 64 << 20),
                                                            std::numeric_limits<int>::max()));
  args.SetMaxReceiveMessageSize(limit);
  args.SetMaxSendMessageSize(limit);
  // Windows and frames sized for model-sized messages (see the server's options).
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1);
  // Reconnect quickly after a server restart instead of gRPC's default growing backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  m_channel = openChannel(address, m_security, args);
  m_stub = pb::ParameterServer::NewStub(m_channel);
}

grpc::Status PsClient::join(const pb::JoinRequest& request, pb::JoinReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  return throughLink(timeoutS, [&] { return m_stub->Join(&context, request, &reply); });
}

grpc::Status PsClient::pull(const pb::PullRequest& request, pb::PullReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  auto status = throughLink(timeoutS, [&] { return m_stub->Pull(&context, request, &reply); });
  if (status.ok()) m_bytesReceived += static_cast<std::int64_t>(reply.parameters().size());
  return status;
}

grpc::Status PsClient::push(const pb::PushRequest& request, pb::PushReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  auto status = throughLink(timeoutS, [&] { return m_stub->Push(&context, request, &reply); });
  if (status.ok()) m_bytesSent += static_cast<std::int64_t>(request.gradient().size());
  return status;
}

grpc::Status PsClient::report(const pb::EvaluationReport& request, pb::ReportReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  return throughLink(timeoutS, [&] { return m_stub->Report(&context, request, &reply); });
}

grpc::Status PsClient::control(const pb::ControlRequest& request, pb::ControlReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  return throughLink(timeoutS, [&] { return m_stub->Control(&context, request, &reply); });
}

grpc::Status PsClient::pullParameters(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                                      double timeoutS) {
  params = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  if (!m_chunked) {
    auto status = pull(request, reply, timeoutS);
    if (status.ok() && reply.parameters().size() == bytes) {
      params = reinterpret_cast<const float*>(reply.parameters().data());
    }
    return status;
  }
  return throughLink(timeoutS, [&]() -> grpc::Status {
    grpc::ClientContext context;
    prepare(context, timeoutS);
    auto reader = m_stub->PullChunks(&context, request);
    m_pullBuffer.resize(bytes);
    std::size_t received = 0;
    bool first = true;
    while (reader->Read(&m_pullChunk)) {
      if (first) {
        reply = m_pullChunk.header();
        first = false;
      }
      const auto& data = m_pullChunk.data();
      if (received + data.size() > bytes) {
        context.TryCancel();
        (void)reader->Finish();
        return grpc::Status(grpc::StatusCode::DATA_LOSS, "server sent more parameter bytes than the model has");
      }
      std::memcpy(m_pullBuffer.data() + received, data.data(), data.size());
      received += data.size();
    }
    auto status = reader->Finish();
    if (!status.ok()) return status;
    m_bytesReceived += static_cast<std::int64_t>(received);
    if (received == bytes) params = reinterpret_cast<const float*>(m_pullBuffer.data());
    return status;
  });
}

grpc::Status PsClient::pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply,
                                    double timeoutS) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  if (!m_chunked) {
    request.mutable_gradient()->assign(reinterpret_cast<const char*>(gradient), bytes);
    return push(request, reply, timeoutS);
  }
  return throughLink(timeoutS, [&]() -> grpc::Status {
    grpc::ClientContext context;
    prepare(context, timeoutS);
    auto writer = m_stub->PushChunks(&context, &reply);
    request.clear_gradient();
    *m_pushChunk.mutable_header() = request;
    const char* data = reinterpret_cast<const char*>(gradient);
    bool ok = true;
    for (std::size_t offset = 0; ok && offset < bytes; offset += kChunkBytes) {
      m_pushChunk.mutable_data()->assign(data + offset, std::min(kChunkBytes, bytes - offset));
      ok = writer->Write(m_pushChunk);
      m_pushChunk.clear_header();
    }
    writer->WritesDone();
    auto status = writer->Finish();
    if (status.ok()) m_bytesSent += static_cast<std::int64_t>(bytes);
    return status;
  });
}

grpc::Status PsClient::pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply,
                                const float*& params, double timeoutS) {
  params = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  request.mutable_gradient()->assign(reinterpret_cast<const char*>(gradient), bytes);
  grpc::ClientContext context;
  prepare(context, timeoutS);
  auto status = throughLink(timeoutS, [&] { return m_stub->PushPull(&context, request, &reply); });
  if (!status.ok()) return status;
  m_bytesSent += static_cast<std::int64_t>(bytes);
  m_bytesReceived += static_cast<std::int64_t>(reply.parameters().size());
  if (reply.parameters().size() == bytes) params = reinterpret_cast<const float*>(reply.parameters().data());
  return status;
}

void PsClient::prepare(grpc::ClientContext& context, double timeoutS) const {
  setDeadline(context, timeoutS);
  attachToken(context, m_security);
}

std::unique_ptr<grpc::ClientReader<pb::EventBatch>> PsClient::watch(grpc::ClientContext& context) {
  attachToken(context, m_security);
  return m_stub->Watch(&context, pb::WatchRequest());
}

}  // namespace dasp::net
