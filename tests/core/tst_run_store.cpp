// SPDX-License-Identifier: MIT
// Tests of RunStore and RunRecorder (core/store/run_store.h) on files in a temporary
// directory: runs, rows, the recorder. The store's files (migrations, bad and dead files):
// tst_run_store_files.cpp.
#include "tests/support/store_fixtures.h"

using namespace dasp;
using namespace store_fixtures;

class TestRunStore : public QObject {
  Q_OBJECT

 private:
  StoreFiles m_files;
  QString newPath() { return m_files.newPath(); }

 private slots:
  void initTestCase() { QVERIFY(m_files.valid()); }

  void statusNames() {
    for (RunStatus s : {RunStatus::Running, RunStatus::Completed, RunStatus::Stopped,
                        RunStatus::Failed, RunStatus::Interrupted}) {
      QCOMPARE(runStatusFromString(toString(s)), std::optional<RunStatus>(s));
    }
    QVERIFY(!runStatusFromString("bogus"));
  }

  void createListAndGet() {
    // In a directory that does not exist yet: open creates it.
    const QString path = m_files.filePath(QStringLiteral("sub/dir/runs.sqlite"));
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
    QCOMPARE(RunStore::schemaVersion(), 6);
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
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
      (*rec)->record(DecisionRow{id, 0.7, "server", "SYNC->ASYNC", "slow worker", DecisionKind::StateChange});
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
    node.slurmStep = "17.3";
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
    QCOMPARE(nodes->front().slurmStep, std::string("17.3"));
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
    (*rec)->record(DecisionRow{id, 1.5, "server", "SYNC->ASYNC", "spread 3x", DecisionKind::StateChange});
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
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "tst_run_store.moc"
