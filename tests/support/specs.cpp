// SPDX-License-Identifier: MIT
#include "tests/support/specs.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>

namespace test_support {

QJsonObject SyntheticSpec::json() const {
  return QJsonObject{
      {"name", name},
      {"model", QJsonObject{{"name", "logreg"}}},
      {"dataset", QJsonObject{{"name", "synthetic"},
                              {"synthetic", QJsonObject{{"train_count", trainCount}, {"test_count", testCount}}}}},
      {"batch_size", batchSize},
      {"cluster", QJsonObject{{"count", workers}, {"base_iteration_ms", 10}}},
      {"strategy", QJsonObject{{"name", strategy}, {"barrier_timeout_s", barrierTimeoutS}}},
      {"stop", QJsonObject{{"max_seconds", maxSeconds}}},
      {"evaluation", QJsonObject{{"every_s", 0.3}, {"every_steps", 1000000}}},
      {"device", "cpu"},
  };
}

QString writeSpecFile(const QString& dir, const QString& name, const QJsonObject& spec) {
  const QString path = QDir(dir).filePath(name + ".json");
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write the spec %s", qPrintable(path));
  f.write(QJsonDocument(spec).toJson());
  return path;
}

}  // namespace test_support
