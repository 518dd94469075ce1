// SPDX-License-Identifier: MIT
// Which host each node of a run goes to (Placement, placeNodes) and how nodes dial a server.
#include "net/launch/launcher.h"

#include "core/common/build_info.h"
#include "core/spec/spec.h"
#include "net/security/bind_address.h"
#include "net/security/node_security.h"

#include <algorithm>
#include <regex>
#include <set>

namespace dasp::net {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

// --- placement ---

const v1::HostSpec& Placement::hostOf(const std::string& node) const {
  const auto it = nodeHost.find(node);
  return hosts.at(it == nodeHost.end() ? 0 : it->second);
}

Result<Placement> placeNodes(const ExperimentSpec& spec, const std::vector<std::string>& servers,
                             const std::vector<std::string>& workers, const std::string& localDasp) {
  Placement out;
  const auto& launch = spec.launch();
  if (launch.hosts_size() == 0) {
    v1::HostSpec here;
    here.set_name(hostName());
    here.set_address("127.0.0.1");
    here.set_dasp_path(localDasp);
    here.set_work_dir("/tmp");
    out.hosts.push_back(here);
    for (const auto& s : servers) out.nodeHost[s] = 0;
    for (const auto& w : workers) out.nodeHost[w] = 0;
    out.nodeHost["evaluator"] = 0;
    return out;
  }
  out.placed = true;
  std::map<std::string, int> index;
  std::vector<std::string> hostNames;
  for (int i = 0; i < launch.hosts_size(); ++i) {
    const auto& name = launch.hosts(i).name();
    if (name.empty()) return Status::error("launch.hosts[" + std::to_string(i) + "].name: required");
    if (!index.emplace(name, i).second) {
      return Status::error("launch.hosts[" + std::to_string(i) + "].name: duplicate host name '" + name + "'");
    }
    hostNames.push_back(name);
  }
  std::map<std::string, int> chosen;  // node -> launch.hosts index
  auto lookup = [&](const std::string& field, const std::string& name) -> Result<int> {
    const auto it = index.find(name);
    if (it == index.end()) {
      return Status::error(field + ": unknown host '" + name + "' (hosts: " + joined(hostNames) + ")");
    }
    return it->second;
  };
  const auto& placement = launch.placement();
  for (std::size_t i = 0; i < servers.size(); ++i) {
    Result<int> h = 0;
    if (placement.servers_size() > 0) {
      const int k = static_cast<int>(i % static_cast<std::size_t>(placement.servers_size()));
      h = lookup("launch.placement.servers[" + std::to_string(k) + "]", placement.servers(k));
    }
    if (!h) return h.status();
    chosen[servers[i]] = h.value();
  }
  if (placement.evaluator().empty()) {
    chosen["evaluator"] = servers.empty() ? 0 : chosen[servers.front()];
  } else {
    auto h = lookup("launch.placement.evaluator", placement.evaluator());
    if (!h) return h.status();
    chosen["evaluator"] = h.value();
  }
  for (std::size_t r = 0; r < workers.size(); ++r) {
    const int h = workerHostIndex(spec, r);
    if (h < 0) {
      const int k = static_cast<int>(r % static_cast<std::size_t>(placement.workers_size()));
      return lookup("launch.placement.workers[" + std::to_string(k) + "]", placement.workers(k)).status();
    }
    chosen[workers[r]] = h;
  }
  // Only the hosts in use, in launch.hosts order, with their defaults.
  std::map<int, std::size_t> compact;
  for (const auto& [node, h] : chosen) compact[h] = 0;
  for (auto& [h, slot] : compact) {
    v1::HostSpec host = launch.hosts(h);
    if (host.address().empty()) host.set_address(host.name());
    if (host.dasp_path().empty()) host.set_dasp_path(localDasp);
    if (host.work_dir().empty()) host.set_work_dir("/tmp");
    slot = out.hosts.size();
    out.hosts.push_back(host);
  }
  for (const auto& [node, h] : chosen) out.nodeHost[node] = compact[h];
  std::map<std::size_t, int> placedOn;  // host -> its workers so far
  for (const auto& w : workers) {
    const std::size_t h = out.nodeHost[w];
    const int gpus = out.hosts[h].gpus();
    const int nth = placedOn[h]++;
    if (gpus > 0) out.gpuSlot[w] = nth % gpus;
  }
  return out;
}

std::vector<std::string> serverNodeNames(const ExperimentSpec& spec) {
  std::vector<std::string> names;
  if (chainsWholeServers(spec)) {
    for (int i = 0; i < spec.recovery().replicas(); ++i) names.push_back("server-" + std::to_string(i));
    return names;
  }
  const int shards = spec.ps().shards();
  names.push_back("server");
  for (int i = 1; i < shards; ++i) names.push_back("shard-" + std::to_string(i));
  for (int r = 1; chainsShards(spec) && r < spec.recovery().replicas(); ++r) {
    for (int i = 1; i < shards; ++i) names.push_back("shard-" + std::to_string(i) + "-r" + std::to_string(r));
  }
  return names;
}

bool chainsWholeServers(const ExperimentSpec& spec) {
  return spec.recovery().mode() == v1::RecoverySpec::CHAIN && spec.ps().shards() <= 1;
}

bool chainsShards(const ExperimentSpec& spec) {
  return spec.recovery().mode() == v1::RecoverySpec::CHAIN && spec.ps().shards() > 1;
}

ShardProcess shardProcessOf(const std::string& name) {
  static const std::regex pattern(R"(^shard-(\d+)(-r\d+)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return {};
  return {std::stoi(m[1].str()), m[2].matched};
}

std::string serverDialAddress(const std::string& bind, const v1::HostSpec& host, const std::string& port) {
  const std::string h = dialableHost(bind, host.address());
  const bool bareV6 = h.find(':') != std::string::npos && h.front() != '[';
  return (bareV6 ? "[" + h + "]" : h) + ":" + port;
}

}  // namespace dasp::net
