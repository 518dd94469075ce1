// SPDX-License-Identifier: MIT
#pragma once
// PsClient: a node's connection to the parameter server. Every call carries a deadline
// and the run's token; the channel is plaintext or TLS as the NodeSecurity says; messages
// are sized for the model. Counts the payload bytes it sends and receives. A worker on the
// server's host may move its payload through shared memory and its calls over the server's
// Unix socket (LocalTransport); a worker over TCP makes its push and pull on the server's
// payload socket (PayloadLink) when its join offers one. Every call crosses this process's
// LinkCut (a DISCONNECT drill holds it while the link is cut).
// Threading: one PsClient per thread (each call blocks its caller).

#include "core/common/result.h"
#include "dasp/ps/v1/parameter_server.grpc.pb.h"
#include "net/client/payload_link.h"
#include "net/client/server_link.h"
#include "net/security/node_security.h"
#include "net/transport/doorbell.h"
#include "net/transport/shared_region.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dasp::net {

namespace pb = dasp::ps::v1;

// How a worker on the server's host reaches it (cluster.transport, as the runner resolved
// it for this worker): TCP; the server's Unix socket; or shared memory for the payload
// with the Unix socket for the control messages. `Auto` tries shared memory and falls back
// to TCP (saying why) when the server offers none or it cannot be mapped.
enum class LocalTransport { Tcp, Unix, Shm, Auto };
// "tcp", "unix", "shm", "auto"; nullopt for anything else.
std::optional<LocalTransport> localTransportNamed(const std::string& name);
const char* nameOf(LocalTransport transport);

class PsClient final : public ServerLink {
 public:
  // `address` is host:port. `parameters` sizes the message limits. `security`: the run's
  // token and TLS (default: this process's token, plaintext). `transport` takes effect
  // when a worker joins (join()): the calls after it go the way the server offered.
  PsClient(const std::string& address, std::int64_t parameters, NodeSecurity security = NodeSecurity(),
           LocalTransport transport = LocalTransport::Tcp);
  ~PsClient() override;

  const std::string& address() const { return m_address; }
  // The transport in use now (after join(): what was asked for and obtained).
  LocalTransport transport() const { return m_transport; }
  // Why `Auto` fell back to TCP at the last join, or why a TCP worker's calls left the payload
  // socket for gRPC since (empty: neither).
  const std::string& transportFallback() const { return m_fallback; }
  grpc::Status join(const pb::JoinRequest& request, pb::JoinReply& reply, double timeoutS);
  grpc::Status pull(const pb::PullRequest& request, pb::PullReply& reply, double timeoutS);
  grpc::Status push(const pb::PushRequest& request, pb::PushReply& reply, double timeoutS);
  grpc::Status report(const pb::EvaluationReport& request, pb::ReportReply& reply, double timeoutS) override;
  grpc::Status control(const pb::ControlRequest& request, pb::ControlReply& reply, double timeoutS);
  // Pull and push that pick the transport by model size: one message up to 4 MB, chunks
  // of 2 MB beyond (gRPC is several times faster on such messages). After a successful
  // pull, `params` points at parameterCount floats, valid until the next pull; `reply`
  // holds the metadata. `request`'s gradient field is filled here for small models.
  grpc::Status pullParameters(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                              double timeoutS) override;
  grpc::Status pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply,
                            double timeoutS) override;
  // Push and pull in one call (models below the chunking threshold only). With shared
  // memory it rings the region's doorbell (net/transport/doorbell.h) instead of calling
  // gRPC, with the same statuses: DEADLINE_EXCEEDED after `timeoutS` (the call given up),
  // UNAVAILABLE when the server closed the region or its process is gone.
  grpc::Status pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply, const float*& params,
                        double timeoutS) override;
  // A pull in two halves, so that the server parks it while the caller makes other calls
  // (a node of a sharded server pulls a range while shard 0 decides): startPull() posts it
  // on the doorbell, if the region has one and the link is up; finishPull() takes its
  // answer, or makes the whole pull as pullParameters() does when none was posted;
  // cancelPull() gives a posted pull up (the server drops it).
  void startPull(const pb::PullRequest& request);
  grpc::Status finishPull(const pb::PullRequest& request, pb::PullReply& reply, const float*& params, double timeoutS);
  void cancelPull();
  bool chunked() const override { return m_chunked && !m_region && !m_link; }
  // Shared memory: the region's gradient slot, when the server has answered every call that
  // read it, so the worker may compute its next gradient straight into it (pushing it then
  // copies nothing); null otherwise. After a call the server may not have answered (a
  // deadline, a lost server), the slot stays the server's: the next gradient is computed in
  // the worker's own memory and copied in when it is pushed.
  float* gradientSlot() const override { return m_region && !m_slotHeld ? m_region->gradient() : nullptr; }
  // Shared memory: PushPull through the doorbell (default) or through gRPC (`false`: what
  // `dasp bench ps` compares it with).
  void useDoorbell(bool on) { m_doorbell = on; }
  // TCP: a worker's Push, Pull and PushPull go through the server's payload socket when its
  // join offered one (default), or through gRPC (`false`, before join(): what `dasp bench ps`
  // compares it with). Other calls always go through gRPC.
  void usePayloadSocket(bool on) { m_payloadSocket = on; }
  bool onPayloadSocket() const { return m_link != nullptr; }
  // Why the calls left the payload socket for gRPC since the last time this was asked
  // (empty: they did not), for the worker's log.
  std::string takeTransportNote() override { return std::exchange(m_transportNote, std::string()); }

  // A Watch stream; the caller reads batches until it ends. `context` must outlive it
  // (the run token is added to it here).
  std::unique_ptr<grpc::ClientReader<pb::EventBatch>> watch(grpc::ClientContext& context);

  std::int64_t bytesSent() const override { return m_bytesSent; }
  std::int64_t bytesReceived() const override { return m_bytesReceived; }

 private:
  // A fresh context's deadline and token.
  void prepare(grpc::ClientContext& context, double timeoutS) const;
  // After a worker's join: switches to what the server offered in `reply` (the Unix
  // socket, the shared-memory region) as m_requested asks; an error status when an
  // explicit Unix or SHM transport cannot be had.
  grpc::Status takeOffer(const pb::JoinReply& reply);
  void openTcp();
  const float* parametersOf(const pb::PullReply& reply);
  grpc::Status pullChunks(const pb::PullRequest& request, pb::PullReply& reply, const float*& params, double timeoutS);
  void loadGradient(pb::PushRequest& request, const float* gradient);
  // After a call that carried the gradient slot: whether the server is done with it.
  void noteSlotAnswer(const grpc::Status& status);
  // A call rung on the region's doorbell (Push, Pull or PushPull): nullopt when its request,
  // or the reply a push of this size gets, would not fit the block; the caller then makes
  // the call through gRPC.
  template <typename Request, typename Reply>
  std::optional<grpc::Status> ringDoorbell(DoorbellKind kind, const Request& request, Reply& reply, double timeoutS);
  // ringDoorbell's halves: the call's number, or nullopt when it does not fit; its answer.
  template <typename Request>
  std::optional<std::uint32_t> postOnDoorbell(DoorbellKind kind, const Request& request);
  template <typename Reply>
  grpc::Status awaitDoorbell(std::uint32_t call, Reply& reply, double timeoutS);
  // A call on the payload socket, through this process's LinkCut: `request` up (a push's
  // without a gradient field) with `gradient` (null: none), the reply's body parsed into
  // `reply` and its parameters (if any) into the pull buffer. nullopt when the socket cannot
  // be connected to: the link is dropped (gRPC until the next join; transportFallback()
  // says why) and the caller makes the call through gRPC.
  template <typename Reply, typename Request>
  std::optional<grpc::Status> callOnLink(SocketCall kind, Request& request, const float* gradient, Reply& reply,
                                         const float*& params, double timeoutS);
  template <typename Reply, typename Request>
  grpc::Status linkCall(SocketCall kind, const Request& request, const float* gradient, Reply& reply,
                        const float*& params, double timeoutS);

  std::string m_address;
  std::optional<std::uint32_t> m_startedPull;  // the doorbell call of startPull()
  NodeSecurity m_security;
  std::shared_ptr<grpc::Channel> m_channel;
  std::unique_ptr<pb::ParameterServer::Stub> m_stub;
  std::int64_t m_parameters = 0;
  bool m_chunked = false;
  std::vector<char> m_pullBuffer;  // chunked pulls land here (allocated once)
  std::int64_t m_bytesSent = 0;
  std::int64_t m_bytesReceived = 0;
  LocalTransport m_requested = LocalTransport::Tcp;
  LocalTransport m_transport = LocalTransport::Tcp;
  std::string m_fallback;
  std::unique_ptr<SharedRegion> m_region;  // SHM: the gradient and parameter slots
  bool m_doorbell = true;
  bool m_slotHeld = false;  // a call that read the gradient slot may still be in the server's hands
  std::string m_serializedRequest;  // the serialized request (reused)
  bool m_payloadSocket = true;
  std::unique_ptr<PayloadLink> m_link;  // TCP: the server's payload socket (null: gRPC)
  PayloadLink::Answer m_linkAnswer;     // reused
  std::string m_transportNote;
};

// Sets a deadline `seconds` from now on `context`.
void setDeadline(grpc::ClientContext& context, double seconds);

// "UNAVAILABLE: failed to connect ..." — the status as one line for messages.
std::string describe(const grpc::Status& status);
// The server refused a push: the reason its INVALID_ARGUMENT status carries (PushRefusal in
// the error details; REASON_UNSPECIFIED when it carries none), or nullopt for any other status.
std::optional<ps::v1::PushRefusal::Reason> pushRefusalOf(const grpc::Status& status);

}  // namespace dasp::net
