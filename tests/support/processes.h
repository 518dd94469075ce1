// SPDX-License-Identifier: MIT
#pragma once
// Test support: the `dasp` binary under test and running a program to its end.
// Threading: the test's thread.

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace test_support {

// How much longer a node process takes to start and to do its work in this build: 1, or
// 2.5 under a sanitizer (measured on an idle machine: an AddressSanitizer `dasp server`
// listens after 1.13 s where a release one does after 0.62 s, and it computes slower too).
// A test whose fault schedule must leave room for restarts stretches its times by it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kProcessTimeScale = 2.5;
#else
inline constexpr double kProcessTimeScale = 1.0;
#endif

// The `dasp` of this build ($DASP_BIN overrides it, e.g. for an installed one).
QString daspBinary();

// What a finished program printed and how it ended.
struct Finished {
  int exitCode = -1;  // -1 when it crashed, timed out or never started
  QString out, err;
};

// Starts `dasp` with `args` in `process`, as a child that the kernel kills when this test
// process ends, however it ends (a CTest timeout kills only the test: its servers and
// workers would go on, loading the machine under the next tests).
void startDasp(QProcess& process, const QStringList& args);

// Runs `program` with `args` until it ends or `timeoutMs` pass (then it is killed).
Finished runProgram(const QString& program, const QStringList& args, int timeoutMs = 60000,
                    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment());
// The same for `dasp`.
Finished runDasp(const QStringList& args, int timeoutMs = 60000,
                 const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment());

// What /proc/PID/NAME holds (cmdline, environ, stat, status): empty, or what was read
// before, when the process is gone, as any process may be while it is read (tests scan
// every process of the machine while others start and end).
std::string procFile(std::int64_t pid, const char* name);

// argv of a process from /proc (NUL-separated); empty if it is gone.
std::vector<std::string> cmdlineOf(pid_t pid);
// Every process of the machine now.
std::vector<pid_t> allPids();
// `dasp` processes whose environment has `marker` (a run's DASP_RUN_DIR prefix).
std::vector<pid_t> markedDaspProcesses(const std::string& marker);
// The node name (--name, else the subcommand) of each of the `dasp` processes `pids`,
// with the value of `key` in its environment ("(unset)" when it has none).
std::map<std::string, std::string> environmentByNode(const std::vector<pid_t>& pids, const std::string& key);
// "node=value, ..." for a message.
std::string describe(const std::map<std::string, std::string>& byNode);

}  // namespace test_support
