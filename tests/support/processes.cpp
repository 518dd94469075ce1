// SPDX-License-Identifier: MIT
#include "tests/support/processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

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

}  // namespace test_support
