// SPDX-License-Identifier: MIT
#pragma once
// The run store tests' fixtures (tests/core/tst_run_store*.cpp): sample runs, raw SQLite
// statements on a store file, a writer killed mid-run.

#include "core/store/run_store.h"
#include "tests/support/stores.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;  // POSIX; spelled out for libcs that declare it only with _GNU_SOURCE

using namespace dasp;

using RE = dasp::v1::RunEvent;

// A version-1 file from the current schema: less what versions 2 (faults) and 3 (typed
// events) added.
// What version 4 added to the runs table (its nullable losses stay: version 4 rebuilds
// those tables again, with the same result).
// What version 5 added: the decisions' typed kind; version 6: the nodes' Slurm step.
#define DASP_DROP_VERSION_6 "ALTER TABLE nodes DROP COLUMN slurm_step; "
#define DASP_DROP_VERSION_5 DASP_DROP_VERSION_6 "ALTER TABLE decisions DROP COLUMN kind; "
#define DASP_DROP_VERSION_4                                                                             \
  DASP_DROP_VERSION_5                                                                                   \
  "ALTER TABLE runs DROP COLUMN divergence_cause; ALTER TABLE runs DROP COLUMN diverged_version; " \
  "ALTER TABLE runs DROP COLUMN diverged_t_s; "
inline const char* const kToVersion4 = DASP_DROP_VERSION_5 "UPDATE schema_version SET version = 4";
inline const char* const kToVersion3 = DASP_DROP_VERSION_4 "UPDATE schema_version SET version = 3";
inline const char* const kToVersion1 =
    DASP_DROP_VERSION_4
    "DROP TABLE faults; ALTER TABLE events DROP COLUMN code; ALTER TABLE events DROP COLUMN target; "
    "UPDATE schema_version SET version = 1";

namespace store_fixtures {

// Store files in a temporary directory: a fresh file name per test.
class StoreFiles {
 public:
  bool valid() const { return m_dir.isValid(); }
  QString newPath() { return m_dir.filePath(QStringLiteral("runs-%1.sqlite").arg(++m_counter)); }
  QString filePath(const QString& name) const { return m_dir.filePath(name); }

 private:
  QTemporaryDir m_dir;
  int m_counter = 0;
};

inline NewRun sampleRun(const std::string& name, const std::string& strategy = "bsp",
                 const std::string& tags = {}) {
  NewRun run = test_support::testRun(name, strategy, 7);
  run.tags = tags;
  return run;
}

// Runs one statement on a raw connection of its own; returns the SQLite result code.
inline int rawExec(const QString& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.toStdString().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  }
  sqlite3_close(db);
  return rc;
}

// Counts rows with a raw connection (independent of RunStore's readers).
inline qint64 rawCount(const QString& path, const std::string& sql) {
  sqlite3* db = nullptr;
  qint64 count = -1;
  if (sqlite3_open_v2(path.toStdString().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return count;
}

inline QByteArray readAll(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return file.readAll();
}

// The child of killedProcessDataStaysReadable: this executable started with kChildEnv set
// to a store path. It runs before main(), records into a new run, flushes, reports on
// stdout and waits to be killed with the recorder still open.
constexpr const char* kChildEnv = "DASP_TST_RUN_STORE_CHILD";

inline int killedWriterChild(const std::string& path) {
  auto s = RunStore::open(path);
  if (!s.isOk()) return 2;
  auto id = (*s)->createRun(sampleRun("child"));
  if (!id.isOk()) return 3;
  auto rec = RunRecorder::open(path, *id, 60000);
  if (!rec.isOk()) return 4;
  for (int i = 0; i < 50; ++i) (*rec)->record(EvaluationRow{*id, 1.0 * i, i, i, i, 1.0, 0.5});
  if (!(*rec)->flush().isOk()) return 5;
  const char ready = 'r';
  if (write(STDOUT_FILENO, &ready, 1) != 1) return 6;
  for (;;) pause();
}

const int kChildHook = [] {
  const char* path = std::getenv(kChildEnv);
  if (path && *path) _exit(killedWriterChild(path));
  return 0;
}();

}  // namespace store_fixtures
