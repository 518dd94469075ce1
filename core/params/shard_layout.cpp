// SPDX-License-Identifier: MIT
#include "core/params/shard_layout.h"

#include <string>

namespace dasp {

Result<ShardLayout> shardLayout(std::int64_t parameters, int shards) {
  if (shards < 1) return Status::error("ps.shards: must be at least 1 (got " + std::to_string(shards) + ")");
  if (parameters < 1) return Status::error("ps.shards: a model without parameters cannot be sharded");
  const std::int64_t pages = (parameters + kShardPage - 1) / kShardPage;
  if (shards > pages) {
    return Status::error("ps.shards: " + std::to_string(shards) + " shards of a model of " +
                         std::to_string(parameters) + " parameters leave a shard empty: each owns whole pages of " +
                         std::to_string(kShardPage) + " parameters, so at most " + std::to_string(pages) +
                         " shards");
  }
  ShardLayout layout;
  layout.begin.assign(static_cast<std::size_t>(shards) + 1, 0);
  for (int i = 1; i < shards; ++i) {
    // Shard i starts at page floor(i · pages / S): sizes differ by at most one page.
    layout.begin[static_cast<std::size_t>(i)] = (static_cast<std::int64_t>(i) * pages / shards) * kShardPage;
  }
  layout.begin.back() = parameters;
  return layout;
}

Result<ShardLayout> shardLayoutFrom(const std::vector<std::int64_t>& begin) {
  if (begin.size() < 2 || begin.front() != 0) {
    return Status::error("shard layout: " + std::to_string(begin.size()) + " boundaries not starting at 0");
  }
  for (std::size_t i = 1; i < begin.size(); ++i) {
    if (begin[i] <= begin[i - 1]) return Status::error("shard layout: boundary " + std::to_string(i) + " does not increase");
    if (i + 1 < begin.size() && begin[i] % kShardPage != 0) {
      return Status::error("shard layout: boundary " + std::to_string(i) + " (" + std::to_string(begin[i]) +
                           ") is not at a page of " + std::to_string(kShardPage) + " parameters");
    }
  }
  ShardLayout layout;
  layout.begin = begin;
  return layout;
}

}  // namespace dasp
