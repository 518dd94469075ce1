// SPDX-License-Identifier: MIT
#pragma once
// ShardLayout: the key ranges of a sharded parameter server (ps.shards). The flat
// parameter vector is split into S contiguous ranges of near-equal size, each of whole
// pages of kShardPage parameters (4 KiB; the last range ends with the model, wherever that
// falls). Page-aligned ranges keep every range's buffers cache-line and page aligned, and
// are whole blocks of the gradient norm's sum (gradient_guard.h), so the shards' norms add
// up to the bits of one server's.
// Threading: a value; any thread.

#include "core/common/result.h"

#include <cstdint>
#include <vector>

namespace dasp {

inline constexpr std::int64_t kShardPage = 1024;  // parameters (float32): 4 KiB
inline constexpr int kMaxShards = 4096;           // ps.shards and `dasp server --shards`

struct ShardLayout {
  // S + 1 values: begin[0] = 0 < begin[1] < ... < begin[S] = the parameter count.
  std::vector<std::int64_t> begin{0, 0};

  int shards() const { return static_cast<int>(begin.size()) - 1; }
  std::int64_t parameters() const { return begin.back(); }
  std::int64_t offset(int shard) const { return begin[static_cast<std::size_t>(shard)]; }
  std::int64_t size(int shard) const {
    return begin[static_cast<std::size_t>(shard) + 1] - begin[static_cast<std::size_t>(shard)];
  }
};

// The layout of `parameters` values over `shards` servers; an error naming ps.shards when
// a shard would own nothing (more shards than pages of the model).
Result<ShardLayout> shardLayout(std::int64_t parameters, int shards);

// The layout a server's join reply describes (JoinReply.shard_begin): S + 1 increasing
// values from 0, every range of whole pages but the last; else an error that says why.
Result<ShardLayout> shardLayoutFrom(const std::vector<std::int64_t>& begin);

}  // namespace dasp
