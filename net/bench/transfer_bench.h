// SPDX-License-Identifier: MIT
#pragma once
// Transfer benchmarks behind `dasp bench ps`: push+pull of a large flat model through our
// parameter server over each transport, against a raw TCP loopback echo of the same bytes
// measured in the same run (the ceiling: kernel copies only).
// Threading: each function runs its own server/threads and returns when done.

#include "core/common/result.h"
#include "net/client/ps_client.h"

#include <cstdint>

namespace dasp::net {

struct TransferBench {
  std::int64_t floats = 0;
  int roundTrips = 0;
  double seconds = 0;
  double gbps = 0;  // bytes moved in both directions / seconds / 1e9
};

// Raw TCP on 127.0.0.1: the client sends floats×4 bytes, the server echoes them back.
Result<TransferBench> benchTcpEcho(std::int64_t floats, int roundTrips);

// One worker pushes a gradient of `floats` values and pulls the parameters back, ASP
// policy, to an in-process ParameterServer: over loopback TCP, its Unix socket, or shared
// memory (`transport`; Auto is not a transport here). An error when the transport asked
// for is not what the worker got.
Result<TransferBench> benchPushPull(std::int64_t floats, int roundTrips, LocalTransport transport);

// The latency floor of a worker's iteration: one PushPull call (the call a worker makes
// per iteration) of a 16-float model over `transport`, in microseconds, back to back and
// with `busyS` of computing on the client before each call, as a worker computes its
// gradient while the server's threads sleep. The difference is the cost of waking them.
// Over shared memory the call rings the region's doorbell, or (`doorbell` false) goes
// through gRPC as over the Unix socket.
struct CallLatency {
  double backToBackUs = 0;
  double afterBusyUs = 0;
  double busyS = 0;
};
Result<CallLatency> benchCallLatency(LocalTransport transport, double busyS, int calls, bool doorbell = true);

}  // namespace dasp::net
