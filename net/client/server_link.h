// SPDX-License-Identifier: MIT
#pragma once
// ServerLink: what a worker's and the evaluator's loops (net/client/nodes.h) need of their
// connection to the parameter server: pulls and pushes of the whole model, evaluation
// reports, and the byte counts. A PsClient is one to a server of one shard; a ShardedLink
// (net/client/sharded_link.h) is one to a sharded server, over a PsClient per shard.
// Threading: one caller at a time (each call blocks it).

#include "dasp/ps/v1/parameter_server.pb.h"

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

namespace dasp::net {

class ServerLink {
 public:
  virtual ~ServerLink() = default;
  // After a successful pull, `params` points at the model's parameters (all of them),
  // valid until the next pull; `reply` holds the metadata.
  virtual grpc::Status pullParameters(const ps::v1::PullRequest& request, ps::v1::PullReply& reply,
                                      const float*& params, double timeoutS) = 0;
  virtual grpc::Status pushGradient(ps::v1::PushRequest& request, const float* gradient, ps::v1::PushReply& reply,
                                    double timeoutS) = 0;
  // Push and pull in one call (models below the chunking threshold: !chunked()).
  virtual grpc::Status pushPull(ps::v1::PushRequest& request, const float* gradient, ps::v1::PullReply& reply,
                                const float*& params, double timeoutS) = 0;
  virtual grpc::Status report(const ps::v1::EvaluationReport& request, ps::v1::ReportReply& reply,
                              double timeoutS) = 0;
  virtual bool chunked() const = 0;
  // Where the worker may compute its next gradient so that pushing it copies nothing (a
  // shared-memory slot); null: its own memory.
  virtual float* gradientSlot() const = 0;
  // Why the calls changed transport since the last time this was asked (empty: they did not).
  virtual std::string takeTransportNote() = 0;
  virtual std::int64_t bytesSent() const = 0;
  virtual std::int64_t bytesReceived() const = 0;
};

}  // namespace dasp::net
