// SPDX-License-Identifier: MIT
#pragma once
// Test support: `dasp run` of a spec with fault drills, and what tests look at after it
// (the processes it left, the run's events). Threading: the test's thread.

#include "core/store/run_store.h"

#include <QByteArray>
#include <QJsonObject>
#include <QMap>
#include <QString>
#include <QStringList>

#include <vector>

namespace test_support {

// Every node process of a drill's `dasp run` carries this variable (children inherit the
// runner's environment), so an orphan check also finds a process whose pid the store no
// longer has: a restarted server or worker is a new pid, and the nodes table keeps the
// latest pid per node name.
constexpr char kDrillTagVariable[] = "DASP_FAULT_DRILL_TAG";

struct DrillRun {
  int exitCode = -1;
  bool finished = false;
  qint64 elapsedMs = 0;
  QString stdErr;
  QString lastLine;
  QJsonObject json;  // the --json line (the last line of stdout)
  QByteArray tag;    // the value of kDrillTagVariable its processes carry
};

// `dasp run SPEC --db DB --json --quiet`, its processes tagged; killed after 90 s (a
// deadlocked run would never stop by itself).
DrillRun runDrill(const QString& spec, const QString& db);
// Exit, time, the end of stderr and the last line of stdout: for failure messages.
QString describe(const DrillRun& r);
// Live processes started by the drill run tagged `tag` (pid and command line).
QStringList taggedProcesses(const QByteArray& tag);

// Whether `events` has one of `kind` ("fault", "node", ...) on `node` (any when empty)
// whose detail contains `text`, at `afterS` or later.
bool hasEvent(const std::vector<dasp::EventRow>& events, const char* kind, const QString& node, const QString& text,
              double afterS = -1);
// The fault, recovery, exit and node events, a line each: for failure messages.
QString eventList(const std::vector<dasp::EventRow>& events);

// An executable in `dir` that runs this build's `dasp` with its arguments, except that
// the second and later starts of server NAME first wait `restartDelayS[NAME]` seconds:
// a host whose restarts are slow. Set as a host's launch.hosts dasp_path.
QString writeSlowRestartWrapper(const QString& dir, const QMap<QString, int>& restartDelayS);

}  // namespace test_support
