// SPDX-License-Identifier: MIT
#include "net/launch/slurm_allocation.h"
#include "core/common/durations.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>

namespace dasp::net {

namespace {

using Clock = std::chrono::steady_clock;

// Prints the job id, then holds the allocation until its stdin (the runner's socket) ends.
const char* const kHolder = "echo \"$SLURM_JOB_ID\"; exec cat >/dev/null";

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Reads what is there on `fd` into `into` (non-blocking after poll); false at end of file.
bool readSome(int fd, std::string& into) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) into.append(buf, static_cast<std::size_t>(n));
  return n > 0 || (n < 0 && errno == EINTR);
}

}  // namespace

std::vector<std::string> sallocCommand(const std::string& salloc, const v1::LaunchSpec& launch,
                                       const std::vector<v1::HostSpec>& hosts, const std::string& jobName) {
  std::string nodes;
  for (const auto& h : hosts) nodes += (nodes.empty() ? "" : ",") + h.name();
  std::vector<std::string> argv{salloc, "--nodes=" + std::to_string(hosts.size()), "--nodelist=" + nodes,
                                "--job-name=" + jobName};
  argv.insert(argv.end(), launch.salloc_args().begin(), launch.salloc_args().end());
  argv.insert(argv.end(), {"/bin/sh", "-c", kHolder});
  return argv;
}

Result<std::unique_ptr<SlurmAllocation>> SlurmAllocation::request(const std::string& salloc,
                                                                  const v1::LaunchSpec& launch,
                                                                  const std::vector<v1::HostSpec>& hosts,
                                                                  const std::string& jobName) {
  SpawnOptions options;
  options.stdinSocket = true;
  options.outlivesParent = true;
  auto child = ChildProcess::spawn("salloc", sallocCommand(salloc, launch, hosts, jobName), options);
  if (!child) return child.status();
  std::unique_ptr<SlurmAllocation> a(new SlurmAllocation());
  a->m_salloc = std::move(child).value();
  a->m_hold = a->m_salloc->takeStdin();
  const double waitS = launch.has_allocation_wait_s() ? launch.allocation_wait_s() : 300.0;
  const auto until = deadlineIn<Clock>(waitS);
  std::string out, err;
  int fds[2] = {a->m_salloc->stdoutFd(), a->m_salloc->stderrFd()};
  while (out.find('\n') == std::string::npos && (fds[0] >= 0 || fds[1] >= 0)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(std::min<long long>(left, 500))) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0 && (p[i].revents & (POLLIN | POLLHUP)) != 0 && !readSome(fds[i], i == 0 ? out : err)) {
        ::close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  // salloc's own stderr keeps its messages ("Granted job allocation"); nobody reads it on.
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  const std::string id = trimmed(out.substr(0, out.find('\n')));
  const bool numeric = !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (out.find('\n') != std::string::npos && numeric) {
    a->m_jobId = id;
    return a;
  }
  const auto exit = a->m_salloc->waitFor(0.5);
  const std::string said = err.empty() ? std::string("(no message)") : trimmed(err);
  if (exit) {
    return Status::error("launch.launcher SLURM: Slurm refused the allocation for " + std::to_string(hosts.size()) +
                         " node(s) (salloc: " + exit->describe() + "): " + said);
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

}  // namespace dasp::net
