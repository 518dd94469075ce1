// SPDX-License-Identifier: MIT
// Tests of RunStore and RunRecorder (core/run_store.h) on files in a temporary directory.

#include "core/run_store.h"

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
const char* const kToVersion1 =
    "DROP TABLE faults; ALTER TABLE events DROP COLUMN code; ALTER TABLE events DROP COLUMN target; "
    "UPDATE schema_version SET version = 1";

namespace {

NewRun sampleRun(const std::string& name, const std::string& strategy = "bsp",
                 const std::string& tags = {}) {
  NewRun run;
  run.kind = "distributed";
  run.name = name;
  run.specJson = R"({"name":")" + name + R"("})";
  run.model = "mlp";
  run.dataset = "fashion-mnist";
  run.strategy = strategy;
  run.recovery = "none";
  run.seed = 7;
  run.tags = tags;
  run.codeVersion = "test";
  return run;
}

// Runs one statement on a raw connection of its own; returns the SQLite result code.
int rawExec(const QString& path, const std::string& sql) {
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
qint64 rawCount(const QString& path, const std::string& sql) {
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

QByteArray readAll(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return file.readAll();
}

// The child of killedProcessDataStaysReadable: this executable started with kChildEnv set
// to a store path. It runs before main(), records into a new run, flushes, reports on
// stdout and waits to be killed with the recorder still open.
constexpr const char* kChildEnv = "DASP_TST_RUN_STORE_CHILD";

int killedWriterChild(const std::string& path) {
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

}  // namespace

class TestRunStore : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir m_dir;
  int m_counter = 0;
  // A fresh store file per test.
  QString newPath() { return m_dir.filePath(QStringLiteral("runs-%1.sqlite").arg(++m_counter)); }

 private slots:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  void statusNames() {
    for (RunStatus s : {RunStatus::Running, RunStatus::Completed, RunStatus::Stopped,
                        RunStatus::Failed, RunStatus::Interrupted}) {
      QCOMPARE(runStatusFromString(toString(s)), std::optional<RunStatus>(s));
    }
    QVERIFY(!runStatusFromString("bogus"));
  }

  void createListAndGet() {
    // In a directory that does not exist yet: open creates it.
    const QString path = m_dir.filePath(QStringLiteral("sub/dir/runs.sqlite"));
    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE((*store)->path(), path.toStdString());

    auto first = (*store)->createRun(sampleRun("first"));
    QVERIFY2(first.isOk(), first.message().c_str());
    auto second = (*store)->createRun(sampleRun("second", "asp"));
    QVERIFY2(second.isOk(), second.message().c_str());
    QVERIFY(*second > *first);

    auto runs = (*store)->listRuns();
    QVERIFY2(runs.isOk(), runs.message().c_str());
    QCOMPARE(runs->size(), std::size_t(2));
    QCOMPARE(runs->at(0).id, *second);  // newest first
    QCOMPARE(runs->at(1).id, *first);

    auto row = (*store)->run(*first);
    QVERIFY2(row.isOk(), row.message().c_str());
    QCOMPARE(row->name, std::string("first"));
    QCOMPARE(row->kind, std::string("distributed"));
    QCOMPARE(row->model, std::string("mlp"));
    QCOMPARE(row->dataset, std::string("fashion-mnist"));
    QCOMPARE(row->strategy, std::string("bsp"));
    QCOMPARE(row->recovery, std::string("none"));
    QCOMPARE(row->engine, std::string("real"));
    QCOMPARE(row->seed, std::int64_t(7));
    QCOMPARE(row->codeVersion, std::string("test"));
    QCOMPARE(row->specJson, std::string(R"({"name":"first"})"));
    QCOMPARE(row->status, RunStatus::Running);
    QCOMPARE(row->pid, std::int64_t(getpid()));
    QVERIFY(!row->host.empty());
    QVERIFY(!row->endedAt);
    const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    QVERIFY(row->startedAt > now - 60 && row->startedAt <= now + 1);

    auto missing = (*store)->run(42);
    QVERIFY(!missing.isOk());
    QCOMPARE(missing.message(), "run 42 not found in " + path.toStdString());

    // The run of this (live) process survives a reopen as running.
    store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE((*store)->run(*first)->status, RunStatus::Running);
    QCOMPARE(RunStore::schemaVersion(), 3);
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(3));
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(path.toStdString().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    QCOMPARE(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
    QCOMPARE(sqlite3_step(stmt), SQLITE_ROW);
    QCOMPARE(QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))),
             QStringLiteral("wal"));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

  void finishSetsStatusAndEnd() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    auto id = (*store)->createRun(sampleRun("a"));
    QVERIFY(id.isOk());
    QVERIFY((*store)->finishRun(*id, RunStatus::Failed, "worker-1 crashed").isOk());
    auto row = (*store)->run(*id);
    QVERIFY(row.isOk());
    QCOMPARE(row->status, RunStatus::Failed);
    QCOMPARE(row->error, std::string("worker-1 crashed"));
    QVERIFY(row->endedAt.has_value());
    QVERIFY(*row->endedAt >= row->startedAt);

    Status missing = (*store)->finishRun(999, RunStatus::Completed);
    QVERIFY(!missing.isOk());
    QVERIFY(missing.message().find(path.toStdString()) != std::string::npos);
  }

  void tagsAndNotes() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    auto id = (*store)->createRun(sampleRun("a", "bsp", "baseline"));
    QVERIFY(id.isOk());
    QCOMPARE((*store)->run(*id)->tags, std::string("baseline"));
    QVERIFY((*store)->setTags(*id, "baseline,paper").isOk());
    QVERIFY((*store)->setNotes(*id, "line one\nline 'two' \"quoted\"").isOk());

    // A second connection sees the edit.
    auto other = RunStore::open(path.toStdString());
    QVERIFY(other.isOk());
    auto row = (*other)->run(*id);
    QVERIFY(row.isOk());
    QCOMPARE(row->tags, std::string("baseline,paper"));
    QCOMPARE(row->notes, std::string("line one\nline 'two' \"quoted\""));

    QVERIFY(!(*store)->setTags(12345, "x").isOk());
    QVERIFY(!(*store)->setNotes(12345, "x").isOk());
  }

  void filterRuns() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto a = (*store)->createRun(sampleRun("a", "bsp", "baseline,paper")).value();
    const auto b = (*store)->createRun(sampleRun("b", "asp", "paper")).value();
    const auto c = (*store)->createRun(sampleRun("c", "ssp", "")).value();
    const auto d = (*store)->createRun(sampleRun("d", "bsp", "scratch")).value();
    QVERIFY((*store)->finishRun(a, RunStatus::Completed).isOk());
    QVERIFY((*store)->finishRun(b, RunStatus::Completed).isOk());
    QVERIFY((*store)->finishRun(c, RunStatus::Stopped).isOk());

    auto ids = [&](const RunFilter& filter) {
      std::vector<std::int64_t> out;
      auto runs = (*store)->listRuns(filter);
      if (runs.isOk()) {
        for (const RunRow& r : *runs) out.push_back(r.id);
      }
      return out;
    };
    RunFilter byStrategy;
    byStrategy.strategy = "bsp";
    QCOMPARE(ids(byStrategy), (std::vector<std::int64_t>{d, a}));

    RunFilter byStatus;
    byStatus.status = "completed";
    QCOMPARE(ids(byStatus), (std::vector<std::int64_t>{b, a}));
    byStatus.status = "running";
    QCOMPARE(ids(byStatus), (std::vector<std::int64_t>{d}));

    RunFilter byTag;
    byTag.tag = "paper";
    QCOMPARE(ids(byTag), (std::vector<std::int64_t>{b, a}));

    RunFilter combined;
    combined.strategy = "bsp";
    combined.status = "completed";
    combined.tag = "paper";
    QCOMPARE(ids(combined), (std::vector<std::int64_t>{a}));

    RunFilter limited;
    limited.limit = 2;
    QCOMPARE(ids(limited), (std::vector<std::int64_t>{d, c}));

    RunFilter none;
    none.strategy = "nope";
    QVERIFY(ids(none).empty());
  }

  void deleteCascades() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto keep = (*store)->createRun(sampleRun("keep")).value();
    const auto gone = (*store)->createRun(sampleRun("gone")).value();
    for (std::int64_t id : {keep, gone}) {
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY2(rec.isOk(), rec.message().c_str());
      (*rec)->record(EvaluationRow{id, 1.0, 1, 10, 320, 2.0, 0.3});
      (*rec)->record(SampleRow{id, "worker-0", "train_loss", 0.5, 1, 2.1});
      (*rec)->record(StateIntervalRow{id, "worker-0", "COMPUTE", "SYNC", 0.0, 0.5});
      (*rec)->record(DecisionRow{id, 0.7, "server", "SYNC->ASYNC", "slow worker"});
      (*rec)->record(EventRow{id, 0.8, RE::FAULT, "worker-1", "killed", RE::CODE_UNSPECIFIED, {}});
      (*rec)->record(LogRow{id, "worker-0", 0.1, "stdout", "hello"});
      NodeRow node;
      node.runId = id;
      node.node = "worker-0";
      (*rec)->record(node);
      (*rec)->setSummary({SummaryRow{"final_accuracy", 0.3, ""}});
      RecoveryMetrics fault;
      fault.fault.node = "server";
      fault.fault.action = "kill";
      (*rec)->recordFaults({fault});
      QVERIFY((*rec)->finish(RunStatus::Completed).isOk());
    }
    QCOMPARE((*store)->evaluations(gone)->size(), std::size_t(1));

    QVERIFY2((*store)->deleteRun(gone).isOk(), "deleteRun");
    QVERIFY(!(*store)->run(gone).isOk());
    QVERIFY((*store)->evaluations(gone)->empty());
    for (const char* table : {"evaluations", "samples", "state_intervals", "decisions", "events",
                              "node_logs", "nodes", "summaries", "faults"}) {
      const std::string sql = std::string("SELECT count(*) FROM ") + table + " WHERE run_id = ";
      QCOMPARE(rawCount(path, sql + std::to_string(gone)), qint64(0));
      QCOMPARE(rawCount(path, sql + std::to_string(keep)), qint64(1));
    }
    QCOMPARE((*store)->listRuns()->size(), std::size_t(1));
    QVERIFY(!(*store)->deleteRun(gone).isOk());  // already gone
  }

  void recorderFlushVisibleToOtherReader() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto id = (*store)->createRun(sampleRun("live")).value();

    // A long interval: nothing is committed until flush() (or a full batch).
    auto rec = RunRecorder::open(path.toStdString(), id, 60000);
    QVERIFY2(rec.isOk(), rec.message().c_str());
    QCOMPARE((*rec)->runId(), id);
    for (int i = 0; i < 10; ++i) {
      (*rec)->record(EvaluationRow{id, 0.1 * i, i, i * 10, i * 320, 2.0 - 0.1 * i, 0.1 * i});
    }
    auto reader = RunStore::open(path.toStdString());
    QVERIFY2(reader.isOk(), reader.message().c_str());
    QVERIFY((*reader)->evaluations(id)->empty());

    QVERIFY2((*rec)->flush().isOk(), "flush");
    auto evals = (*reader)->evaluations(id);
    QVERIFY(evals.isOk());
    QCOMPARE(evals->size(), std::size_t(10));
    QCOMPARE(evals->at(3).version, std::int64_t(3));
    QCOMPARE(evals->at(3).updates, std::int64_t(30));
    QCOMPARE(evals->at(3).samples, std::int64_t(960));
    QCOMPARE(evals->at(9).accuracy, 0.9);

    // Many rows from several threads, more than one batch.
    const int threads = 4, perThread = 5000;
    std::vector<std::thread> feeders;
    for (int t = 0; t < threads; ++t) {
      feeders.emplace_back([&, t] {
        const std::string node = "worker-" + std::to_string(t);
        for (int i = 0; i < perThread; ++i) {
          (*rec)->record(SampleRow{id, node, i % 2 ? "staleness" : "wait_s", i * 0.001, i, 1.0 * i});
        }
      });
    }
    for (auto& f : feeders) f.join();
    (*rec)->record(LogRow{id, "worker-1", 1.0, "stderr", "warning: slow"});
    NodeRow node;
    node.runId = id;
    node.node = "worker-1";
    node.role = "worker";
    node.pid = 1234;
    (*rec)->record(node);
    node.exitCode = 0;
    node.cpuS = 2.5;
    node.bytesSent = 100;
    (*rec)->record(node);  // replaces the first
    QVERIFY((*rec)->flush().isOk());

    QCOMPARE((*reader)->samples(id)->size(), std::size_t(threads * perThread));
    QCOMPARE((*reader)->samples(id, "staleness")->size(), std::size_t(threads * perThread / 2));
    auto logs = (*reader)->logs(id, "worker-1");
    QVERIFY(logs.isOk());
    QCOMPARE(logs->size(), std::size_t(1));
    QCOMPARE(logs->front().stream, std::string("stderr"));
    QVERIFY((*reader)->logs(id, "worker-0")->empty());
    auto nodes = (*reader)->nodes(id);
    QVERIFY(nodes.isOk());
    QCOMPARE(nodes->size(), std::size_t(1));
    QCOMPARE(nodes->front().exitCode, std::optional<int>(0));
    QVERIFY(!nodes->front().signal);
    QCOMPARE(nodes->front().cpuS, 2.5);
    QCOMPARE(nodes->front().bytesSent, std::int64_t(100));
    QCOMPARE((*reader)->run(id)->status, RunStatus::Running);

    // An empty flush returns at once.
    QVERIFY((*rec)->flush().isOk());
  }

  void recorderFinishWritesSummaryAndStatus() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto id = (*store)->createRun(sampleRun("done")).value();
    auto rec = RunRecorder::open(path.toStdString(), id);
    QVERIFY(rec.isOk());
    (*rec)->record(DecisionRow{id, 1.5, "server", "SYNC->ASYNC", "spread 3x"});
    (*rec)->record(EventRow{id, 2.0, RE::FAULT, "worker-2", "SIGKILL", RE::CODE_UNSPECIFIED, {}});
    (*rec)->record(StateIntervalRow{id, "worker-2", "DOWN", "", 2.0, 3.0});
    (*rec)->setSummary({SummaryRow{"time_to_target_s", 12.5, ""},
                        SummaryRow{"final_accuracy", 0.5, ""},
                        SummaryRow{"note", std::nullopt, "first try"}});
    (*rec)->setSummary({SummaryRow{"final_accuracy", 0.87, ""}});  // replaces
    QVERIFY((*rec)->finish(RunStatus::Completed).isOk());
    QVERIFY(!(*rec)->finish(RunStatus::Completed).isOk());  // only once

    auto row = (*store)->run(id);
    QVERIFY(row.isOk());
    QCOMPARE(row->status, RunStatus::Completed);
    QVERIFY(row->endedAt.has_value());
    QVERIFY(row->error.empty());

    auto summary = (*store)->summary(id);
    QVERIFY(summary.isOk());
    QCOMPARE(summary->size(), std::size_t(3));  // ordered by key
    QCOMPARE(summary->at(0).key, std::string("final_accuracy"));
    QCOMPARE(summary->at(0).value, std::optional<double>(0.87));
    QCOMPARE(summary->at(1).key, std::string("note"));
    QVERIFY(!summary->at(1).value);
    QCOMPARE(summary->at(1).text, std::string("first try"));
    QCOMPARE(summary->at(2).value, std::optional<double>(12.5));

    auto decisions = (*store)->decisions(id);
    QCOMPARE(decisions->size(), std::size_t(1));
    QCOMPARE(decisions->front().decision, std::string("SYNC->ASYNC"));
    QCOMPARE(decisions->front().reason, std::string("spread 3x"));
    auto events = (*store)->events(id);
    QCOMPARE(events->size(), std::size_t(1));
    QCOMPARE(events->front().detail, std::string("SIGKILL"));
    auto intervals = (*store)->stateIntervals(id);
    QCOMPARE(intervals->size(), std::size_t(1));
    QCOMPARE(intervals->front().state, std::string("DOWN"));
    QCOMPARE(intervals->front().t1S, 3.0);

    // A failed run keeps its error text.
    const auto failed = (*store)->createRun(sampleRun("bad")).value();
    auto rec2 = RunRecorder::open(path.toStdString(), failed);
    QVERIFY(rec2.isOk());
    QVERIFY((*rec2)->finish(RunStatus::Failed, "server exited with code 3").isOk());
    QCOMPARE((*store)->run(failed)->status, RunStatus::Failed);
    QCOMPARE((*store)->run(failed)->error, std::string("server exited with code 3"));
  }

  void faultsRoundTrip() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto id = (*store)->createRun(sampleRun("drill")).value();
    const auto other = (*store)->createRun(sampleRun("other")).value();
    QVERIFY((*store)->faults(id)->empty());

    // Every field set, with figures that do not round-trip through float.
    RecoveryMetrics full;
    full.fault.index = 0;
    full.fault.node = "server";
    full.fault.action = "kill";
    full.fault.atS = 10.125;
    full.fault.restartAtS = 11.5;
    full.fault.detectedAtS = 10.2;
    full.fault.resumedAtS = 12.75;
    full.fault.versionBefore = 812;
    full.fault.versionAfter = 300;
    full.fault.gradientsDuringOutage = 40;
    full.fault.gradientsDropped = 8;
    full.fault.gradientsDiscarded = 3;
    full.fault.cpuS = 4.0625;
    full.fault.detail = "restored checkpoint v300; 'quoted' \"text\"";
    full.detectionS = 0.075;
    full.downtimeS = 2.625;
    full.updatesLost = 512;
    full.accuracyBefore = 0.8123;
    full.accuracyLowestAfter = 0.1;
    full.recoverS = 6.5;
    full.accuracyJump = 0.25;
    full.finalAccuracy = 0.9;
    // Only the record: every optional absent (NULL).
    RecoveryMetrics bare;
    bare.fault.index = 1;
    bare.fault.node = "worker-2";
    bare.fault.action = "pause";
    bare.fault.atS = 20;
    bare.fault.cpuS = std::nan("");         // written as 0
    bare.finalAccuracy = std::nan("");      // written as NULL, read as NaN
    bare.accuracyJump = std::nan("");       // an optional NaN reads back as absent

    auto rec = RunRecorder::open(path.toStdString(), id, 60000);
    QVERIFY(rec.isOk());
    RecoveryMetrics stale = bare;
    stale.fault.index = 5;
    (*rec)->recordFaults({stale});
    QVERIFY((*rec)->flush().isOk());
    QCOMPARE((*store)->faults(id)->size(), std::size_t(1));
    (*rec)->recordFaults({full, bare});  // replaces the run's rows
    QVERIFY((*rec)->finish(RunStatus::Completed).isOk());
    auto rec2 = RunRecorder::open(path.toStdString(), other);
    QVERIFY(rec2.isOk());
    (*rec2)->recordFaults({bare});
    QVERIFY((*rec2)->finish(RunStatus::Completed).isOk());

    auto faults = (*store)->faults(id);
    QVERIFY2(faults.isOk(), faults.message().c_str());
    QCOMPARE(faults->size(), std::size_t(2));
    const RecoveryMetrics& a = faults->at(0);
    QCOMPARE(a.fault.index, 0);
    QCOMPARE(a.fault.node, full.fault.node);
    QCOMPARE(a.fault.action, full.fault.action);
    QCOMPARE(a.fault.atS, full.fault.atS);
    QCOMPARE(a.fault.restartAtS, full.fault.restartAtS);
    QCOMPARE(a.fault.detectedAtS, full.fault.detectedAtS);
    QCOMPARE(a.fault.resumedAtS, full.fault.resumedAtS);
    QCOMPARE(a.fault.versionBefore, full.fault.versionBefore);
    QCOMPARE(a.fault.versionAfter, full.fault.versionAfter);
    QCOMPARE(a.fault.gradientsDuringOutage, full.fault.gradientsDuringOutage);
    QCOMPARE(a.fault.gradientsDropped, full.fault.gradientsDropped);
    QCOMPARE(a.fault.gradientsDiscarded, full.fault.gradientsDiscarded);
    QCOMPARE(a.fault.cpuS, full.fault.cpuS);
    QCOMPARE(a.fault.detail, full.fault.detail);
    QCOMPARE(a.detectionS, full.detectionS);
    QCOMPARE(a.downtimeS, full.downtimeS);
    QCOMPARE(a.updatesLost, full.updatesLost);
    QCOMPARE(a.accuracyBefore, full.accuracyBefore);
    QCOMPARE(a.accuracyLowestAfter, full.accuracyLowestAfter);
    QCOMPARE(a.recoverS, full.recoverS);
    QCOMPARE(a.accuracyJump, full.accuracyJump);
    QCOMPARE(a.finalAccuracy, full.finalAccuracy);

    const RecoveryMetrics& b = faults->at(1);
    QCOMPARE(b.fault.index, 1);
    QCOMPARE(b.fault.node, std::string("worker-2"));
    QCOMPARE(b.fault.action, std::string("pause"));
    QCOMPARE(b.fault.atS, 20.0);
    QCOMPARE(b.fault.cpuS, 0.0);
    QVERIFY(std::isnan(b.finalAccuracy));
    QVERIFY(!b.fault.restartAtS && !b.fault.detectedAtS && !b.fault.resumedAtS && !b.fault.versionAfter);
    QVERIFY(!b.detectionS && !b.downtimeS && !b.updatesLost && !b.accuracyBefore && !b.accuracyLowestAfter &&
            !b.recoverS && !b.accuracyJump);
    // Absent figures are stored as NULL, not as 0.
    QCOMPARE(rawCount(path, "SELECT count(*) FROM faults WHERE run_id = " + std::to_string(id) +
                                " AND idx = 1 AND coalesce(restart_at_s, detected_at_s, resumed_at_s, version_after, "
                                "detection_s, downtime_s, updates_lost, accuracy_before, accuracy_lowest_after, "
                                "recover_s, accuracy_jump) IS NULL"),
             qint64(1));
    QCOMPARE((*store)->faults(other)->size(), std::size_t(1));
    QVERIFY((*store)->faults(12345)->empty());

    QVERIFY((*store)->deleteRun(id).isOk());
    QVERIFY((*store)->faults(id)->empty());
    QCOMPARE((*store)->faults(other)->size(), std::size_t(1));
  }

  void migratesVersion1File() {
    // A version-1 file: the current schema less what versions 2 and 3 added.
    const QString path = newPath();
    std::int64_t id = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      id = (*store)->createRun(sampleRun("old")).value();
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY(rec.isOk());
      (*rec)->record(EvaluationRow{id, 1.0, 1, 10, 320, 2.0, 0.3});
      QVERIFY((*rec)->finish(RunStatus::Completed).isOk());
    }
    QCOMPARE(rawExec(path, kToVersion1), SQLITE_OK);
    QCOMPARE(rawCount(path, "SELECT count(*) FROM sqlite_master WHERE name = 'faults'"), qint64(0));

    // The recorder migrates too (it is as likely to open the file first).
    {
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY2(rec.isOk(), rec.message().c_str());
      RecoveryMetrics m;
      m.fault.node = "server";
      m.fault.action = "kill";
      m.fault.atS = 3;
      (*rec)->recordFaults({m});
      QVERIFY((*rec)->flush().isOk());
    }
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(3));
    QCOMPARE(rawCount(path, "SELECT count(*) FROM schema_version"), qint64(1));
    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE((*store)->run(id)->name, std::string("old"));
    QCOMPARE((*store)->run(id)->status, RunStatus::Completed);
    QCOMPARE((*store)->evaluations(id)->size(), std::size_t(1));
    auto faults = (*store)->faults(id);
    QVERIFY2(faults.isOk(), faults.message().c_str());
    QCOMPARE(faults->size(), std::size_t(1));
    QCOMPARE(faults->front().fault.atS, 3.0);

    // RunStore::open on a version-1 file migrates as well.
    QCOMPARE(rawExec(path, kToVersion1), SQLITE_OK);
    store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(3));
    QVERIFY((*store)->faults(id)->empty());
    QCOMPARE((*store)->evaluations(id)->size(), std::size_t(1));
  }

  void migratesVersion2EventsToTypedCodes() {
    // A version-2 file: its events table has no typed columns, only the text each writer
    // put there (the server's "<step>: …" rows, the runner's and the engine's wording).
    const QString path = newPath();
    std::int64_t id = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      id = (*store)->createRun(sampleRun("old events")).value();
    }
    QCOMPARE(rawExec(path, "ALTER TABLE events DROP COLUMN code; ALTER TABLE events DROP COLUMN target; "
                           "UPDATE schema_version SET version = 2"),
             SQLITE_OK);
    struct Old {
      const char* kind;
      const char* node;
      const char* detail;
      EventCode code;
      const char* target;
    };
    const Old old[] = {
        {"node", "worker-0", "UP: joined", RE::NODE_UP, ""},
        {"node", "worker-1", "DOWN: silent for 2 s", RE::NODE_DOWN, ""},
        {"reject", "worker-1", "gradient has NaN", RE::CODE_UNSPECIFIED, ""},
        {"control", "cluster", "start: all 2 workers joined", RE::CODE_UNSPECIFIED, ""},
        {"control", "server", "kill server-0", RE::KILL, "server-0"},
        {"fault", "worker-1", "pause worker-1", RE::PAUSE, "worker-1"},
        {"fault", "worker-1", "resume worker-1", RE::RESUME, "worker-1"},
        {"fault", "server", "restarted server (recovery checkpoint)", RE::RESTARTED, "server"},
        {"control", "server-0", "restarted server-0; it rejoins the chain at the tail after server-2 and catches up",
         RE::RESTARTED, "server-0"},
        {"control", "evaluator", "restarted the evaluator", RE::RESTARTED, "evaluator"},
        {"control", "worker-0", "worker-0 is still running; not restarted", RE::RESTART_REFUSED, "worker-0"},
        {"control", "worker-0", "restart of worker-0 failed: no such host", RE::RESTART_REFUSED, "worker-0"},
        {"fault", "server", "server is not running; fault not applied", RE::NOT_APPLIED, ""},
        {"control", "worker-1", "slow worker-1 to x3.000000", RE::SPEED_SET, "worker-1"},
        {"exit", "worker-1", "worker-1 killed by signal 9", RE::EXITED, ""},
        {"recovery", "server-0", "server-0 left the chain; server-1 promoted to head at version 12", RE::LEFT_CHAIN, ""},
        {"recovery", "server", "promoted: server-1 promoted to head at version 12", RE::PROMOTED, "server-1"},
        {"recovery", "server", "chain: server-2 is now the tail", RE::CHAIN_TAIL, "server-2"},
        {"recovery", "server", "chain: server-1 forwards to 127.0.0.1:5001", RE::CHAIN_LINK, "server-1"},
        {"recovery", "server", "checkpoint: checkpoint of version 20 written", RE::CHECKPOINT, ""},
        {"recovery", "server", "restored: restored /tmp/c.bin (version 20, taken at 1.0 s)", RE::RESTORED, ""},
        {"recovery", "server", "adopting: restarted; waiting for the rejoining workers' parameters", RE::ADOPTING, ""},
        {"recovery", "server", "adopted: adopted version 80 from worker-0", RE::ADOPTED, ""},
        {"recovery", "server", "started_fresh: restarted from the initial parameters", RE::STARTED_FRESH, ""},
        {"recovery", "worker-1", "backlog: worker 1: applied a backlog of 4 gradients", RE::BACKLOG, ""},
        {"recovery", "server", "checkpoint: v40", RE::CHECKPOINT, ""},                       // the engine's
        {"recovery", "server", "promoted server-2 at v41", RE::PROMOTED, "server-2"},         // the engine's
        {"recovery", "server", "restored checkpoint v40", RE::RESTORED, ""},                  // the engine's
        {"speed", "worker-0", "slowdown 3.000000 (scheduled)", RE::CODE_UNSPECIFIED, ""},
        {"speed-change", "worker-0", "x2", RE::CODE_UNSPECIFIED, ""},  // a word this build does not know
    };
    std::string insert;
    double t = 0;
    for (const Old& o : old) {
      insert += "INSERT INTO events(run_id, t_s, kind, node, detail) VALUES(" + std::to_string(id) + ", " +
                std::to_string(t += 0.5) + ", '" + o.kind + "', '" + o.node + "', '" +
                QString::fromUtf8(o.detail).replace('\'', QStringLiteral("''")).toStdString() + "');";
    }
    QCOMPARE(rawExec(path, insert), SQLITE_OK);

    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(3));
    auto events = (*store)->events(id);
    QVERIFY2(events.isOk(), events.message().c_str());
    QCOMPARE(events->size(), std::size_t(std::size(old)));
    for (std::size_t i = 0; i < events->size(); ++i) {
      const EventRow& e = (*events)[i];
      const Old& o = old[i];
      QCOMPARE(e.detail, std::string(o.detail));  // the text stays as it was
      QCOMPARE(e.node, std::string(o.node));
      QCOMPARE(std::string(kindName(e.kind)), std::string(kindFromName(o.kind) == RE::KIND_UNSPECIFIED ? "event" : o.kind));
      QVERIFY2(e.code == o.code, o.detail);
      QCOMPARE(e.target, std::string(o.target));
    }

    // New rows carry their codes as written; reopening does not migrate again.
    {
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY(rec.isOk());
      (*rec)->record(EventRow{id, 99.0, RE::FAULT, "server", "kill server-1", RE::KILL, "server-1"});
      QVERIFY((*rec)->flush().isOk());
    }
    store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    events = (*store)->events(id);
    QVERIFY(events.isOk());
    QCOMPARE(events->back().code, RE::KILL);
    QCOMPARE(events->back().target, std::string("server-1"));
    QCOMPARE(events->back().subject(), std::string("server-1"));
    QCOMPARE(events->front().code, RE::NODE_UP);
    QCOMPARE(rawCount(path, "SELECT count(*) FROM events WHERE code <> 0"), qint64(std::size(old) - 4 + 1));
  }

  void recorderWriteErrorIsKept() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto id = (*store)->createRun(sampleRun("full")).value();
    auto rec = RunRecorder::open(path.toStdString(), id, 60000);
    QVERIFY(rec.isOk());
    (*rec)->record(EvaluationRow{id, 1.0, 1, 1, 32, 2.0, 0.2});
    QVERIFY((*rec)->flush().isOk());

    // Every later write fails, as on a full disk.
    QCOMPARE(rawExec(path, "CREATE TRIGGER no_space BEFORE INSERT ON evaluations BEGIN "
                           "SELECT RAISE(ABORT, 'database or disk is full'); END"),
             SQLITE_OK);
    (*rec)->record(EvaluationRow{id, 2.0, 2, 2, 64, 1.5, 0.4});
    Status flushed = (*rec)->flush();
    QVERIFY(!flushed.isOk());
    QVERIFY2(flushed.message().find(path.toStdString()) != std::string::npos, flushed.message().c_str());
    QVERIFY2(flushed.message().find("disk is full") != std::string::npos, flushed.message().c_str());

    Status finished = (*rec)->finish(RunStatus::Completed);
    QVERIFY(!finished.isOk());  // the first error is kept
    QCOMPARE(finished.message(), flushed.message());
    auto evals = (*store)->evaluations(id);
    QVERIFY(evals.isOk());
    QCOMPARE(evals->size(), std::size_t(1));  // what was committed stays
    QCOMPARE((*store)->run(id)->status, RunStatus::Completed);
  }

  void recorderForUnknownRunFails() {
    const QString path = newPath();
    QVERIFY(RunStore::open(path.toStdString()).isOk());
    auto rec = RunRecorder::open(path.toStdString(), 77);
    QVERIFY(!rec.isOk());
    QCOMPARE(rec.message(), "run 77 not found in " + path.toStdString());
  }

  void deadWriterMarkedInterrupted() {
    const QString path = newPath();
    std::int64_t deadForked = 0, deadHuge = 0, reused = 0, alive = 0, otherHost = 0, done = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      deadForked = (*store)->createRun(sampleRun("forked")).value();
      deadHuge = (*store)->createRun(sampleRun("huge")).value();
      reused = (*store)->createRun(sampleRun("reused")).value();
      alive = (*store)->createRun(sampleRun("alive")).value();
      otherHost = (*store)->createRun(sampleRun("elsewhere")).value();
      done = (*store)->createRun(sampleRun("done")).value();
      QVERIFY((*store)->finishRun(done, RunStatus::Completed).isOk());
    }
    // A pid that surely is gone: a child we fork and reap.
    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) _exit(0);
    int wstatus = 0;
    QCOMPARE(waitpid(child, &wstatus, 0), child);

    const auto set = [&](std::int64_t id, const std::string& assignment) {
      return rawExec(path, "UPDATE runs SET " + assignment + " WHERE id = " + std::to_string(id));
    };
    QCOMPARE(set(deadForked, "pid = " + std::to_string(child)), SQLITE_OK);
    QCOMPARE(set(deadHuge, "pid = " + std::to_string(0x7ffffff0)), SQLITE_OK);
    // This process's pid, but another start time: the pid was reused by someone else.
    QCOMPARE(set(reused, "pid_start = '1'"), SQLITE_OK);
    // Another host's run cannot be checked from here and stays running.
    QCOMPARE(set(otherHost, "host = 'some-other-host.invalid', pid = 2147483632"), SQLITE_OK);

    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    for (std::int64_t id : {deadForked, deadHuge, reused}) {
      auto row = (*store)->run(id);
      QVERIFY(row.isOk());
      QCOMPARE(row->status, RunStatus::Interrupted);
      QVERIFY(row->endedAt.has_value());
    }
    QCOMPARE((*store)->run(alive)->status, RunStatus::Running);
    QVERIFY(!(*store)->run(alive)->endedAt);
    QCOMPARE((*store)->run(otherHost)->status, RunStatus::Running);
    QCOMPARE((*store)->run(done)->status, RunStatus::Completed);
  }

  void notSqliteFails() {
    const QString path = newPath();
    const QByteArray text = "this is a text file, not a database\n"
                            "it has a few lines of plain text in it, long enough to look like a "
                            "header and then some more text so SQLite reads a full page.\n";
    {
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      for (int i = 0; i < 40; ++i) file.write(text);
    }
    const QByteArray before = readAll(path);
    auto store = RunStore::open(path.toStdString());
    QVERIFY(!store.isOk());
    const std::string message = store.message();
    QVERIFY2(message.find(path.toStdString()) != std::string::npos, message.c_str());
    QVERIFY2(message.find("not a SQLite database") != std::string::npos, message.c_str());
    QCOMPARE(readAll(path), before);
    QVERIFY(!QFile::exists(path + "-wal"));

    auto rec = RunRecorder::open(path.toStdString(), 1);
    QVERIFY(!rec.isOk());
    QVERIFY(rec.message().find("not a SQLite database") != std::string::npos);
    QCOMPARE(readAll(path), before);
  }

  void otherSqliteDatabaseFails() {
    const QString path = newPath();
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(path.toStdString().c_str(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", nullptr, nullptr, nullptr),
             SQLITE_OK);
    sqlite3_close(db);
    const QByteArray before = readAll(path);
    auto store = RunStore::open(path.toStdString());
    QVERIFY(!store.isOk());
    QVERIFY2(store.message().find(path.toStdString()) != std::string::npos, store.message().c_str());
    QCOMPARE(readAll(path), before);
  }

  void newerSchemaFails() {
    const QString path = newPath();
    std::int64_t id = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      id = (*store)->createRun(sampleRun("old")).value();
    }
    QCOMPARE(rawExec(path, "UPDATE schema_version SET version = 999"), SQLITE_OK);
    // Make the running run look dead, so a (wrong) open would want to write to it.
    QCOMPARE(rawExec(path, "UPDATE runs SET pid = 2147483632 WHERE id = " + std::to_string(id)),
             SQLITE_OK);
    const QByteArray before = readAll(path);
    QVERIFY(!before.isEmpty());

    auto store = RunStore::open(path.toStdString());
    QVERIFY(!store.isOk());
    const std::string message = store.message();
    QVERIFY2(message.find("newer") != std::string::npos, message.c_str());
    QVERIFY2(message.find(path.toStdString()) != std::string::npos, message.c_str());
    QVERIFY2(message.find("999") != std::string::npos, message.c_str());
    QCOMPARE(readAll(path), before);

    auto rec = RunRecorder::open(path.toStdString(), id);
    QVERIFY(!rec.isOk());
    QVERIFY(rec.message().find("newer") != std::string::npos);
    QCOMPARE(readAll(path), before);
    QCOMPARE(rawCount(path, "SELECT count(*) FROM runs WHERE status = 'running'"), qint64(1));
  }

  void killedWriterDataStaysReadable() {
    const QString path = newPath();
    auto store = RunStore::open(path.toStdString());
    QVERIFY(store.isOk());
    const auto id = (*store)->createRun(sampleRun("killed")).value();
    {
      auto rec = RunRecorder::open(path.toStdString(), id, 60000);
      QVERIFY(rec.isOk());
      for (int i = 0; i < 100; ++i) (*rec)->record(SampleRow{id, "worker-0", "wait_s", 0.01 * i, i, 0.5});
      QVERIFY((*rec)->flush().isOk());
      for (int i = 0; i < 5; ++i) (*rec)->record(EventRow{id, 2.0 + i, RE::KIND_UNSPECIFIED, "worker-0", "x2", RE::CODE_UNSPECIFIED, {}});
      // Destroyed without finish(): drains the queue, leaves the run running.
    }
    auto reader = RunStore::open(path.toStdString());
    QVERIFY(reader.isOk());
    QCOMPARE((*reader)->samples(id, "wait_s")->size(), std::size_t(100));
    QCOMPARE((*reader)->events(id)->size(), std::size_t(5));
    auto row = (*reader)->run(id);
    QCOMPARE(row->status, RunStatus::Running);  // this process is alive
    QVERIFY(!row->endedAt);
  }

  void killedProcessDataStaysReadable() {
    // A real kill: a child process (this executable, started with kChildEnv set) creates a
    // run, records and flushes, then is SIGKILLed before it can finish. Its rows stay and
    // the next open marks the run interrupted.
    const QString path = newPath();
    QVERIFY(RunStore::open(path.toStdString()).isOk());

    int pipeFds[2];
    QCOMPARE(pipe(pipeFds), 0);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    env.push_back(std::string(kChildEnv) + "=" + path.toStdString());
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char arg0[] = "tst_run_store";
    char* argv[] = {arg0, nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
    pid_t child = 0;
    const int spawned = posix_spawn(&child, "/proc/self/exe", &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(pipeFds[1]);
    QCOMPARE(spawned, 0);

    char byte = 0;
    const ssize_t got = read(pipeFds[0], &byte, 1);
    close(pipeFds[0]);
    kill(child, SIGKILL);
    int wstatus = 0;
    QCOMPARE(waitpid(child, &wstatus, 0), child);
    QCOMPARE(got, ssize_t(1));  // the child flushed before it was killed
    QVERIFY(WIFSIGNALED(wstatus));

    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    auto runs = (*store)->listRuns();
    QVERIFY(runs.isOk());
    QCOMPARE(runs->size(), std::size_t(1));
    QCOMPARE(runs->front().pid, std::int64_t(child));
    QCOMPARE(runs->front().status, RunStatus::Interrupted);
    QVERIFY(runs->front().endedAt.has_value());
    QCOMPARE((*store)->evaluations(runs->front().id)->size(), std::size_t(50));
  }

  void defaultPath() {
    const QByteArray oldDb = qgetenv("DASP_DB"), oldXdg = qgetenv("XDG_DATA_HOME"),
                     oldHome = qgetenv("HOME");
    const bool hadDb = qEnvironmentVariableIsSet("DASP_DB");
    const bool hadXdg = qEnvironmentVariableIsSet("XDG_DATA_HOME");
    qputenv("DASP_DB", "/tmp/x/my.sqlite");
    QCOMPARE(defaultStorePath(), std::string("/tmp/x/my.sqlite"));
    qputenv("DASP_DB", "");
    qputenv("XDG_DATA_HOME", "/data");
    QCOMPARE(defaultStorePath(), std::string("/data/dasp/runs.sqlite"));
    qunsetenv("XDG_DATA_HOME");
    qputenv("HOME", "/home/someone");
    QCOMPARE(defaultStorePath(), std::string("/home/someone/.local/share/dasp/runs.sqlite"));
    if (hadDb) qputenv("DASP_DB", oldDb); else qunsetenv("DASP_DB");
    if (hadXdg) qputenv("XDG_DATA_HOME", oldXdg); else qunsetenv("XDG_DATA_HOME");
    qputenv("HOME", oldHome);
  }

  void uncreatableLocationFails() {
    // The parent "directory" is a regular file: cannot be created, not even by root.
    const QString blocker = m_dir.filePath(QStringLiteral("plain-file"));
    {
      QFile file(blocker);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write("x");
    }
    const std::string path = (blocker + QStringLiteral("/deeper/runs.sqlite")).toStdString();
    auto store = RunStore::open(path);
    QVERIFY(!store.isOk());
    QVERIFY2(store.message().find(path) != std::string::npos, store.message().c_str());
    auto rec = RunRecorder::open(path, 1);
    QVERIFY(!rec.isOk());
    QVERIFY2(rec.message().find(path) != std::string::npos, rec.message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "tst_run_store.moc"
