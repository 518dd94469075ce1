// SPDX-License-Identifier: MIT
// A node process, local or behind the wrapper, and the wrapper's control channel.
#include "net/launch/launcher.h"
#include "core/common/durations.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace dasp::net {
namespace {

using Clock = std::chrono::steady_clock;

// After a remote SIGKILL, how long the wrapper gets before the local client is killed.
constexpr double kRemoteKillGraceS = 3.0;

const char* signalWord(int sig) {
  switch (sig) {
    case SIGTERM: return "TERM";
    case SIGKILL: return "KILL";
    case SIGSTOP: return "STOP";
    case SIGCONT: return "CONT";
    case SIGINT: return "INT";
    case SIGHUP: return "HUP";
    case SIGUSR1: return "USR1";  // a worker's link cut (DISCONNECT drill) ...
    case SIGUSR2: return "USR2";  // ... and restored
    default: return nullptr;
  }
}

}  // namespace

// --- the control channel and the node process ---

ControlChannel::ControlChannel(int fd) : m_fd(fd) {}

ControlChannel::~ControlChannel() { close(); }

bool ControlChannel::send(const std::string& line) {
  std::lock_guard<std::mutex> lock(m_mu);
  if (m_fd < 0) return false;
  const std::string text = line + "\n";
  // Never blocks (a stalled client must not stall the runner) and never raises SIGPIPE.
  const ssize_t n = ::send(m_fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n == static_cast<ssize_t>(text.size());
}

void ControlChannel::close() {
  std::lock_guard<std::mutex> lock(m_mu);
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

Result<std::unique_ptr<NodeProcess>> NodeProcess::startLocal(const std::string& name, const std::string& host,
                                                             const std::vector<std::string>& argv,
                                                             const std::map<std::string, std::string>& env) {
  SpawnOptions options;
  options.env = env;
  auto child = ChildProcess::spawn(name, argv, options);
  if (!child) return child.status();
  return adopt(name, host, std::move(child).value());
}

std::unique_ptr<NodeProcess> NodeProcess::adopt(const std::string& name, const std::string& host,
                                                std::unique_ptr<ChildProcess> child) {
  std::unique_ptr<NodeProcess> node(new NodeProcess());
  node->m_name = name;
  node->m_host = host;
  node->m_child = std::move(child);
  return node;
}

Result<std::unique_ptr<NodeProcess>> NodeProcess::startWrapped(const std::string& name, const std::string& host,
                                                               const std::vector<std::string>& argv,
                                                               const std::map<std::string, std::string>& env) {
  auto block = wrapperEnvBlock(env);
  if (!block) return block.status();
  SpawnOptions options;
  options.stdinSocket = true;
  auto child = ChildProcess::spawn(name, argv, options);
  if (!child) return child.status();
  auto node = adopt(name, host, std::move(child).value());
  const int fd = node->m_child->takeStdin();
  // The block is small (far below a socket buffer), so this send does not wait for the
  // client to read it.
  const auto& text = block.value();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the client is gone: its exit tells the runner
    done += static_cast<std::size_t>(n);
  }
  node->m_control = std::make_shared<ControlChannel>(fd);
  return node;
}

NodeProcess::~NodeProcess() {
  if (!running() || !m_control) return;  // a local child: ChildProcess kills it
  m_control->close();                    // end of file: the wrapper stops dasp
  if (!waitFor(kRemoteKillGraceS)) m_child->signal(SIGKILL);
}

std::optional<ExitInfo> NodeProcess::poll() {
  if (m_exit) return m_exit;
  auto e = m_child->poll();
  if (!e) {
    if (m_hardKillAt && Clock::now() >= *m_hardKillAt) {
      m_child->signal(SIGKILL);
      m_hardKillAt.reset();
    }
    return std::nullopt;
  }
  ExitInfo info = *e;
  if (m_control) {
    // The wrapper's status: 128 + N is dasp killed by signal N. The client's own CPU and
    // RSS say nothing about the node.
    if (info.exitCode && *info.exitCode > 128 && *info.exitCode <= 128 + 64) {
      info.signal = *info.exitCode - 128;
      info.exitCode.reset();
    }
    info.cpuS = 0;
    info.maxRssKb = 0;
    m_control->close();
  }
  m_exit = info;
  return m_exit;
}

std::optional<ExitInfo> NodeProcess::waitFor(double seconds) {
  // As ChildProcess::waitFor: poll the status every few milliseconds up to the limit.
  const auto until = deadlineIn<Clock>(seconds);
  while (true) {
    if (auto e = poll()) return e;
    if (Clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void NodeProcess::signal(int sig) {
  if (!running()) return;
  if (!m_control) {
    m_child->signal(sig);
    return;
  }
  const char* word = signalWord(sig);
  if (word == nullptr) return;
  const bool sent = m_control->send(word);
  if (sig == SIGKILL || (!sent && sig == SIGTERM)) {
    // The connection may hang: if the node has not ended shortly, the local client goes
    // too (the wrapper then sees end of file, or its heartbeat runs out).
    if (!sent) {
      m_child->signal(SIGKILL);
    } else if (!m_hardKillAt) {
      m_hardKillAt = deadlineIn<Clock>(kRemoteKillGraceS);
    }
  }
}

}  // namespace dasp::net
