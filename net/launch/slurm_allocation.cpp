// SPDX-License-Identifier: MIT
#include "net/launch/slurm_allocation.h"
#include "net/launch/launcher.h"
#include "core/common/durations.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <utility>

namespace dasp::net {

namespace {

using Clock = std::chrono::steady_clock;

// Prints the job id and its nodes, then holds the allocation until its stdin (the
// runner's socket) ends.
const char* const kHolder = "echo \"$SLURM_JOB_ID $SLURM_JOB_NODELIST ${SLURM_GPUS_ON_NODE:-0}\"; exec cat >/dev/null";

bool asksForNodes(const std::string& arg) {
  return arg == "-N" || arg == "--nodes" || arg.rfind("--nodes=", 0) == 0 ||
         (arg.size() > 2 && arg.rfind("-N", 0) == 0);
}

}  // namespace

std::vector<std::string> sallocCommand(const std::string& salloc, const v1::LaunchSpec& launch,
                                       const std::vector<v1::HostSpec>& hosts, const std::string& jobName) {
  std::vector<std::string> argv{salloc, "--job-name=" + jobName};
  if (!hosts.empty()) {
    std::string nodes;
    for (const auto& h : hosts) nodes += (nodes.empty() ? "" : ",") + h.name();
    argv.insert(argv.end(), {"--nodes=" + std::to_string(hosts.size()), "--nodelist=" + nodes});
  } else if (std::none_of(launch.salloc_args().begin(), launch.salloc_args().end(), asksForNodes)) {
    argv.push_back("--nodes=2");  // one for the servers and the evaluator, one for the workers
  }
  argv.insert(argv.end(), launch.salloc_args().begin(), launch.salloc_args().end());
  argv.insert(argv.end(), {"/bin/sh", "-c", kHolder});
  return argv;
}

Result<std::unique_ptr<SlurmAllocation>> SlurmAllocation::request(const v1::LaunchSpec& launch,
                                                                  const std::vector<v1::HostSpec>& hosts,
                                                                  const std::string& jobName) {
  const std::string salloc = findProgram("salloc");
  if (salloc.empty()) return Status::error("launch.launcher SLURM: no `salloc` in PATH (package slurm-client)");
  SpawnOptions options;
  options.stdinSocket = true;
  options.termWithParent = true;
  auto child = ChildProcess::spawn("salloc", sallocCommand(salloc, launch, hosts, jobName), options);
  if (!child) return child.status();
  std::unique_ptr<SlurmAllocation> a(new SlurmAllocation());
  a->m_salloc = std::move(child).value();
  a->m_hold = a->m_salloc->takeStdin();
  const double waitS = launch.has_allocation_wait_s() ? launch.allocation_wait_s() : 300.0;
  // salloc's own stderr keeps its messages ("Granted job allocation"); nobody reads it on.
  const auto [out, err] = readOutput(*a->m_salloc, deadlineIn<Clock>(waitS),
                                     [](const std::string& o) { return o.find('\n') != std::string::npos; });
  const std::string line = oneLine(out.substr(0, out.find('\n')));
  const std::string id = line.substr(0, line.find(' '));
  const bool numeric = !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (out.find('\n') != std::string::npos && numeric) {
    a->m_jobId = id;
    std::istringstream rest(line.substr(id.size()));
    rest >> a->m_nodeList >> a->m_gpusOnNode;
    return a;
  }
  const auto exit = a->m_salloc->waitFor(0.5);
  const std::string said = err.empty() ? std::string("(no message)") : oneLine(err);
  if (exit) {
    const std::string nodes = hosts.empty() ? std::string("the job") : std::to_string(hosts.size()) + " node(s)";
    return Status::error("launch.launcher SLURM: Slurm refused the allocation for " + nodes + " (salloc: " +
                         exit->describe() + "): " + said);
  }
  a->m_salloc->signal(SIGTERM);  // salloc withdraws the queued request
  return Status::error("launch.launcher SLURM: no allocation within launch.allocation_wait_s " +
                       std::to_string(static_cast<long long>(waitS)) + " s (salloc said: " + said + ")");
}

SlurmAllocation::~SlurmAllocation() {
  if (m_hold >= 0) ::close(m_hold);
  if (!m_salloc) return;
  // salloc ends the job's steps and releases it (KillWait); a stuck one is told twice.
  if (m_salloc->waitFor(15.0)) return;
  m_salloc->signal(SIGTERM);
  if (m_salloc->waitFor(5.0)) return;
  m_salloc->signal(SIGKILL);
  (void)m_salloc->waitFor(5.0);
}

namespace {

// scontrol's stdout for `args`, within `timeoutS`; a failure quotes what it said.
Result<std::string> scontrol(const std::vector<std::string>& args, double timeoutS) {
  const std::string program = findProgram("scontrol");
  if (program.empty()) return Status::error("launch.launcher SLURM: no `scontrol` in PATH (package slurm-client)");
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = runCommand(argv, timeoutS);
  if (!out) return Status::error("launch.launcher SLURM: " + out.message());
  return out;
}

// The value of `key` in one line of `scontrol show node -o` ("NodeAddr=10.0.0.7 ...").
std::string fieldOf(const std::string& line, const std::string& key) {
  const std::string prefix = key + "=";
  std::size_t at = 0;
  while ((at = line.find(prefix, at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const auto start = at + prefix.size();
      return line.substr(start, line.find(' ', start) - start);
    }
    at += prefix.size();
  }
  return {};
}

}  // namespace

Result<std::vector<SlurmNode>> slurmNodes(const std::string& nodeList, double timeoutS) {
  auto names = scontrol({"show", "hostnames", nodeList}, timeoutS);
  if (!names) return names.status();
  std::vector<SlurmNode> nodes;
  std::string commaList;
  std::size_t start = 0;
  const std::string& out = names.value();
  while (start < out.size()) {
    const auto end = std::min(out.find('\n', start), out.size());
    if (end > start) {
      nodes.push_back({out.substr(start, end - start), ""});
      commaList += (commaList.empty() ? "" : ",") + nodes.back().name;
    }
    start = end + 1;
  }
  if (nodes.empty()) return Status::error("launch.launcher SLURM: the node list '" + nodeList + "' names no node");
  auto details = scontrol({"show", "node", "-o", commaList}, timeoutS);
  if (!details) return details.status();
  start = 0;
  const std::string& text = details.value();
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::string name = fieldOf(line, "NodeName");
    for (auto& n : nodes) {
      if (n.name != name) continue;
      n.address = fieldOf(line, "NodeAddr");
    }
  }
  return nodes;
}

Status placeOnSlurmAllocation(ExperimentSpec& spec, const std::string& jobName,
                              std::unique_ptr<SlurmAllocation>& own) {
  auto& launch = *spec.mutable_launch();
  if (launch.launcher() != v1::LaunchSpec::SLURM || launch.hosts_size() > 0) return Status::ok();
  std::string nodeList;
  int gpus = 0;  // the job's GPUs per node: those it asked for, not all the node has
  if (const char* job = std::getenv("SLURM_JOB_ID"); job != nullptr && *job != '\0') {
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    if (list == nullptr || *list == '\0') {
      return Status::error("launch.hosts is empty and Slurm job " + std::string(job) +
                           " has no SLURM_JOB_NODELIST: name the hosts in launch.hosts");
    }
    nodeList = list;
    if (const char* onNode = std::getenv("SLURM_GPUS_ON_NODE"); onNode != nullptr) {
      gpus = std::max(0, std::atoi(onNode));
    }
  } else {
    auto allocation = SlurmAllocation::request(launch, {}, jobName);
    if (!allocation) return allocation.status();
    own = std::move(allocation).value();
    nodeList = own->nodeList();
    gpus = own->gpusOnNode();
  }
  auto nodes = slurmNodes(nodeList);
  if (!nodes) return nodes.status();
  placeOnNodes(launch, nodes.value(), gpus);
  return Status::ok();
}

void placeOnNodes(v1::LaunchSpec& launch, const std::vector<SlurmNode>& nodes, int gpus) {
  if (nodes.empty()) return;
  for (const auto& node : nodes) {
    auto* host = launch.add_hosts();
    host->set_name(node.name);
    if (!node.address.empty()) host->set_address(node.address);
    host->set_gpus(gpus);
  }
  const auto& first = nodes.front().name;
  auto* placement = launch.mutable_placement();
  placement->clear_servers();
  placement->add_servers(first);
  placement->set_evaluator(first);
  placement->clear_workers();
  for (std::size_t i = nodes.size() > 1 ? 1 : 0; i < nodes.size(); ++i) placement->add_workers(nodes[i].name);
}

}  // namespace dasp::net
