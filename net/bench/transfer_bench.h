// SPDX-License-Identifier: MIT
#pragma once
// Transfer benchmarks behind `dasp bench ps`: push+pull of a large flat model through our
// parameter server over each transport, against a raw TCP loopback echo of the same bytes
// measured in the same run (the ceiling: kernel copies only).
// Threading: each function runs its own server/threads and returns when done.

#include "core/common/result.h"
#include "net/client/ps_client.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dasp::net {

struct TransferBench {
  std::int64_t floats = 0;
  int roundTrips = 0;
  double seconds = 0;
  double gbps = 0;  // bytes moved in both directions / seconds / 1e9
};

// Raw TCP on 127.0.0.1: the client sends floats×4 bytes, the server echoes them back.
Result<TransferBench> benchTcpEcho(std::int64_t floats, int roundTrips);

// The same bytes through gRPC alone, under the server's payload settings (payload_options.h):
// uploaded in chunks on a client stream and downloaded on a server stream, as the chunked
// push and pull move them, to a server that does nothing with them. The ceiling of any
// transfer over gRPC: what push+pull over TCP loses beyond it is the server's own work.
Result<TransferBench> benchGrpcEcho(std::int64_t floats, int roundTrips);

// A way a worker's calls go: a transport (Auto is not one here) and, with `direct`, its own
// path past gRPC where it has one: over TCP the payload socket, over shared memory the
// doorbell. Named "tcp", "unix", "shm", or with "_grpc" when not direct ("tcp_grpc").
struct TransferPath {
  LocalTransport transport = LocalTransport::Tcp;
  bool direct = true;
};
std::string nameOf(const TransferPath& path);

// One worker pushes a gradient of `floats` values and pulls the parameters back, ASP
// policy, to an in-process ParameterServer over `path`, with the calls a worker makes
// (nodes.cpp): one PushPull where it makes one (shared memory, the payload socket), else
// a chunked Push then a chunked Pull; the gradient where a worker has it (over shared
// memory: in the region's slot, which it computes into). An error when the transport asked
// for is not what the worker got.
Result<TransferBench> benchPushPull(std::int64_t floats, int roundTrips, TransferPath path);

// The rates of `dasp bench ps` (b), measured in `rounds` interleaved rounds: each round
// times the TCP echo, the gRPC echo and push+pull over each of `transports` (`roundTrips`
// each), and every ratio is taken within its round. A machine's speed drifts during a run
// (the TCP echo has been seen to move between 1.5 and 4.8 GB/s within minutes on one
// machine), which moves a round's rates together; the medians over the rounds are reported.
struct TransportRate {
  TransferPath path;
  double gbps = 0;        // median over the rounds
  double vsTcpEcho = 0;   // median of the rounds' push+pull ÷ TCP echo
  double vsGrpcEcho = 0;  // median of the rounds' push+pull ÷ gRPC echo
};
struct TransferRates {
  int rounds = 0;
  double tcpEchoGbps = 0;    // median
  double grpcEchoGbps = 0;   // median
  double grpcEchoVsTcp = 0;  // median of the rounds' ratios
  std::vector<TransportRate> pushPull;
};
Result<TransferRates> benchTransferRates(std::int64_t floats, int rounds, int roundTrips,
                                         const std::vector<TransferPath>& paths);

// The latency floor of a worker's iteration: one PushPull call (the call a worker makes
// per iteration) of a 16-float model over `path`, in microseconds, back to back and
// with `busyS` of computing on the client before each call, as a worker computes its
// gradient while the server's threads sleep. The difference is the cost of waking them.
struct CallLatency {
  double backToBackUs = 0;
  double afterBusyUs = 0;
  double busyS = 0;
};
Result<CallLatency> benchCallLatency(TransferPath path, double busyS, int calls);

}  // namespace dasp::net
