// SPDX-License-Identifier: MIT
#include "net/bench/netns_hosts.h"

#include "net/launch/launcher.h"
#include "net/launch/process.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace dasp::net {
namespace {

constexpr double kCommandS = 10;

}  // namespace

Result<std::unique_ptr<NetnsHosts>> NetnsHosts::create(const std::string& tag, int subnet,
                                                       const std::vector<Host>& hosts) {
  if (subnet < 0 || subnet > 255 || hosts.size() > 200) {
    return Status::error("network namespace hosts: subnet " + std::to_string(subnet) + " and " +
                         std::to_string(hosts.size()) + " hosts do not fit 10.SUBNET.0.11-254");
  }
  if (::geteuid() != 0) return Status::error("network namespaces need root (this process is not)");
  std::unique_ptr<NetnsHosts> made(new NetnsHosts);
  made->m_ip = findProgram("ip");
  made->m_tc = findProgram("tc");
  if (made->m_ip.empty() || made->m_tc.empty()) {
    return Status::error("network namespaces need iproute2 (`ip` and `tc`; Debian package iproute2)");
  }
  made->m_prefix = tag + std::to_string(::getpid() % 100000);
  made->m_subnet = "10." + std::to_string(subnet) + ".0.";
  if (auto st = made->build(hosts); !st) return st;  // the destructor removes what was made
  return made;
}

NetnsHosts::~NetnsHosts() {
  if (!m_ownVeth.empty()) (void)ip({"link", "del", m_ownVeth});
  for (auto it = m_namespaces.rbegin(); it != m_namespaces.rend(); ++it) (void)ip({"netns", "del", *it});
}

std::string NetnsHosts::netns(const std::string& host) const { return m_prefix + "-" + host; }

std::string NetnsHosts::address(const std::string& host) const {
  const auto it = std::find(m_hosts.begin(), m_hosts.end(), host);
  return it == m_hosts.end() ? std::string() : m_subnet + std::to_string(11 + (it - m_hosts.begin()));
}

Status NetnsHosts::ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{m_ip};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = runCommand(argv, kCommandS);
  return out ? Status::ok() : Status::error(out.message());
}

Status NetnsHosts::inNamespace(const std::string& ns, const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv{m_ip, "netns", "exec", ns, program};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = runCommand(argv, kCommandS);
  return out ? Status::ok() : Status::error(out.message());
}

// The link's rate (and delay) on the device's egress: netem while the kernel takes it, else
// a token bucket whose burst is at least one timer tick's worth.
Status NetnsHosts::shape(const std::string& ns, const std::string& device, const Host& link) {
  const std::string rate = std::to_string(std::lround(link.mbit)) + "mbit";
  if (m_netem) {
    std::vector<std::string> netem{"qdisc", "add", "dev", device, "root", "netem"};
    if (link.latencyMs > 0) netem.insert(netem.end(), {"delay", std::to_string(std::lround(link.latencyMs)) + "ms"});
    netem.insert(netem.end(), {"rate", rate});
    if (inNamespace(ns, m_tc, netem)) return Status::ok();
    m_netem = false;  // this kernel has no netem: every link gets tbf
  }
  const auto burstBytes = static_cast<long long>(std::max(16e3, link.mbit * 1e6 / 8 / 100));
  return inNamespace(ns, m_tc,
                     {"qdisc", "add", "dev", device, "root", "tbf", "rate", rate, "burst", std::to_string(burstBytes),
                      "latency", "400ms"});
}

Status NetnsHosts::build(const std::vector<Host>& hosts) {
  const std::string hub = netns("hub");
  if (auto st = ip({"netns", "add", hub}); !st) return st;
  m_namespaces.push_back(hub);
  const std::string ipPath = m_ip;
  if (auto st = inNamespace(hub, ipPath, {"link", "add", "br0", "type", "bridge"}); !st) return st;
  if (auto st = inNamespace(hub, ipPath, {"link", "set", "br0", "up"}); !st) return st;
  // This namespace's way in: its end gets .254, the other end joins the bridge.
  m_ownVeth = m_prefix + "r";
  if (auto st = ip({"link", "add", m_ownVeth, "type", "veth", "peer", "name", m_ownVeth + "p", "netns", hub}); !st) {
    m_ownVeth.clear();
    return st;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"addr", "add", m_subnet + "254/24", "dev", m_ownVeth},
                                                                {"link", "set", m_ownVeth, "up"}}) {
    if (auto st = ip(args); !st) return st;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{{"link", "set", m_ownVeth + "p", "master", "br0"},
                                                                {"link", "set", m_ownVeth + "p", "up"}}) {
    if (auto st = inNamespace(hub, ipPath, args); !st) return st;
  }
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const Host& h = hosts[i];
    m_hosts.push_back(h.name);
    const std::string ns = netns(h.name), device = m_prefix + "h" + std::to_string(i), port = device + "p";
    if (auto st = ip({"netns", "add", ns}); !st) return st;
    m_namespaces.push_back(ns);
    if (auto st = ip({"link", "add", device, "netns", ns, "type", "veth", "peer", "name", port, "netns", hub}); !st) {
      return st;
    }
    for (const auto& args : std::vector<std::vector<std::string>>{{"link", "set", "lo", "up"},
                                                                  {"addr", "add", address(h.name) + "/24", "dev", device},
                                                                  {"link", "set", device, "up"}}) {
      if (auto st = inNamespace(ns, ipPath, args); !st) return st;
    }
    for (const auto& args : std::vector<std::vector<std::string>>{{"link", "set", port, "master", "br0"},
                                                                  {"link", "set", port, "up"}}) {
      if (auto st = inNamespace(hub, ipPath, args); !st) return st;
    }
    if (h.mbit > 0) {
      if (auto st = shape(ns, device, h); !st) return st;   // what leaves the host
      if (auto st = shape(hub, port, h); !st) return st;    // what goes to it
    }
  }
  return Status::ok();
}

}  // namespace dasp::net
