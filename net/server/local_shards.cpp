// SPDX-License-Identifier: MIT
#include "net/server/local_shards.h"

#include <string>

namespace dasp::net {

Result<std::vector<std::unique_ptr<ParameterServer>>> startLocalShards(const ServerOptions& options, int shards) {
  const auto& all = options.initialParameters;
  auto layout = shardLayout(static_cast<std::int64_t>(all.size()), shards);
  if (!layout) return layout.status();
  std::vector<std::unique_ptr<ParameterServer>> servers(static_cast<std::size_t>(shards));
  std::vector<std::string> peers;
  for (int i = shards - 1; i >= 0; --i) {
    ServerOptions o = options;
    o.name = i == 0 ? options.name : "shard-" + std::to_string(i);
    o.shard = i;
    o.layout = layout.value();
    o.initialParameters.assign(all.begin() + layout->offset(i), all.begin() + layout->offset(i) + layout->size(i));
    if (i == 0) o.shardAddresses = peers;
    auto started = ParameterServer::start(std::move(o));
    if (!started) return started.status().withContext("shard " + std::to_string(i));
    if (i > 0) peers.insert(peers.begin(), "127.0.0.1:" + std::to_string(started.value()->port()));
    servers[static_cast<std::size_t>(i)] = std::move(started).value();
  }
  return servers;
}

}  // namespace dasp::net
