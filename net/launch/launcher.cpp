// SPDX-License-Identifier: MIT
#include "net/launch/launcher.h"
#include "net/launch/slurm_allocation.h"
#include "core/common/durations.h"

#include "net/security/node_security.h"

#include "core/common/build_info.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

// How often the runner proves to remote wrappers that it is alive (the wrapper gives up
// after about 30 s without a PING, see nodeWrapperScript).
constexpr auto kHeartbeatEvery = std::chrono::seconds(5);

std::string lastLines(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  // The last three lines are enough to say what went wrong.
  std::size_t pos = t.size();
  for (int lines = 0; lines < 3 && pos != std::string::npos && pos > 0; ++lines) pos = t.rfind('\n', pos - 1);
  std::string tail = pos == std::string::npos ? t : t.substr(pos + 1);
  std::replace(tail.begin(), tail.end(), '\n', ' ');
  return tail;
}


// --- short helper commands (probes, file copies, clean-up), run side by side ---

struct CommandRun {
  std::vector<std::string> argv;
  std::string input;  // written to stdin, then end of file
};
struct CommandResult {
  std::optional<ExitInfo> exit;
  std::string err;
  std::string failure;  // could not start, or timed out
};

// Runs every command at once and waits (at most `timeoutS`) for all of them; stdout is
// discarded, stderr kept for messages. Called on the runner's thread.
std::vector<CommandResult> runCommands(const std::vector<CommandRun>& runs, double timeoutS) {
  struct Running {
    std::unique_ptr<ChildProcess> child;
    int in = -1, out = -1, err = -1;
    std::size_t written = 0;
  };
  std::vector<CommandResult> results(runs.size());
  std::vector<Running> procs(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    SpawnOptions options;
    options.stdinSocket = true;
    auto child = ChildProcess::spawn(runs[i].argv.front(), runs[i].argv, options);
    if (!child) {
      results[i].failure = child.message();
      continue;
    }
    auto& p = procs[i];
    p.child = std::move(child).value();
    p.in = p.child->takeStdin();
    p.out = p.child->stdoutFd();
    p.err = p.child->stderrFd();
    (void)fcntl(p.in, F_SETFL, fcntl(p.in, F_GETFL) | O_NONBLOCK);
    if (runs[i].input.empty()) {
      close(p.in);
      p.in = -1;
    }
  }
  const auto until = deadlineIn<Clock>(timeoutS);
  char buf[4096];
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, int>> owners;  // (command, 0 in / 1 out / 2 err)
    for (std::size_t i = 0; i < procs.size(); ++i) {
      auto& p = procs[i];
      const int mine[3] = {p.in, p.out, p.err};
      for (int which = 0; which < 3; ++which) {
        if (mine[which] < 0) continue;
        fds.push_back({mine[which], static_cast<short>(which == 0 ? POLLOUT : POLLIN), 0});
        owners.emplace_back(i, which);
      }
    }
    if (fds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR) break;
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto& p = procs[owners[k].first];
      const auto& input = runs[owners[k].first].input;
      if (owners[k].second == 0) {
        const ssize_t n = ::send(p.in, input.data() + p.written, input.size() - p.written, MSG_NOSIGNAL);
        if (n > 0) p.written += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || p.written >= input.size()) {
          close(p.in);
          p.in = -1;
        }
        continue;
      }
      int& fd = owners[k].second == 1 ? p.out : p.err;
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        if (owners[k].second == 2 && results[owners[k].first].err.size() < 65536) {
          results[owners[k].first].err.append(buf, static_cast<std::size_t>(n));
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fd);
        fd = -1;
      }
    }
  }
  for (std::size_t i = 0; i < procs.size(); ++i) {
    auto& p = procs[i];
    if (!p.child) continue;
    for (int* fd : {&p.in, &p.out, &p.err}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    const double left = std::chrono::duration<double>(until - Clock::now()).count();
    results[i].exit = p.child->waitFor(std::max(0.1, left));
    if (!results[i].exit) {
      p.child->signal(SIGKILL);
      p.child->waitFor(5.0);
      results[i].failure = "no answer within " + std::to_string(static_cast<int>(std::lround(timeoutS))) + " s";
    }
  }
  return results;
}

// --- LOCAL ---

class LocalLauncher final : public NodeLauncher {
 public:
  explicit LocalLauncher(std::string runDir) : m_runDir(std::move(runDir)) {}
  const char* kind() const override { return "local"; }

  Status prepare(const std::vector<v1::HostSpec>& hosts) override {
    for (const auto& h : hosts) {
      const std::string who = "host '" + h.name() + "'";
      if (access(findProgram(h.dasp_path()).c_str(), X_OK) != 0) {
        return Status::error(who + ": no executable dasp at '" + h.dasp_path() + "' (launch.hosts dasp_path)");
      }
      if (h.netns().empty()) continue;
      if (m_ip.empty()) m_ip = findProgram("ip");
      if (m_ip.empty()) {
        return Status::error(who + " runs in network namespace '" + h.netns() +
                             "', but the `ip` tool (package iproute2) is not installed");
      }
      struct stat st {};
      const bool exists = stat(("/run/netns/" + h.netns()).c_str(), &st) == 0 ||
                          stat(("/var/run/netns/" + h.netns()).c_str(), &st) == 0;
      if (!exists) {
        return Status::error(who + ": network namespace '" + h.netns() + "' does not exist (launch.hosts netns; " +
                             "create it with `ip netns add " + h.netns() +
                             "`; `ip netns list` shows the existing ones)");
      }
    }
    return Status::ok();
  }

  std::string runDir(const v1::HostSpec&) const override { return m_runDir; }

  Result<std::string> putFile(const v1::HostSpec&, const std::string& fileName, const std::string& content) override {
    const std::string path = m_runDir + "/" + fileName;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Status::error("cannot write " + path + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        return Status::error("cannot write " + path + ": " + why);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return path;
  }

  Result<std::unique_ptr<NodeProcess>> start(const NodeStart& node) override {
    std::vector<std::string> argv;
    if (!node.host.netns().empty()) {
      if (m_ip.empty()) m_ip = findProgram("ip");
      argv = {m_ip.empty() ? std::string("ip") : m_ip, "netns", "exec", node.host.netns()};
    }
    argv.push_back(findProgram(node.host.dasp_path()));
    argv.insert(argv.end(), node.args.begin(), node.args.end());
    auto env = node.env;
    env["DASP_RUN_DIR"] = m_runDir;
    if (const auto slot = env.find("DASP_GPU_SLOT"); slot != env.end()) {
      env["CUDA_VISIBLE_DEVICES"] = cudaVisibleDevices(std::stoi(slot->second), std::getenv("CUDA_VISIBLE_DEVICES"));
    }
    return NodeProcess::startLocal(node.name, node.host.name(), argv, env);
  }

 private:
  std::string m_runDir;
  std::string m_ip;
};

// --- SSH and SLURM: the wrapper on the host, a control channel, a heartbeat ---

// SSH and SLURM differ only in the command that runs an argv on a host (transport) and in
// how a host is named in messages.
class RemoteLauncher final : public NodeLauncher {
 public:
  enum class Tool { Ssh, Srun };
  RemoteLauncher(Tool tool, std::string binary, v1::LaunchSpec launch, const std::string& localRunDir,
                 std::unique_ptr<SlurmAllocation> allocation)
      : m_launch(std::move(launch)), m_toolKind(tool), m_binary(std::move(binary)),
        m_tool(tool == Tool::Ssh ? "ssh" : "srun"), m_allocation(std::move(allocation)) {
    if (m_allocation) {
      m_jobId = m_allocation->jobId();
    } else if (const char* job = std::getenv("SLURM_JOB_ID"); job != nullptr && tool == Tool::Srun) {
      m_jobId = job;
    }
    const auto slash = localRunDir.rfind('/');
    m_dirName = (slash == std::string::npos ? localRunDir : localRunDir.substr(slash + 1)) + "-" + hostName();
    m_connectTimeoutS = m_launch.has_connect_timeout_s() ? m_launch.connect_timeout_s() : 10.0;
    m_heartbeat = std::thread([this] { heartbeatLoop(); });
  }

  ~RemoteLauncher() override {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_stop = true;
    }
    m_cv.notify_all();
    m_heartbeat.join();
    // The run's directories on the hosts (the runner has stopped every node by now).
    std::vector<CommandRun> runs;
    for (const auto& h : m_prepared) {
      runs.push_back({transport(h, {"/bin/sh", "-c", "rm -rf -- \"$1\"", "sh", runDir(h)}), {}});
    }
    if (!runs.empty()) (void)runCommands(runs, m_connectTimeoutS + 10);
  }

  const char* kind() const override { return m_toolKind == Tool::Ssh ? "ssh" : "slurm"; }

  Status prepare(const std::vector<v1::HostSpec>& hosts) override {
    if (m_toolKind == Tool::Srun && m_jobId.empty()) {
      // Not inside an allocation: the run holds its own for as long as it lasts.
      auto allocation = SlurmAllocation::request(m_launch, hosts, m_dirName);
      if (!allocation) return allocation.status();
      m_allocation = std::move(allocation).value();
      m_jobId = m_allocation->jobId();
    }
    // One command per host, all at once: reachable, dasp there, the run directory made.
    static const std::string script =
        "umask 077; case $1 in */*) test -x \"$1\" ;; *) command -v \"$1\" >/dev/null 2>&1 ;; esac || "
        "{ echo \"no executable dasp at '$1' on this host (launch.hosts dasp_path)\" >&2; exit 127; }; "
        "mkdir -p -- \"$2\" || exit 126";
    std::vector<CommandRun> runs;
    for (const auto& h : hosts) {
      runs.push_back({transport(h, {"/bin/sh", "-c", script, "sh", h.dasp_path(), runDir(h)}), {}});
    }
    const auto results = runCommands(runs, m_connectTimeoutS + 20);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      const auto& r = results[i];
      if (r.exit && r.exit->exitCode && *r.exit->exitCode == 0) m_prepared.push_back(hosts[i]);
    }
    std::string problems;  // every host that failed, so one attempt shows them all
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      const auto& r = results[i];
      if (r.exit && r.exit->exitCode && *r.exit->exitCode == 0) continue;
      problems += (problems.empty() ? "" : "; ") + describeHost(hosts[i]) + ": " +
                  describeFailure(r, "checking the host");
    }
    return problems.empty() ? Status::ok() : Status::error(problems);
  }

  std::string runDir(const v1::HostSpec& host) const override {
    std::string dir = host.work_dir().empty() ? std::string("/tmp") : host.work_dir();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + "/" + m_dirName;
  }

  Result<std::string> putFile(const v1::HostSpec& host, const std::string& fileName,
                              const std::string& content) override {
    const std::string path = runDir(host) + "/" + fileName;
    const auto results =
        runCommands({{transport(host, {"/bin/sh", "-c", "umask 077; cat > \"$1\"", "sh", path}), content}},
                    m_connectTimeoutS + 30);
    const auto& r = results.front();
    if (!r.exit || !r.exit->exitCode || *r.exit->exitCode != 0) {
      return Status::error(describeHost(host) + ": " + describeFailure(r, "copying " + fileName + " to " + path));
    }
    return path;
  }

  Result<std::unique_ptr<NodeProcess>> start(const NodeStart& node) override {
    std::vector<std::string> dasp{node.host.dasp_path()};
    dasp.insert(dasp.end(), node.args.begin(), node.args.end());
    auto env = node.env;
    env["DASP_RUN_DIR"] = runDir(node.host);
    auto started = NodeProcess::startWrapped(node.name, node.host.name(),
                                             transport(node.host, wrapperArgv(dasp), node.name), env);
    if (!started) return Status::error(describeHost(node.host) + ": " + node.name + ": " + started.message());
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_channels.push_back(started.value()->control());
    }
    return started;
  }

 private:
  // The argv that runs `argv` (no shell in between) on `host`; `step` names a Slurm step.
  std::vector<std::string> transport(const v1::HostSpec& host, const std::vector<std::string>& argv,
                                     const std::string& step = "dasp-setup") const {
    return m_toolKind == Tool::Ssh ? sshCommand(m_binary, m_launch, host, argv)
                                   : srunCommand(m_binary, m_launch, host, argv,
                                                 SrunStep{m_allocation ? m_jobId : std::string(), step});
  }

  std::string describeHost(const v1::HostSpec& host) const {
    if (m_toolKind == Tool::Ssh) {
      return "host '" + host.name() + "' (address " + host.address() +
             (host.has_ssh_port() ? ", port " + std::to_string(host.ssh_port()) : std::string()) + ")";
    }
    return "host '" + host.name() + "' (Slurm node of job " + m_jobId + ")";
  }

  std::string describeFailure(const CommandResult& r, const std::string& what) const {
    if (!r.failure.empty()) return m_tool + " " + r.failure + (r.err.empty() ? "" : ": " + lastLines(r.err));
    const std::string said = r.err.empty() ? std::string("(no message)") : lastLines(r.err);
    if (r.exit && r.exit->exitCode && *r.exit->exitCode == 255 && m_tool == "ssh") {
      return "ssh failed (exit 255): " + said;
    }
    return what + " failed (" + m_tool + ": " + (r.exit ? r.exit->describe() : std::string("no exit")) + "): " + said;
  }

  // The heartbeat thread: PING to every live control channel, so wrappers know the runner
  // (and the connection) is still there.
  void heartbeatLoop() {
    std::unique_lock<std::mutex> lock(m_mu);
    while (!m_stop) {
      m_cv.wait_for(lock, kHeartbeatEvery, [this] { return m_stop; });
      if (m_stop) break;
      auto channels = m_channels;
      lock.unlock();
      for (auto& weak : channels) {
        if (auto channel = weak.lock()) (void)channel->send("PING");
      }
      lock.lock();
      m_channels.erase(std::remove_if(m_channels.begin(), m_channels.end(),
                                      [](const std::weak_ptr<ControlChannel>& w) { return w.expired(); }),
                       m_channels.end());
    }
  }

  v1::LaunchSpec m_launch;
  Tool m_toolKind;
  std::string m_binary;
  std::string m_tool;
  std::string m_dirName;
  double m_connectTimeoutS = 10;
  std::vector<v1::HostSpec> m_prepared;
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::vector<std::weak_ptr<ControlChannel>> m_channels;
  std::thread m_heartbeat;
  // SLURM: the job the steps run in (SLURM_JOB_ID, or the runner's own allocation, which
  // is released after the clean-up steps of the destructor's body).
  std::string m_jobId;
  std::unique_ptr<SlurmAllocation> m_allocation;
};

}  // namespace

Result<std::unique_ptr<NodeLauncher>> makeLauncher(const v1::LaunchSpec& launch, const std::string& localRunDir,
                                                   std::unique_ptr<SlurmAllocation> allocation) {
  switch (launch.launcher()) {
    case v1::LaunchSpec::SSH: {
      const std::string ssh = findProgram("ssh");
      if (ssh.empty()) return Status::error("launch.launcher SSH: no `ssh` in PATH (install openssh-client)");
      return std::unique_ptr<NodeLauncher>(
          new RemoteLauncher(RemoteLauncher::Tool::Ssh, ssh, launch, localRunDir, nullptr));
    }
    case v1::LaunchSpec::SLURM: {
      const std::string srun = findProgram("srun");
      if (srun.empty()) return Status::error("launch.launcher SLURM: no `srun` in PATH");
      return std::unique_ptr<NodeLauncher>(
          new RemoteLauncher(RemoteLauncher::Tool::Srun, srun, launch, localRunDir, std::move(allocation)));
    }
    default:
      return std::unique_ptr<NodeLauncher>(new LocalLauncher(localRunDir));
  }
}

}  // namespace dasp::net
