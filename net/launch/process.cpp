// SPDX-License-Identifier: MIT
#include "net/launch/process.h"
#include "core/common/durations.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace dasp::net {

std::string ExitInfo::describe() const {
  if (signal) return std::string("killed by signal ") + std::to_string(*signal) + " (" + strsignal(*signal) + ")";
  if (exitCode) return "exit code " + std::to_string(*exitCode);
  return "running";
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::string& name,
                                                          const std::vector<std::string>& argv) {
  return spawn(name, argv, SpawnOptions{});
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::string& name, const std::vector<std::string>& argv,
                                                          const SpawnOptions& options) {
  if (argv.empty()) return Status::error("spawn " + name + ": empty command");
  int out[2], err[2];
  int in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) return Status::error("spawn " + name + ": pipe: " + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return Status::error("spawn " + name + ": pipe: " + std::strerror(errno));
  }
  if (options.stdinSocket && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return Status::error("spawn " + name + ": socketpair: " + why);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment is built here: between fork and exec only async-signal-safe
  // calls are allowed.
  std::vector<std::string> envStrings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos && options.env.count(entry.substr(0, eq)) > 0) continue;
    envStrings.push_back(entry);
  }
  for (const auto& [key, value] : options.env) envStrings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const int deathSignal = options.termWithParent ? SIGTERM : SIGKILL;
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]}) {
      if (fd >= 0) close(fd);
    }
    return Status::error("spawn " + name + ": fork: " + why);
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, deathSignal);
    if (getppid() != parent) _exit(127);  // the runner died before prctl took effect
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    if (in[1] >= 0) dup2(in[1], STDIN_FILENO);
    execve(args[0], args.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (in[1] >= 0) close(in[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->m_name = name;
  child->m_pid = pid;
  child->m_out = out[0];
  child->m_err = err[0];
  child->m_in = in[0];
  return child;
}

ChildProcess::~ChildProcess() {
  if (running() && m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    waitFor(5.0);
  }
  if (m_in >= 0) close(m_in);
  // The pump owns reading; the fds are closed by it at end of file.
}

std::optional<ExitInfo> ChildProcess::poll() {
  if (m_exit) return m_exit;
  int status = 0;
  struct rusage usage {};
  const pid_t r = wait4(m_pid, &status, WNOHANG, &usage);
  if (r != m_pid) return std::nullopt;
  ExitInfo info;
  if (WIFEXITED(status)) info.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) info.signal = WTERMSIG(status);
  info.cpuS = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  info.maxRssKb = usage.ru_maxrss;
  m_exit = info;
  return m_exit;
}

std::optional<ExitInfo> ChildProcess::waitFor(double seconds) {
  // Waiting for a child to exit: poll its status every few milliseconds up to the limit
  // (there is no waitpid with a timeout).
  const auto until = deadlineIn<std::chrono::steady_clock>(seconds);
  while (true) {
    if (auto e = poll()) return e;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void ChildProcess::signal(int sig) {
  if (running() && m_pid > 0) ::kill(m_pid, sig);
}

// Reads what is there on `fd` into `into` (non-blocking after poll); false at end of file.
namespace {

bool readSome(int fd, std::string& into) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) into.append(buf, static_cast<std::size_t>(n));
  return n > 0 || (n < 0 && errno == EINTR);
}

}  // namespace

std::pair<std::string, std::string> readOutput(ChildProcess& child, std::chrono::steady_clock::time_point until,
                                               const std::function<bool(const std::string&)>& enough) {
  std::string out, err;
  int fds[2] = {child.stdoutFd(), child.stderrFd()};
  while (!enough(out) && (fds[0] >= 0 || fds[1] >= 0)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
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
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  return {out, err};
}

std::string oneLine(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

Result<std::string> runCommand(const std::vector<std::string>& argv, double timeoutS) {
  std::string command;  // as a person would type it: the program's name, not its path
  for (const auto& a : argv) command += command.empty() ? a.substr(a.rfind('/') + 1) : " " + a;
  auto child = ChildProcess::spawn(argv.empty() ? std::string() : argv.front(), argv);
  if (!child) return Status::error("`" + command + "` cannot start: " + child.message());
  const auto [out, err] =
      readOutput(*child.value(), deadlineIn<std::chrono::steady_clock>(timeoutS), [](const std::string&) { return false; });
  auto exit = child.value()->waitFor(1.0);
  if (!exit) {
    child.value()->signal(SIGKILL);
    exit = child.value()->waitFor(5.0);
  }
  if (!exit || !exit->exitCode || *exit->exitCode != 0) {
    return Status::error("`" + command + "` failed (" + (exit ? exit->describe() : std::string("no answer")) +
                         "): " + (err.empty() ? std::string("(no message)") : oneLine(err)));
  }
  return out;
}

OutputPump::OutputPump(Sink sink) : m_sink(std::move(sink)) {
  if (pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) m_wake[0] = m_wake[1] = -1;
  m_thread = std::thread([this] { loop(); });
}

OutputPump::~OutputPump() { drainAndStop(); }

void OutputPump::add(const std::string& node, int fd, bool isStderr) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_streams.push_back({node, fd, isStderr, {}});
  }
  const char c = 'a';
  (void)!write(m_wake[1], &c, 1);
}

void OutputPump::drainAndStop() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stopWhenDrained = true;
  }
  const char c = 's';
  (void)!write(m_wake[1], &c, 1);
  if (m_thread.joinable()) m_thread.join();
  if (m_wake[0] >= 0) {
    close(m_wake[0]);
    close(m_wake[1]);
    m_wake[0] = m_wake[1] = -1;
  }
}

void OutputPump::loop() {
  std::vector<pollfd> fds;
  char buf[65536];
  while (true) {
    fds.clear();
    fds.push_back({m_wake[0], POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(m_mu);
      if (m_stopWhenDrained && m_streams.empty()) return;
      for (const auto& s : m_streams) fds.push_back({s.fd, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      while (read(m_wake[0], buf, sizeof buf) > 0) {
      }
    }
    std::lock_guard<std::mutex> lock(m_mu);
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto it = std::find_if(m_streams.begin(), m_streams.end(), [&](const Stream& s) { return s.fd == fds[i].fd; });
      if (it == m_streams.end()) continue;
      const ssize_t n = read(it->fd, buf, sizeof buf);
      if (n > 0) {
        it->partial.append(buf, static_cast<std::size_t>(n));
        std::size_t pos;
        while ((pos = it->partial.find('\n')) != std::string::npos) {
          m_sink(it->node, it->isStderr, it->partial.substr(0, pos));
          it->partial.erase(0, pos + 1);
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (!it->partial.empty()) m_sink(it->node, it->isStderr, it->partial);
        close(it->fd);
        m_streams.erase(it);
      }
    }
  }
}

}  // namespace dasp::net
