// SPDX-License-Identifier: MIT
#include "tests/support/processes.h"

#include <QProcess>

namespace test_support {

QString daspBinary() { return qEnvironmentVariable("DASP_BIN", QStringLiteral(DASP_BINARY_DIR "/bin/dasp")); }

Finished runProgram(const QString& program, const QStringList& args, int timeoutMs, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
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

}  // namespace test_support
