// SPDX-License-Identifier: MIT
#pragma once
// What the UI tests that start runs from the workbench share: where the `dasp` binary and
// the presets are, the environment that points the workbench at them, and a liveness
// check for the processes a run leaves (or must not leave) behind.
#include <QFileInfo>
#include <QStandardPaths>
#include <QString>
#include <QtGlobal>

#include <signal.h>

#include <cstdint>

inline const char* const kExperiments = DASP_SOURCE_DIR "/experiments";
inline const char* const kDasp = DASP_BINARY_DIR "/bin/dasp";

// For initTestCase(): QSettings go to a test location, and the workbench finds this
// build's `dasp` and presets. False when the binary is missing (the caller QVERIFYs).
inline bool setUpWorkbenchEnvironment() {
  QStandardPaths::setTestModeEnabled(true);
  qputenv("DASP_BIN", kDasp);
  qputenv("DASP_EXPERIMENTS_DIR", kExperiments);
  return QFileInfo(QString::fromLatin1(kDasp)).isExecutable();
}

inline bool processAlive(std::int64_t pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0; }
