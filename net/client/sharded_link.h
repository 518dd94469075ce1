// SPDX-License-Identifier: MIT
#pragma once
// ShardedLink: a node's connection to a sharded parameter server (ps.shards > 1): one
// PsClient per shard, each over the transport its own join offered (shared memory, the
// payload socket or gRPC), and a thread per shard beyond the first, so that every range
// moves in parallel. A worker's iteration pushes each other shard its range (the shard
// answers with the range's norm block sums), then pushes shard 0 its range with those
// sums relayed (shard 0's guard judges the whole gradient) while it pulls the other
// ranges; every call carries the node's call number (call_seq), and each shard answers the
// pull of call k with the version shard 0 released call k at. The parameters are assembled
// into one buffer only when every shard answered with that one version; a torn mix is an
// error (INTERNAL), never handed to the model.
// With chain replication per shard, a worker also pushes each range to the shard's
// replicas (JoinReply.shard_replica_addresses) before shard 0's call, and pulls from the
// shards only.
// Threading: one caller at a time (each call blocks it); the shard threads are its own.

#include "core/common/result.h"
#include "core/params/shard_layout.h"
#include "net/client/ps_client.h"
#include "net/client/server_link.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dasp::net {

class ShardedLink final : public ServerLink {
 public:
  // Joins shards 1..S-1 as `request` joined shard 0 (`shard0`, which answered `reply`):
  // a worker with the rank shard 0 gave it, over `transport`; the evaluator over TCP.
  static Result<std::unique_ptr<ShardedLink>> join(std::shared_ptr<PsClient> shard0, const pb::JoinRequest& request,
                                                    const pb::JoinReply& reply, const NodeSecurity& security,
                                                    LocalTransport transport, double timeoutS);
  ~ShardedLink() override;
  ShardedLink(const ShardedLink&) = delete;
  ShardedLink& operator=(const ShardedLink&) = delete;

  grpc::Status pullParameters(const pb::PullRequest& request, pb::PullReply& reply, const float*& params,
                              double timeoutS) override;
  grpc::Status pushGradient(pb::PushRequest& request, const float* gradient, pb::PushReply& reply,
                            double timeoutS) override;
  grpc::Status pushPull(pb::PushRequest& request, const float* gradient, pb::PullReply& reply, const float*& params,
                        double timeoutS) override;
  grpc::Status report(const pb::EvaluationReport& request, pb::ReportReply& reply, double timeoutS) override;
  bool chunked() const override { return m_clients[0]->chunked(); }
  float* gradientSlot() const override { return nullptr; }  // the ranges live in S places
  std::string takeTransportNote() override;
  std::int64_t bytesSent() const override;
  std::int64_t bytesReceived() const override;

  const ShardLayout& layout() const { return m_layout; }
  // "shm, shm, tcp (payload socket)": each shard's transport, for the node's log.
  std::string describeTransports() const;
  // Pulls whose ranges were assembled into one model (each of one version).
  std::int64_t assembled() const { return m_assembled; }

 private:
  class Caller;  // a thread that makes one shard's calls

  // A replica of shard `shard` (chain replication per shard): the worker pushes it the
  // shard's range before shard 0 decides, so it holds every gradient its shard applies.
  struct Replica {
    int shard = 0;
    std::shared_ptr<PsClient> client;
    std::unique_ptr<Caller> caller;  // none when inline
    pb::PushRequest push;
    pb::PushReply reply;
    grpc::Status status;
  };

  ShardedLink(ShardLayout layout, std::vector<std::shared_ptr<PsClient>> clients, std::vector<Replica> replicas);
  int shards() const { return m_layout.shards(); }
  // Pushes every replica its shard's range of `gradient` for call `call`, beside the shards'
  // own pushes (`pushShards`); the first failure of a replica, else OK.
  grpc::Status pushReplicas(const pb::PushRequest& request, const float* gradient, std::int64_t call, double timeoutS,
                            const std::function<void()>& pushShards);
  // Shards 1..S-1 (in parallel unless inline): each runs `call(i)`; returns when all are done.
  void onOtherShards(const std::function<void(int)>& call);
  // The other shards' pulls of the node's call `call`: started before shard 0's call (so
  // that each shard has it parked when shard 0's decision reaches it) and finished after
  // it; given up when shard 0 answered nothing (`status0`).
  void startRangePulls(int rank, std::int64_t call, double timeoutS);
  void finishRangePulls(const grpc::Status& status0);
  // Pushes shards 1..S-1 their ranges of `gradient` for call `call`; then fills shard 0's
  // request with their block sums, or the refusal of the first that refused. An error
  // other than a refusal is returned (the push went nowhere).
  grpc::Status pushOtherRanges(pb::PushRequest& request, const float* gradient, std::int64_t call, double timeoutS);
  // After shard 0's answer (`status0`, `reply`, `params0`) and the other shards' pulls:
  // the whole model at m_params, or why not.
  grpc::Status assemble(const grpc::Status& status0, const pb::PullReply& reply, const float* params0,
                        const float*& params);
  static void clearRelayed(pb::PushRequest& request);

  ShardLayout m_layout;
  std::vector<std::shared_ptr<PsClient>> m_clients;  // [i]: shard i
  std::vector<std::unique_ptr<Caller>> m_callers;    // [i]: shard i (none for 0, nor when inline)
  std::vector<Replica> m_replicas;                   // a worker's, with chain replication per shard
  // Every other shard is over shared memory: its calls move no bytes over a wire, so they
  // are made from the caller's thread (a thread's wake-ups cost more than they overlap),
  // a pull posted on the doorbell before shard 0's call and taken after it.
  bool m_inline = false;
  double m_pullTimeoutS = 0;
  std::vector<float> m_params;                       // the assembled model
  // Per shard, reused from call to call.
  pb::PullRequest m_rangePull;
  std::vector<pb::PushRequest> m_rangePush;
  std::vector<pb::PushReply> m_pushReplies;
  std::vector<pb::PullReply> m_pullReplies;
  std::vector<const float*> m_rangeParams;
  std::vector<grpc::Status> m_status;
  std::int64_t m_assembled = 0;
};

}  // namespace dasp::net
