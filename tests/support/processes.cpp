// SPDX-License-Identifier: MIT
#include "tests/support/processes.h"

#include <QJsonDocument>
#include <QProcess>

namespace test_support {

QString daspBinary() { return qEnvironmentVariable("DASP_BIN", QStringLiteral(DASP_BINARY_DIR "/bin/dasp")); }

QList<QJsonObject> Finished::jsonLines() const {
  QList<QJsonObject> lines;
  for (const QString& line : out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
    const auto doc = QJsonDocument::fromJson(line.toUtf8());
    if (doc.isObject()) lines.push_back(doc.object());
  }
  return lines;
}

QJsonObject Finished::lastJson() const {
  const QStringList lines = out.trimmed().split(QLatin1Char('\n'));
  return lines.isEmpty() ? QJsonObject() : QJsonDocument::fromJson(lines.last().toUtf8()).object();
}

Finished runProgram(const QString& program, const QStringList& args, int timeoutMs, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Finished f;
  if (!p.waitForStarted(10000)) {
    f.err = program + ": cannot start: " + p.errorString();
    return f;
  }
  f.started = true;
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
    f.timedOut = true;
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
