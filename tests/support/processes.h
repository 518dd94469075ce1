// SPDX-License-Identifier: MIT
#pragma once
// Test support: the `dasp` binary under test and running a program to its end.
// Threading: the test's thread.

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>

namespace test_support {

// The `dasp` of this build ($DASP_BIN overrides it, e.g. for an installed one).
QString daspBinary();

// What a finished program printed and how it ended.
struct Finished {
  int exitCode = -1;  // -1 when it crashed, timed out or never started
  QString out, err;
};

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

}  // namespace test_support
