// SPDX-License-Identifier: MIT
#pragma once
// The node roles that talk to the parameter server: a worker (pull → gradient → push,
// with its emulated speed profile) and the evaluator (pull parameters every K versions or
// T seconds, evaluate, report). The compute comes in through core's interfaces, so this
// file needs no LibTorch; `dasp worker` and `dasp evaluator` wire the LibTorch parts in.
// Both survive a server outage: a call that finds no server (or a chain replica that is
// not the head) starts the outage loop, which tries every server address in chain order
// until one answers (at most recovery.reconnect_timeout_s), then rejoins. Under stateless
// recovery a worker keeps computing gradients on its last parameters meanwhile, buffers
// them (bounded), and flushes the backlog after rejoining; otherwise it idles and the
// gradient in flight is discarded. Each outage is reported in two structured lines
// (net/client/recovery_line.h: outage_detected, with the highest version the failed
// server acknowledged to the node, and reconnected) that the runner reads.
// Threading: run() blocks the calling thread until the run ends.

#include "core/common/gradient_source.h"
#include "core/common/result.h"
#include "core/spec/spec.h"
#include "net/client/ps_client.h"
#include "net/client/server_link.h"
#include "net/security/node_security.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dasp::net {

// What a node learns when it joins.
struct JoinInfo {
  int rank = -1;
  int worldSize = 0;
  ExperimentSpec spec;
  double serverTimeAtJoin = 0;
  // The connection that joined (a worker goes on with it: a shared-memory region or the
  // Unix socket belongs to that join). A sharded server's: a ShardedLink over every shard
  // (`sharded`), the evaluator's too.
  std::shared_ptr<ServerLink> client;
  bool sharded = false;
};

struct NodeStats {
  std::int64_t iterations = 0;
  std::int64_t bytesSent = 0;
  std::int64_t bytesReceived = 0;
  std::int64_t overruns = 0;
  std::int64_t retries = 0;
  std::int64_t outages = 0;
  std::int64_t refused = 0;  // pushes the server refused (not applied); the worker went on
  double pushPullS = 0;      // seconds in its PushPull calls (waits included)
  double computeS = 0;       // seconds computing gradients (emulated slowness not included)
};

struct WorkerOptions {
  std::string server;       // host:port (the first of `servers`)
  std::vector<std::string> servers;  // every server address, in chain order (failover)
  std::string name;         // node name for messages
  int requestedRank = -1;
  std::string model;        // must match the server
  std::int64_t parameters = 0;
  double connectTimeoutS = 30;   // give up joining / reconnecting after this long
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> log;  // progress and retry messages
  NodeSecurity security;    // the run's token and TLS, for every connection to a server
  // Non-empty (workers): record every acknowledged push and every push left in flight by
  // a failed server to this file (core/params/update_record.h; `dasp worker --record`).
  std::string recordPath;
  // Workers: how to reach a server on this host (`dasp worker --transport`; the runner
  // passes what cluster.transport means for this worker). The evaluator uses TCP.
  LocalTransport transport = LocalTransport::Tcp;
};

// Joins the server (retrying with backoff while it is unreachable). Role "probe" only
// fetches the run's spec (model and parameter count are not checked, no rank is taken).
Result<JoinInfo> joinServer(const WorkerOptions& options, const std::string& role);

Result<NodeStats> runWorker(const WorkerOptions& options, const JoinInfo& join, GradientSource& source);
// `evaluator` runs on the schedule (evaluation.every_steps versions or every_s seconds,
// on evaluation.test_subset); `finalEvaluator` (the whole test set) once after stop.
Result<NodeStats> runEvaluator(const WorkerOptions& options, const JoinInfo& join, ParameterEvaluator& evaluator,
                               ParameterEvaluator& finalEvaluator);

}  // namespace dasp::net
