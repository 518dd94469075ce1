// SPDX-License-Identifier: MIT
#pragma once
// ParameterServer: the gRPC parameter server of one run. It owns the ParameterStore and
// the SyncPolicy; a pull is answered only when the policy releases the worker (parked
// pulls hold no thread: gRPC's callback API), a push is validated (size, NaN/Inf) and then
// applied, held for a round or dropped as the policy says. Every iteration, applied
// gradient, decision and evaluation is streamed to Watch subscribers (the runner) in
// batches.
//
// Threading: start() and shutdown() from one owning thread; the RPC handlers run on gRPC's
// threads and share one mutex; a ticker thread drives the policy's time-based decisions.

#include "core/result.h"
#include "core/spec.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dasp::net {

struct ServerOptions {
  std::string bindAddress = "127.0.0.1";  // never all interfaces unless asked
  int port = 0;                           // 0 = pick a free port
  ExperimentSpec spec;                    // resolved (withDefaults)
  int workers = 1;
  std::string modelName;
  std::vector<float> initialParameters;
};

struct ServerStats {
  std::int64_t version = 0;
  std::int64_t pushes = 0;
  std::int64_t applied = 0;   // gradients applied
  std::int64_t dropped = 0;   // gradients dropped by the policy
  std::int64_t rejected = 0;  // pushes rejected (size, NaN/Inf, unknown rank)
  std::int64_t bytesReceived = 0;
  std::int64_t bytesSent = 0;
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
  // A copy of the current parameters and their version.
  std::int64_t snapshot(std::vector<float>& out) const;

 private:
  struct Impl;
  explicit ParameterServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dasp::net
