// SPDX-License-Identifier: MIT
#pragma once
// NetnsHosts: "hosts" on this machine for a benchmark (`dasp bench ps --shards`): network
// namespaces, each with a veth into a bridge that lives in a hub namespace, plus a veth
// from this process's own namespace into the bridge, so that a runner here reaches every
// host. A host's link may be limited to `mbit` in both directions (on the host's end and
// on the bridge port that leads to it), so that what crosses it is bound by that link as
// between machines: with `tc netem` (rate and `latencyMs` of delay) where the kernel has
// it, else with `tc tbf` (rate only: hasNetem() says which). Addresses are
// 10.SUBNET.0.11, .12, ... in host order; this process is 10.SUBNET.0.254. Two sets of
// hosts alive at once need different subnets.
//
// Everything created is removed by the destructor (the namespaces take their veths with
// them; this namespace's veth is deleted), also after a failed create(). Needs root and
// iproute2 (`ip`, `tc`); create() says which is missing or which command failed.
// Threading: one thread.

#include "core/common/result.h"

#include <memory>
#include <string>
#include <vector>

namespace dasp::net {

class NetnsHosts {
 public:
  struct Host {
    std::string name;
    double mbit = 0;       // the link's rate each way; 0: unshaped
    double latencyMs = 0;  // its delay each way, where netem works
  };
  // `tag` keeps the names of concurrent users apart (a few letters; the pid is added);
  // `subnet` is the second byte of their addresses.
  static Result<std::unique_ptr<NetnsHosts>> create(const std::string& tag, int subnet, const std::vector<Host>& hosts);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  // The host's namespace (launch.hosts[].netns) and address (launch.hosts[].address).
  std::string netns(const std::string& host) const;
  std::string address(const std::string& host) const;
  // The shaped links are netem's (rate and delay), not tbf's (rate only).
  bool hasNetem() const { return m_netem; }

 private:
  NetnsHosts() = default;
  Status build(const std::vector<Host>& hosts);
  Status ip(const std::vector<std::string>& args);
  Status inNamespace(const std::string& ns, const std::string& program, const std::vector<std::string>& args);
  Status shape(const std::string& ns, const std::string& device, const Host& link);

  std::string m_ip, m_tc;
  std::string m_prefix;                   // of every name made here
  std::string m_subnet;                   // "10.232.0."
  bool m_netem = true;                    // until the kernel refuses it
  std::vector<std::string> m_namespaces;  // made, to delete
  std::string m_ownVeth;                  // made in this namespace, to delete
  std::vector<std::string> m_hosts;       // names, in order
};

}  // namespace dasp::net
