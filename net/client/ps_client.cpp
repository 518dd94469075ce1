// SPDX-License-Identifier: MIT
#include "net/client/ps_client.h"
#include "core/common/durations.h"
#include "core/params/gradient_guard.h"

#include "net/client/link_emulation.h"
#include "net/transport/chunk_codec.h"
#include "net/transport/payload_options.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

namespace dasp::net {

void setDeadline(grpc::ClientContext& context, double seconds) {
  context.set_deadline(deadlineIn<std::chrono::system_clock>(seconds));
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
// The chunked calls, made raw (ByteBuffer) to keep Protobuf out of the payload's way.
constexpr char kPullChunksMethod[] = "/dasp.ps.v1.ParameterServer/PullChunks";
constexpr char kPushChunksMethod[] = "/dasp.ps.v1.ParameterServer/PushChunks";

// A call over this process's link (LinkCut): held before it leaves and its reply held after
// it arrives while the link is cut, and DEADLINE_EXCEEDED when the deadline passes first.
// A reply held past the deadline is lost to the caller although the server acted on the
// request, as over a real cut link.
template <typename Call>
auto throughLink(double timeoutS, Call&& call) -> decltype(call()) {
  const auto deadline = deadlineIn<LinkCut::Clock>(timeoutS);
  const grpc::Status cut(grpc::StatusCode::DEADLINE_EXCEEDED,
                         "the link to the server is cut (DISCONNECT drill): no reply within the deadline");
  if (!LinkCut::waitUntilUp(deadline)) return cut;
  auto status = call();
  if (!LinkCut::waitUntilUp(deadline)) return cut;
  return status;
}
}  // namespace

std::optional<LocalTransport> localTransportNamed(const std::string& name) {
  if (name == "tcp") return LocalTransport::Tcp;
  if (name == "unix") return LocalTransport::Unix;
  if (name == "shm") return LocalTransport::Shm;
  if (name == "auto") return LocalTransport::Auto;
  return std::nullopt;
}

const char* nameOf(LocalTransport transport) {
  switch (transport) {
    case LocalTransport::Tcp: return "tcp";
    case LocalTransport::Unix: return "unix";
    case LocalTransport::Shm: return "shm";
    case LocalTransport::Auto: return "auto";
  }
  return "tcp";
}

namespace {
grpc::ChannelArguments channelArguments(std::int64_t parameters) {
  grpc::ChannelArguments args;
  sizeChannelForPayload(args, parameters);
  // Reconnect quickly after a server restart instead of gRPC's default growing backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return args;
}
}  // namespace

PsClient::PsClient(const std::string& address, std::int64_t parameters, NodeSecurity security,
                   LocalTransport transport)
    : m_address(address),
      m_security(std::move(security)),
      m_parameters(parameters),
      m_chunked(static_cast<std::size_t>(parameters) * sizeof(float) > kChunkThreshold),
      m_requested(transport) {
  openTcp();
}

PsClient::~PsClient() = default;

void PsClient::openTcp() {
  m_channel = openChannel(m_address, m_security, channelArguments(m_parameters));
  m_stub = pb::ParameterServer::NewStub(m_channel);
  m_transport = LocalTransport::Tcp;
  m_region.reset();
  m_link.reset();
}

grpc::Status PsClient::join(const pb::JoinRequest& request, pb::JoinReply& reply, double timeoutS) {
  const bool local = m_requested != LocalTransport::Tcp && request.role() == "worker";
  // Every join starts over TCP (a rejoin may reach another server, which offers afresh).
  if (m_transport != LocalTransport::Tcp) openTcp();
  m_link.reset();
  m_fallback.clear();
  pb::JoinRequest asking;
  if (local) {
    asking = request;
    asking.set_transport(m_requested == LocalTransport::Unix ? "unix" : "shm");
  }
  grpc::ClientContext context;
  prepare(context, timeoutS);
  auto status = throughLink(timeoutS, [&] { return m_stub->Join(&context, local ? asking : request, &reply); });
  if (!status.ok()) return status;
  if (reply.shard_begin_size() >= 2 && request.role() != "probe") {
    // Shard 0 of a sharded server owns the first range: every payload to and from it is
    // that range (the channel's limits, set for the whole model, are larger than needed).
    m_parameters = reply.shard_begin(1);
    m_chunked = static_cast<std::size_t>(m_parameters) * sizeof(float) > kChunkThreshold;
  }
  if (local) status = takeOffer(reply);
  if (status.ok() && m_transport == LocalTransport::Tcp && m_payloadSocket && reply.payload_port() > 0 &&
      request.role() == "worker") {
    m_link = std::make_unique<PayloadLink>(hostOf(m_address), reply.payload_port());
  }
  return status;
}

grpc::Status PsClient::takeOffer(const pb::JoinReply& reply) {
  m_fallback.clear();
  std::string why;
  std::unique_ptr<SharedRegion> region;
  if (reply.unix_address().empty()) {
    why = "the server offers no Unix socket (cluster.transport TCP, or its path is too long)";
  } else if (m_requested != LocalTransport::Unix) {
    auto attached = SharedRegion::attach(reply.shm_path(), reply.shm_nonce(), m_parameters);
    if (attached) {
      region = std::move(attached).value();
    } else {
      why = attached.message();
    }
  }
  if (!why.empty()) {
    if (m_requested != LocalTransport::Auto) {
      return grpc::Status(grpc::StatusCode::ABORTED,
                          std::string("cluster.transport ") + nameOf(m_requested) + " is not possible: " + why);
    }
    m_fallback = why;
    return grpc::Status::OK;  // Auto: TCP, as joined
  }
  // The Unix socket: local credentials (the kernel vouches that the peer is on this host);
  // the run token still goes with every call. Message limits as for TCP.
  m_channel = grpc::CreateCustomChannel(reply.unix_address(), grpc::experimental::LocalCredentials(UDS),
                                        channelArguments(m_parameters));
  m_stub = pb::ParameterServer::NewStub(m_channel);
  m_region = std::move(region);
  m_transport = m_region ? LocalTransport::Shm : LocalTransport::Unix;
  return grpc::Status::OK;
}

grpc::Status PsClient::pull(const pb::PullRequest& request, pb::PullReply& reply, double timeoutS) {
  grpc::ClientContext context;
  prepare(context, timeoutS);
  auto status = throughLink(timeoutS, [&] { return m_stub->Pull(&context, request, &reply); });
  if (status.ok()) m_bytesReceived += static_cast<std::int64_t>(reply.parameters().size());
  return status;
}

// The parameters of a successful pull reply: in the shared-memory region or in the reply;
// null when the reply holds none of the model's size.
const float* PsClient::parametersOf(const pb::PullReply& reply) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  if (reply.parameters_in_shm() && m_region) {
    m_bytesReceived += static_cast<std::int64_t>(bytes);
    return m_region->parameters();
  }
  if (reply.parameters().size() == bytes) return reinterpret_cast<const float*>(reply.parameters().data());
  return nullptr;
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
  if (m_link) {
    if (auto status = callOnLink(SocketCall::Pull, request, nullptr, reply, params, timeoutS)) return *status;
  }
  if (m_region) {
    pb::PullRequest viaShm = request;
    viaShm.set_parameters_in_shm(true);
    std::optional<grpc::Status> rung;
    if (m_doorbell) rung = throughLink(timeoutS, [&] { return ringDoorbell(DoorbellKind::Pull, viaShm, reply, timeoutS); });
    auto status = rung ? *rung : pull(viaShm, reply, timeoutS);
    if (status.ok()) params = parametersOf(reply);
    return status;
  }
  if (!m_chunked) {
    auto status = pull(request, reply, timeoutS);
    if (status.ok()) params = parametersOf(reply);
    return status;
  }
  return throughLink(timeoutS, [&]() -> grpc::Status { return pullChunks(request, reply, params, timeoutS); });
}

void PsClient::startPull(const pb::PullRequest& request) {
  m_startedPull.reset();
  if (!m_region || !m_doorbell || m_link || LinkCut::isCut()) return;
  pb::PullRequest viaShm = request;
  viaShm.set_parameters_in_shm(true);
  m_startedPull = postOnDoorbell(DoorbellKind::Pull, viaShm);
}

grpc::Status PsClient::finishPull(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                                  double timeoutS) {
  params = nullptr;
  if (!m_startedPull) return pullParameters(request, reply, params, timeoutS);
  const std::uint32_t call = *std::exchange(m_startedPull, std::nullopt);
  auto status = throughLink(timeoutS, [&] { return awaitDoorbell(call, reply, timeoutS); });
  if (status.ok()) params = parametersOf(reply);
  return status;
}

void PsClient::cancelPull() {
  if (m_startedPull) Doorbell(m_region->doorbell()).cancel(*std::exchange(m_startedPull, std::nullopt));
}

// A chunked pull as raw ByteBuffers: each chunk's payload is copied from the received
// slices straight into the pull buffer (chunk_codec.h).
grpc::Status PsClient::pullChunks(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                                  double timeoutS) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  grpc::ClientContext context;
  prepare(context, timeoutS);
  grpc::ByteBuffer requestBytes;
  bool own = false;
  (void)grpc::SerializationTraits<pb::PullRequest>::Serialize(request, &requestBytes, &own);
  const grpc::internal::RpcMethod method(kPullChunksMethod, grpc::internal::RpcMethod::SERVER_STREAMING);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(m_channel.get(), method, &context, requestBytes));
  m_pullBuffer.resize(bytes);
  std::size_t received = 0;
  std::string problem;
  bool badHeader = false;
  grpc::ByteBuffer chunk;
  while (problem.empty() && !badHeader && reader->Read(&chunk)) {
    problem = decodeChunk(
        chunk, [&](const std::string& header) { badHeader = !reply.ParseFromString(header); },
        [&](std::size_t n, std::string& why) -> char* {
          if (received + n > bytes) {
            why = "server sent more parameter bytes than the model has";
            return nullptr;
          }
          char* to = m_pullBuffer.data() + received;
          received += n;
          return to;
        });
  }
  if (badHeader) problem = "server sent a chunk header that is not a PullReply";
  if (!problem.empty()) {
    context.TryCancel();
    (void)reader->Finish();
    return grpc::Status(grpc::StatusCode::DATA_LOSS, problem);
  }
  auto status = reader->Finish();
  if (!status.ok()) return status;
  m_bytesReceived += static_cast<std::int64_t>(received);
  if (received == bytes) params = reinterpret_cast<const float*>(m_pullBuffer.data());
  return status;
}

grpc::Status PsClient::pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply,
                                    double timeoutS) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  if (m_link) {
    const float* none = nullptr;
    if (auto status = callOnLink(SocketCall::Push, request, gradient, reply, none, timeoutS)) return *status;
  }
  if (m_region || !m_chunked) {
    loadGradient(request, gradient);
    std::optional<grpc::Status> rung;
    if (m_region && m_doorbell) {
      rung = throughLink(timeoutS, [&] { return ringDoorbell(DoorbellKind::Push, request, reply, timeoutS); });
    }
    auto status = rung ? *rung : push(request, reply, timeoutS);
    if (m_region) noteSlotAnswer(status);
    if (status.ok() && m_region) m_bytesSent += static_cast<std::int64_t>(bytes);
    return status;
  }
  return throughLink(timeoutS, [&]() -> grpc::Status {
    // A chunked push as raw ByteBuffers: each chunk's payload is a slice over `gradient`
    // itself (chunk_codec.h), which stays unchanged until Finish() returns.
    grpc::ClientContext context;
    prepare(context, timeoutS);
    grpc::ByteBuffer responseBytes;
    const grpc::internal::RpcMethod method(kPushChunksMethod, grpc::internal::RpcMethod::CLIENT_STREAMING);
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
        grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(m_channel.get(), method, &context,
                                                                      &responseBytes));
    request.clear_gradient();
    const std::string header = request.SerializeAsString();
    const char* data = reinterpret_cast<const char*>(gradient);
    bool ok = true;
    for (std::size_t offset = 0; ok && offset < bytes; offset += kPayloadChunkBytes) {
      ok = writer->Write(encodeChunk(offset == 0 ? &header : nullptr, data + offset, std::min(kPayloadChunkBytes, bytes - offset)));
    }
    writer->WritesDone();
    auto status = writer->Finish();
    if (!status.ok()) return status;
    if (!grpc::SerializationTraits<pb::PushReply>::Deserialize(&responseBytes, &reply).ok()) {
      return grpc::Status(grpc::StatusCode::DATA_LOSS, "server answered a chunked push with no PushReply");
    }
    m_bytesSent += static_cast<std::int64_t>(bytes);
    return status;
  });
}

grpc::Status PsClient::pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply,
                                const float*& params, double timeoutS) {
  params = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  if (m_link) {
    if (auto status = callOnLink(SocketCall::PushPull, request, gradient, reply, params, timeoutS)) return *status;
  }
  loadGradient(request, gradient);
  std::optional<grpc::Status> status;
  if (m_region && m_doorbell) {
    status = throughLink(timeoutS, [&] { return ringDoorbell(DoorbellKind::PushPull, request, reply, timeoutS); });
  }
  if (!status) {
    grpc::ClientContext context;
    prepare(context, timeoutS);
    status = throughLink(timeoutS, [&] { return m_stub->PushPull(&context, request, &reply); });
  }
  if (m_region) noteSlotAnswer(*status);
  if (!status->ok()) return *status;
  m_bytesSent += static_cast<std::int64_t>(bytes);
  m_bytesReceived += static_cast<std::int64_t>(reply.parameters().size());
  params = parametersOf(reply);
  return *status;
}

template <typename Request, typename Reply>
std::optional<grpc::Status> PsClient::ringDoorbell(DoorbellKind kind, const Request& request, Reply& reply,
                                                   double timeoutS) {
  if (kind == DoorbellKind::Push) {
    // A shard's reply carries its range's norm block sums (a packed double per block).
    const auto sums = static_cast<std::size_t>((m_parameters + kNormBlock - 1) / kNormBlock);
    if (sums * sizeof(double) + 1024 > DoorbellBlock::kReplyMax) return std::nullopt;
  }
  const auto call = postOnDoorbell(kind, request);
  if (!call) return std::nullopt;
  return awaitDoorbell(*call, reply, timeoutS);
}

template <typename Request>
std::optional<std::uint32_t> PsClient::postOnDoorbell(DoorbellKind kind, const Request& request) {
  (void)request.SerializeToString(&m_serializedRequest);
  std::uint32_t call = 0;
  if (!Doorbell(m_region->doorbell()).post(kind, m_security.token, m_serializedRequest, call)) return std::nullopt;
  return call;
}

template <typename Reply>
grpc::Status PsClient::awaitDoorbell(std::uint32_t call, Reply& reply, double timeoutS) {
  Doorbell doorbell(m_region->doorbell());
  const auto deadline = deadlineIn<Doorbell::Clock>(timeoutS);
  switch (doorbell.awaitReply(call, deadline, [this] { return m_region->peerAlive(); })) {
    case Doorbell::Wait::Answered: break;
    case Doorbell::Wait::TimedOut:
      doorbell.cancel(call);
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no answer on the shared-memory doorbell in time");
    case Doorbell::Wait::Closed:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the server closed the shared-memory region (it shut down, or this rank joined again)");
    case Doorbell::Wait::ServerGone:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the server's process is gone (it no longer holds the shared-memory region)");
  }
  const Doorbell::Reply answer = doorbell.reply();
  if (answer.code != 0) {
    const int code = answer.code > 0 && answer.code <= 16 ? answer.code : static_cast<int>(grpc::StatusCode::UNKNOWN);
    return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(answer.message), std::string(answer.details));
  }
  if (!reply.ParseFromArray(answer.body.data(), static_cast<int>(answer.body.size()))) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "the server's doorbell reply is not a " + reply.GetTypeName());
  }
  return grpc::Status::OK;
}

template <typename Reply, typename Request>
std::optional<grpc::Status> PsClient::callOnLink(SocketCall kind, Request& request, const float* gradient,
                                                 Reply& reply, const float*& params, double timeoutS) {
  if constexpr (std::is_same_v<Request, pb::PushRequest>) {
    request.clear_gradient();  // left by a call through gRPC
    request.set_gradient_in_shm(false);
  }
  m_linkAnswer.reached = true;  // unless the link cannot connect
  auto status = throughLink(timeoutS, [&] { return linkCall(kind, request, gradient, reply, params, timeoutS); });
  if (m_linkAnswer.reached) return status;
  m_fallback = "the payload socket cannot be reached (" + describe(status) + "): push and pull go through gRPC";
  m_transportNote = m_fallback;
  m_link.reset();
  return std::nullopt;
}

template <typename Reply, typename Request>
grpc::Status PsClient::linkCall(SocketCall kind, const Request& request, const float* gradient, Reply& reply,
                                const float*& params, double timeoutS) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  params = nullptr;
  (void)request.SerializeToString(&m_serializedRequest);
  const bool pulls = kind != SocketCall::Push;
  if (pulls) m_pullBuffer.resize(bytes);
  auto status = m_link->call(kind, m_security.token, m_serializedRequest, gradient, gradient ? bytes : 0,
                             pulls ? m_pullBuffer.data() : nullptr, pulls ? bytes : 0, timeoutS, m_linkAnswer);
  if (!status.ok()) return status;
  if (!reply.ParseFromString(m_linkAnswer.body)) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "payload socket " + m_link->where() + ": a reply body that is not a " +
                                                         reply.GetTypeName());
  }
  if (gradient != nullptr) m_bytesSent += static_cast<std::int64_t>(bytes);
  m_bytesReceived += static_cast<std::int64_t>(m_linkAnswer.payloadBytes);
  if (pulls && m_linkAnswer.payloadBytes == bytes) params = reinterpret_cast<const float*>(m_pullBuffer.data());
  return status;
}

// The gradient into the shared-memory slot (the request says so) or into the request.
void PsClient::loadGradient(pb::PushRequest& request, const float* gradient) {
  const std::size_t bytes = static_cast<std::size_t>(m_parameters) * sizeof(float);
  request.set_gradient_in_shm(m_region != nullptr);
  if (m_region) {
    m_slotHeld = true;
    if (gradient != m_region->gradient()) std::memcpy(m_region->gradient(), gradient, bytes);
    request.clear_gradient();
    return;
  }
  request.mutable_gradient()->assign(reinterpret_cast<const char*>(gradient), bytes);
}

// The server answers a push only after it has read the gradient (a gradient it holds, it
// copies). These statuses may come from this side instead (a deadline, a cut link, a server
// gone or closing) while the server still has the call.
void PsClient::noteSlotAnswer(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN: return;
    default: m_slotHeld = false;
  }
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
