// SPDX-License-Identifier: MIT
#pragma once
// PsClient: a node's connection to the parameter server. Every call carries a deadline
// and the run's token; the channel is plaintext or TLS as the NodeSecurity says; messages
// are sized for the model. Counts the payload bytes it sends and receives. Every call
// crosses this process's LinkCut (a DISCONNECT drill holds it while the link is cut).
// Threading: one PsClient per thread (each call blocks its caller).

#include "core/common/result.h"
#include "dasp/ps/v1/parameter_server.grpc.pb.h"
#include "net/security/node_security.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dasp::net {

namespace pb = dasp::ps::v1;

class PsClient {
 public:
  // `address` is host:port. `parameters` sizes the message limits. `security`: the run's
  // token and TLS (default: this process's token, plaintext).
  PsClient(const std::string& address, std::int64_t parameters, NodeSecurity security = NodeSecurity());

  const std::string& address() const { return m_address; }
  grpc::Status join(const pb::JoinRequest& request, pb::JoinReply& reply, double timeoutS);
  grpc::Status pull(const pb::PullRequest& request, pb::PullReply& reply, double timeoutS);
  grpc::Status push(const pb::PushRequest& request, pb::PushReply& reply, double timeoutS);
  grpc::Status report(const pb::EvaluationReport& request, pb::ReportReply& reply, double timeoutS);
  grpc::Status control(const pb::ControlRequest& request, pb::ControlReply& reply, double timeoutS);
  // Pull and push that pick the transport by model size: one message up to 4 MB, chunks
  // of 2 MB beyond (gRPC is several times faster on such messages). After a successful
  // pull, `params` points at parameterCount floats, valid until the next pull; `reply`
  // holds the metadata. `request`'s gradient field is filled here for small models.
  grpc::Status pullParameters(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                              double timeoutS);
  grpc::Status pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply, double timeoutS);
  // Push and pull in one call (models below the chunking threshold only).
  grpc::Status pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply, const float*& params,
                        double timeoutS);
  bool chunked() const { return m_chunked; }

  // A Watch stream; the caller reads batches until it ends. `context` must outlive it
  // (the run token is added to it here).
  std::unique_ptr<grpc::ClientReader<pb::EventBatch>> watch(grpc::ClientContext& context);

  std::int64_t bytesSent() const { return m_bytesSent; }
  std::int64_t bytesReceived() const { return m_bytesReceived; }

 private:
  // A fresh context's deadline and token.
  void prepare(grpc::ClientContext& context, double timeoutS) const;

  std::string m_address;
  NodeSecurity m_security;
  std::shared_ptr<grpc::Channel> m_channel;
  std::unique_ptr<pb::ParameterServer::Stub> m_stub;
  std::int64_t m_parameters = 0;
  bool m_chunked = false;
  std::vector<char> m_pullBuffer;  // chunked pulls land here (allocated once)
  pb::PullChunk m_pullChunk;
  pb::PushChunk m_pushChunk;
  std::int64_t m_bytesSent = 0;
  std::int64_t m_bytesReceived = 0;
};

// Sets a deadline `seconds` from now on `context`.
void setDeadline(grpc::ClientContext& context, double seconds);

// "UNAVAILABLE: failed to connect ..." — the status as one line for messages.
std::string describe(const grpc::Status& status);
// The server refused a push: the reason its INVALID_ARGUMENT status carries (PushRefusal in
// the error details; REASON_UNSPECIFIED when it carries none), or nullopt for any other status.
std::optional<ps::v1::PushRefusal::Reason> pushRefusalOf(const grpc::Status& status);

}  // namespace dasp::net
