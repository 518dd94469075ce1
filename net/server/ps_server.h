// SPDX-License-Identifier: MIT
#pragma once
// ParameterServer: the gRPC parameter server of one run. It owns the ParameterStore and
// the SyncPolicy; a pull is answered only when the policy releases the worker (parked
// pulls hold no thread: gRPC's callback API), a push is validated (size, NaN/Inf) and then
// applied, held for a round or dropped as the policy says. Every iteration, applied
// gradient, decision and evaluation is streamed to Watch subscribers (the runner) in
// batches.
//
// Fault tolerance (spec.recovery): a server restarted after a failure resumes the run's
// clock (`resumeAtS`) and starts from the initial parameters (none), the latest valid
// checkpoint (checkpoint: written every K updates / T seconds by a background writer), or
// the highest-version parameters the rejoining workers hold (stateless: it then applies
// each worker's backlog in one step). In a chain, the head applies updates and forwards
// them to its successor (net/server/replicator.h); with forward_every 1 a worker's pull — the
// acknowledgement of its push — is answered only once the tail holds the update. Replicas
// refuse worker traffic until the runner promotes one to head. Every reply to a worker
// carries the version the server vouches for (acked_version: applied, and in such a chain
// held by the tail): updates lost after a failure are counted against it. With
// `recordPath` the server writes an update record (core/params/update_record.h).
//
// Security: every RPC must carry the run's token (options.security); a call without it or
// with another one is refused with PERMISSION_DENIED before anything else happens, counted
// (ServerStats::unauthorized) and reported as a REJECT event (rate-limited: a flood of
// refused calls cannot fill the event queue). With TLS material the server listens with
// TLS only.
//
// Sharding (options.layout, ps.shards): every shard is a ParameterServer owning one range.
// Shard 0 is the server above for the whole model: joins, the policy, the gradient guard
// (on the whole gradient's norm: the other shards' block sums, relayed by the worker),
// events; it streams each decision to the other shards (net/server/shard_log.h), which
// carry them out on their ranges and answer a node's pull with the version shard 0
// released it at (PullRequest.call_seq). No recovery mode but none works sharded yet.
//
// Threading: start() and shutdown() from one owning thread; the RPC handlers run on gRPC's
// threads and share one mutex; a ticker thread drives the policy's time-based decisions;
// the checkpoint writer, the replicator and each shard log sender have a thread each.

#include "core/common/result.h"
#include "core/params/shard_layout.h"
#include "core/spec/spec.h"
#include "net/security/node_security.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dasp::net {

struct ServerOptions {
  std::string bindAddress = "127.0.0.1";  // never all interfaces unless asked
  int port = 0;                           // 0 = pick a free port
  int payloadPort = 0;                    // the payload socket's (0 = any free one; none with TLS)
  ExperimentSpec spec;                    // resolved (withDefaults)
  int workers = 1;
  std::string modelName;
  std::vector<float> initialParameters;
  std::string name = "server";            // in messages, e.g. server-1
  // Recovery: a restarted (or promoted) server continues the run's clock at this time
  // (< 0: a fresh run, whose clock starts when every worker has joined).
  double resumeAtS = -1;
  std::string checkpointDir;              // checkpoint mode: where checkpoints go
  bool restoreCheckpoint = false;         // load the latest valid checkpoint first
  bool adoptFromWorkers = false;          // stateless restart: take the workers' parameters
  bool replica = false;                   // chain: start as a replica, not the head (a shard's: below)
  std::string chainNext;                  // chain: the successor's address (empty: tail)
  // Non-empty: write every state held and every update applied to this file
  // (core/params/update_record.h; `dasp server --record`).
  std::string recordPath;
  // The run's private directory (`dasp server`: DASP_RUN_DIR), for the Unix socket and the
  // shared-memory regions of same-host workers. Empty: a private temporary directory.
  std::string localDir;
  std::function<void(const std::string&)> log;  // recovery messages (any thread)
  // The run's token every call must carry (never empty), and TLS (null: plaintext). The
  // chain replicator uses the same to reach the successor.
  NodeSecurity security;
  // A sharded server (ps.shards > 1): this process owns range `shard` of `layout`, and
  // `initialParameters` are that range's. Shard 0 decides every update for the whole model
  // and streams its decisions to the others, which listen at `shardAddresses` (shards
  // 1..S-1, in order) and were started first. Default: one shard, the whole model.
  int shard = 0;
  ShardLayout layout;  // begin {0, 0}: set to the whole model by start()
  std::vector<std::string> shardAddresses;
  // Chain replication per shard (recovery CHAIN with ps.shards > 1). Shard 0: the replicas
  // of shards 1..S-1, each a hot standby that follows shard 0's log as its shard does and
  // takes the shard's place when the shard's log breaks. Shards 1..S-1: `replica` starts
  // this process as one (it answers no pull until shard 0 says so: ShardStep SERVE).
  struct ShardReplica {
    int shard = 0;
    std::string address;
  };
  std::vector<ShardReplica> shardReplicas;
  // Tests: the run's time, in seconds, from this instead of the wall clock (once every
  // worker has joined), so that two servers given the same calls at the same scripted
  // times decide the same. Called from any thread. Empty: the wall clock.
  std::function<double()> clock;
};

struct ServerStats {
  std::int64_t version = 0;
  std::int64_t pushes = 0;
  std::int64_t applied = 0;   // gradients applied
  std::int64_t dropped = 0;   // gradients dropped by the policy
  std::int64_t rejected = 0;  // pushes rejected (size, NaN/Inf, unknown rank)
  std::int64_t bytesReceived = 0;
  std::int64_t bytesSent = 0;
  std::int64_t checkpoints = 0;         // checkpoints written
  std::int64_t checkpointFailures = 0;  // checkpoints that could not be written
  std::int64_t backlogApplied = 0;      // stateless: backlog gradients applied
  std::int64_t unauthorized = 0;        // calls refused: missing or wrong run token
  std::int64_t guardRefused = 0;        // pushes the gradient guard refused (also in `rejected`)
  std::int64_t guardClipped = 0;        // gradients the gradient guard clipped (applied)
  std::int64_t watchersCutOff = 0;      // Watch streams finished for not reading
  std::int64_t pullsAdmitted = 0;       // pulls answered at once or parked
  double guardMaxRatio = 0;             // the guard's largest accepted norm ÷ running median
};

class ParameterServer {
 public:
  static Result<std::unique_ptr<ParameterServer>> start(ServerOptions options);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int port() const;
  // Answers every parked and future pull with stop=true.
  void requestStop();
  bool stopRequested() const;
  // Blocks until requestStop() was called (or the server shuts down).
  void waitForStop();
  // Stops serving (after the deadline, open calls are cancelled) and joins threads.
  void shutdown(double graceSeconds = 2.0);
  ServerStats stats() const;
  // A copy of the current parameters (of this shard's range) and their version.
  std::int64_t snapshot(std::vector<float>& out) const;
  // Why the server ended the run itself (a shard that stopped following shard 0); empty:
  // it did not.
  std::string failure() const;

 private:
  struct Impl;
  explicit ParameterServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dasp::net
