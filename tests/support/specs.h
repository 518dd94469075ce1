// SPDX-License-Identifier: MIT
#pragma once
// Test support: the small synthetic experiments the tests run, as spec JSON.
// Threading: the test's thread.

#include <QJsonObject>
#include <QString>

namespace test_support {

// A short logreg run on synthetic data: `workers` workers at base_iteration_ms 10 under
// `strategy`, evaluated every 0.3 s, on the CPU. Callers add or change fields
// (slowdowns, faults, recovery, ...) before writing it.
struct SyntheticSpec {
  QString name = QStringLiteral("test");
  QString strategy = QStringLiteral("asp");
  int workers = 3;
  int trainCount = 4096;
  int testCount = 512;
  int batchSize = 32;
  double maxSeconds = 3;
  double barrierTimeoutS = 1;
  QJsonObject json() const;
};

// Writes `spec` to DIR/NAME.json and returns the path (qFatal when it cannot).
QString writeSpecFile(const QString& dir, const QString& name, const QJsonObject& spec);

}  // namespace test_support
