// SPDX-License-Identifier: MIT
#include "tests/support/processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <QProcess>

namespace test_support {

QString daspBinary() { return qEnvironmentVariable("DASP_BIN", QStringLiteral(DASP_BINARY_DIR "/bin/dasp")); }

namespace {
// Run in the child between fork and exec: it dies with its parent (this test).
void dieWithParent() { ::prctl(PR_SET_PDEATHSIG, SIGKILL); }
}  // namespace

void startDasp(QProcess& process, const QStringList& args) {
  process.setChildProcessModifier(dieWithParent);
  process.start(daspBinary(), args);
}

Finished runProgram(const QString& program, const QStringList& args, int timeoutMs, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.setChildProcessModifier(dieWithParent);
  p.start(program, args);
  Finished f;
  if (!p.waitForStarted(10000)) {
    f.err = program + ": cannot start: " + p.errorString();
    return f;
  }
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    f.err = QString::fromUtf8(p.readAllStandardError()) + "\n(timed out after " + QString::number(timeoutMs) + " ms)";
    return f;
  }
  f.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  f.out = QString::fromUtf8(p.readAllStandardOutput());
  f.err = QString::fromUtf8(p.readAllStandardError());
  return f;
}

Finished runDasp(const QStringList& args, int timeoutMs, const QProcessEnvironment& env) {
  return runProgram(daspBinary(), args, timeoutMs, env);
}

std::string procFile(std::int64_t pid, const char* name) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;  // the end, or the process is gone (ESRCH)
    }
  }
  ::close(fd);
  return text;
}

std::vector<std::string> cmdlineOf(pid_t pid) {
  const std::string raw = procFile(pid, "cmdline");
  std::vector<std::string> out;
  std::string item;
  for (char c : raw) {
    if (c == '\0') {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::vector<pid_t> allPids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end != nullptr && *end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

std::vector<pid_t> markedDaspProcesses(const std::string& marker) {
  std::vector<pid_t> out;
  for (pid_t pid : allPids()) {
    const auto argv = cmdlineOf(pid);
    if (argv.empty()) continue;
    const auto& exe = argv.front();
    if (exe.size() < 5 || exe.compare(exe.size() - 5, 5, "/dasp") != 0) continue;
    if (procFile(pid, "environ").find(marker) != std::string::npos) out.push_back(pid);
  }
  return out;
}

std::map<std::string, std::string> environmentByNode(const std::vector<pid_t>& pids, const std::string& key) {
  std::map<std::string, std::string> out;
  for (pid_t pid : pids) {
    const auto argv = cmdlineOf(pid);
    std::string node = argv.size() > 1 ? argv[1] : std::string();  // the evaluator has no --name
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--name") node = argv[i + 1];
    }
    if (node.empty()) continue;
    std::string value = "(unset)";
    const std::string environ = procFile(pid, "environ");
    for (std::size_t start = 0; start < environ.size();) {
      const auto end = std::min(environ.find('\0', start), environ.size());
      if (environ.compare(start, key.size() + 1, key + "=") == 0) {
        value = environ.substr(start + key.size() + 1, end - start - key.size() - 1);
      }
      start = end + 1;
    }
    out[node] = value;
  }
  return out;
}

std::string describe(const std::map<std::string, std::string>& byNode) {
  std::string out;
  for (const auto& [node, value] : byNode) out += (out.empty() ? "" : ", ") + node + "=" + value;
  return out;
}

}  // namespace test_support
