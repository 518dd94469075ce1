// SPDX-License-Identifier: MIT
#pragma once
// The servers of a sharded parameter server in this process, for benchmarks and tests (a
// run starts one `dasp server` process per shard). Shards 1..S-1 start first, then shard 0
// with their addresses, as the runner starts them.
// Threading: the caller's thread.

#include "core/common/result.h"
#include "net/server/ps_server.h"

#include <memory>
#include <vector>

namespace dasp::net {

// `options` is the whole model's (initialParameters: all of them; its shard fields are
// set here); shard i gets range i of shardLayout(parameters, shards). [0]: shard 0, whose
// port workers dial.
Result<std::vector<std::unique_ptr<ParameterServer>>> startLocalShards(const ServerOptions& options, int shards);

}  // namespace dasp::net
