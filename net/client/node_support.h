// SPDX-License-Identifier: MIT
#pragma once
// What a node's loops share (the worker's and the evaluator's: nodes.cpp,
// evaluator_loop.cpp): their log line, cancellation, retries while a server is unreachable,
// and the outage reports they print. Internal to net/client.
// Threading: plain functions; each call on the calling node's thread.

#include "core/common/durations.h"
#include "net/client/nodes.h"
#include "net/client/ps_client.h"
#include "net/client/recovery_line.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace dasp::net::node_support {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
inline bool cancelled(const WorkerOptions& o) { return o.cancel != nullptr && o.cancel->load(); }
inline void say(const WorkerOptions& o, const std::string& text) {
  if (o.log) o.log(text);
}

// Retries a call while the server is unreachable, with exponential backoff (0.2 s → 2 s),
// for at most connectTimeoutS; says so once per attempt.
template <typename Call>
grpc::Status withRetry(const WorkerOptions& o, const char* what, NodeStats& stats, Call&& call) {
  const auto start = Clock::now();
  double backoff = 0.2;
  int attempt = 0;
  while (true) {
    auto status = call();
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || cancelled(o)) return status;
    ++attempt;
    ++stats.retries;
    if (secondsSince(start) + backoff > o.connectTimeoutS) return status;
    say(o, std::string(what) + ": server " + o.server + " unreachable (" + describe(status) + "); retry " +
               std::to_string(attempt) + " in " + std::to_string(backoff).substr(0, 4) + " s");
    std::this_thread::sleep_for(durationFromSeconds(backoff));
    backoff = std::min(backoff * 2, 2.0);
  }
}

// The servers to try, in chain order.
std::vector<std::string> serverList(const WorkerOptions& options);
// A status that means "no server here (any more)": the node looks for one.
bool isOutage(const grpc::Status& status);
void recoveryLine(const WorkerOptions& o, const RecoveryReport& report);
RecoveryReport outageReport(const WorkerOptions& o, const std::string& server, const grpc::Status& why,
                            std::int64_t acked);

}  // namespace dasp::net::node_support
