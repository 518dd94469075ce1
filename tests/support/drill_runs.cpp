// SPDX-License-Identifier: MIT
#include "tests/support/drill_runs.h"

#include "tests/support/processes.h"

#include <algorithm>
#include <iterator>
#include <string>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QProcess>
#include <QUuid>

namespace test_support {

namespace {

std::string readProcFile(const QString& pid, const char* name) { return procFile(pid.toLongLong(), name); }

}  // namespace

DrillRun runDrill(const QString& spec, const QString& db) {
  DrillRun r;
  r.tag = QUuid::createUuid().toByteArray(QUuid::WithoutBraces);
  QProcess p;
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert(kDrillTagVariable, QString::fromLatin1(r.tag));
  p.setProcessEnvironment(env);
  QElapsedTimer timer;
  timer.start();
  startDasp(p, {"run", spec, "--db", db, "--json", "--quiet"});
  r.finished = p.waitForFinished(90000);
  if (!r.finished) {
    p.kill();
    p.waitForFinished(5000);
  }
  r.elapsedMs = timer.elapsed();
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.stdErr = QString::fromUtf8(p.readAllStandardError());
  const auto lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  r.lastLine = lines.last();
  r.json = QJsonDocument::fromJson(r.lastLine.toUtf8()).object();
  return r;
}

QString describe(const DrillRun& r) {
  return QStringLiteral("exit %1 after %2 ms; stderr: %3; stdout: %4")
      .arg(r.exitCode)
      .arg(r.elapsedMs)
      .arg(r.stdErr.right(2000), r.lastLine.right(3000));
}

QStringList taggedProcesses(const QByteArray& tag) {
  std::string needle = std::string(kDrillTagVariable) + "=" + tag.toStdString();
  needle.push_back('\0');
  QStringList out;
  const auto entries = QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  for (const auto& entry : entries) {
    bool numeric = false;
    entry.toLongLong(&numeric);
    if (!numeric) continue;
    if (readProcFile(entry, "environ").find(needle) == std::string::npos) continue;
    auto cmdline = readProcFile(entry, "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    out << entry + ": " + QString::fromStdString(cmdline);
  }
  return out;
}

bool hasEvent(const std::vector<dasp::EventRow>& events, const char* kind, const QString& node, const QString& text,
              double afterS) {
  return std::any_of(events.begin(), events.end(), [&](const dasp::EventRow& e) {
    return dasp::kindName(e.kind) == std::string(kind) && (node.isEmpty() || QString::fromStdString(e.node) == node) &&
           QString::fromStdString(e.detail).contains(text) && e.tS >= afterS;
  });
}

QString eventList(const std::vector<dasp::EventRow>& events) {
  using RE = dasp::v1::RunEvent;
  QStringList out;
  for (const auto& e : events) {
    if (e.kind == RE::FAULT || e.kind == RE::RECOVERY || e.kind == RE::EXIT || e.kind == RE::NODE) {
      out << QStringLiteral("%1 %2 %3: %4")
                 .arg(e.tS, 0, 'f', 3)
                 .arg(QLatin1String(dasp::kindName(e.kind)), QString::fromStdString(e.node), QString::fromStdString(e.detail));
    }
  }
  return out.join('\n');
}

QString writeSlowRestartWrapper(const QString& dir, const QMap<QString, int>& restartDelayS) {
  QString delays;
  for (auto it = restartDelayS.begin(); it != restartDelayS.end(); ++it) {
    delays += QStringLiteral("%1) delay=%2;; ").arg(it.key()).arg(it.value());
  }
  // The wait is a child that the node's SIGTERM (the runner ending the run) takes along,
  // so a restart still waiting leaves no process behind.
  const QString script = QStringLiteral(
                             "#!/bin/sh\n"
                             "name=''; prev=''\n"
                             "for a in \"$@\"; do [ \"$prev\" = --name ] && name=$a; prev=$a; done\n"
                             "count=\"$(dirname \"$0\")/$name.starts\"\n"
                             "n=$(( $(cat \"$count\" 2>/dev/null || echo 0) + 1 )); echo $n > \"$count\"\n"
                             "delay=0\n"
                             "if [ \"$1\" = server ] && [ $n -gt 1 ]; then\n"
                             "  case $name in %1esac\n"
                             "fi\n"
                             "if [ $delay -gt 0 ]; then\n"
                             "  sleep $delay </dev/null >/dev/null 2>&1 & pid=$!\n"
                             "  trap 'kill $pid; exit 143' TERM\n"
                             "  wait $pid\n"
                             "fi\n"
                             "exec '%2' \"$@\"\n")
                             .arg(delays, daspBinary());
  const QString path = QDir(dir).filePath("slow-restart.sh");
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(script.toUtf8()) < 0) qFatal("cannot write %s", qPrintable(path));
  f.close();
  f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  return path;
}

}  // namespace test_support
