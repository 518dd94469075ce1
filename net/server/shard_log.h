// SPDX-License-Identifier: MIT
#pragma once
// ShardLogSender: shard 0's stream of decisions (dasp.ps.v1.ShardStep) to one other shard
// of a sharded parameter server: over the shard's payload socket (SocketCall::ShardLog, a
// call per batch) when it has one, else over the FollowShard RPC that stays open for the
// run (a run with TLS). Measured (`dasp bench ps --shards`): the socket takes a step to the
// shard in well under half the time of the gRPC stream, and that hop is on the path of
// every pull of a range.
// The steps are queued in the order shard 0 made them and written by the sender's own
// thread, as many as are queued in one message, so a decision never waits on the network.
// The other shard carries them out in that order: every shard applies the same updates to
// its range, and answers a pull with the version shard 0 released it at.
//
// A stream that breaks (the shard is gone, or it refused a step it could not carry out) is
// reported once through `onError`: the ranges no longer add up to one model, so the
// server makes that the end of the run. The stream's deadline is the run's (`deadlineS`).
//
// Threading: enqueue() from any thread (the server calls it under its own lock: it never
// blocks on the network); `onError` runs on the sender's thread, without its lock.

#include "core/common/result.h"
#include "dasp/ps/v1/parameter_server.grpc.pb.h"
#include "net/security/node_security.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dasp::net {

// Shard 0's probe of shard `address` (gRPC Join, role "probe", waiting up to `timeoutS`
// for it to listen): its payload port and the checkpoint versions it holds.
Result<dasp::ps::v1::JoinReply> probeShard(const std::string& address, const NodeSecurity& security,
                                           double timeoutS);

class ShardLogSender {
 public:
  using OnError = std::function<void(const std::string& message)>;
  class Stream;  // the way the log goes (shard_log.cpp): the payload socket, or gRPC

  ShardLogSender(std::string address, int shard, NodeSecurity security, double deadlineS, OnError onError);
  // Writes what is queued, ends the stream and joins the thread.
  ~ShardLogSender();
  ShardLogSender(const ShardLogSender&) = delete;
  ShardLogSender& operator=(const ShardLogSender&) = delete;

  const std::string& address() const { return m_address; }
  // `t`: shard 0's run time (the batch carries the latest: ShardLog.t_s).
  void enqueue(const dasp::ps::v1::ShardStep& step, double t);

 private:
  void loop();
  std::unique_ptr<Stream> open(dasp::ps::v1::ParameterServer::Stub& stub, grpc::Status& status);
  void report(const grpc::Status& status) const;

  const std::string m_address;
  const int m_shard;
  const NodeSecurity m_security;
  const double m_deadlineS;
  const OnError m_onError;
  std::mutex m_mu;
  std::condition_variable m_cv;
  dasp::ps::v1::ShardLog m_queued;  // guarded by m_mu
  bool m_stop = false;              // guarded by m_mu
  std::thread m_thread;
};

}  // namespace dasp::net
