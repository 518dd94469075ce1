// SPDX-License-Identifier: MIT
// Tests of the run store's files (core/store/): schema migrations from older versions (old
// runs stay readable, old events get their typed codes), files that are not stores or are
// newer, writers that died, default and uncreatable locations.
#include "tests/support/store_fixtures.h"

#include <limits>

using namespace dasp;
using namespace store_fixtures;

class TestRunStoreFiles : public QObject {
  Q_OBJECT

 private:
  StoreFiles m_files;
  QString newPath() { return m_files.newPath(); }

 private slots:
  void initTestCase() { QVERIFY(m_files.valid()); }
  void migratesVersion1File() {
    // A version-1 file: the current schema less what versions 2, 3 and 4 added.
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
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
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
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
    QVERIFY((*store)->faults(id)->empty());
    QCOMPARE((*store)->evaluations(id)->size(), std::size_t(1));
  }

  void migratesVersion3AndKeepsDivergence() {
    // A version-3 file with a finished run: version 4 adds the divergence columns and makes
    // the losses nullable (a NaN loss is stored as NULL and reads back as NaN).
    const QString path = newPath();
    std::int64_t old = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      old = (*store)->createRun(sampleRun("old")).value();
      auto rec = RunRecorder::open(path.toStdString(), old);
      QVERIFY(rec.isOk());
      (*rec)->record(EvaluationRow{old, 1.0, 1, 10, 320, 2.0, 0.3});
      (*rec)->record(SampleRow{old, "worker-0", "train_loss", 0.5, 0, 2.25});
      QVERIFY((*rec)->finish(RunStatus::Completed).isOk());
    }
    QCOMPARE(rawExec(path, kToVersion3), SQLITE_OK);
    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
    QCOMPARE((*store)->run(old)->status, RunStatus::Completed);
    QVERIFY(!(*store)->run(old)->divergence);
    QCOMPARE((*store)->evaluations(old)->front().loss, 2.0);
    QCOMPARE((*store)->samples(old, "train_loss")->front().value, 2.25);

    const std::int64_t id = (*store)->createRun(sampleRun("diverging")).value();
    {
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY(rec.isOk());
      const double nan = std::numeric_limits<double>::quiet_NaN();
      (*rec)->record(EvaluationRow{id, 0.5, 3, 3, 96, nan, 0.1});
      (*rec)->record(SampleRow{id, "worker-1", "train_loss", 0.4, 2, std::numeric_limits<double>::infinity()});
      (*rec)->record(SampleRow{id, "worker-0", "train_loss", 0.45, 3, nan});
      Divergence d;
      d.cause = DivergenceCause::NonFiniteTrainLoss;
      d.version = 2;
      d.tS = 0.4;
      QVERIFY((*rec)->finish(RunStatus::Diverged, {}, d).isOk());
    }
    auto row = (*store)->run(id);
    QVERIFY2(row.isOk(), row.message().c_str());
    QCOMPARE(row->status, RunStatus::Diverged);
    QCOMPARE(std::string(toString(row->status)), std::string("diverged"));
    QVERIFY(row->divergence.has_value());
    QCOMPARE(row->divergence->cause, DivergenceCause::NonFiniteTrainLoss);
    QCOMPARE(row->divergence->version, std::int64_t(2));
    QCOMPARE(row->divergence->tS, 0.4);
    QCOMPARE(row->divergence->describe(), std::string("training loss not finite at version 2 (0.40 s)"));
    auto evals = (*store)->evaluations(id);
    QVERIFY2(evals.isOk(), evals.message().c_str());
    QCOMPARE(evals->size(), std::size_t(1));
    QVERIFY(std::isnan(evals->front().loss));
    QCOMPARE(evals->front().accuracy, 0.1);
    auto losses = (*store)->samples(id, "train_loss");
    QVERIFY2(losses.isOk(), losses.message().c_str());
    QCOMPARE(losses->size(), std::size_t(2));
    QVERIFY(std::isinf(losses->at(0).value));
    QVERIFY(std::isnan(losses->at(1).value));
    auto listed = (*store)->listRuns(RunFilter{"", "diverged", "", 0});
    QVERIFY2(listed.isOk(), listed.message().c_str());
    QCOMPARE(listed->size(), std::size_t(1));
  }

  void migratesVersion4DecisionsToTypedKinds() {
    // A version-4 file: its decisions have only the text each writer put there.
    const QString path = newPath();
    std::int64_t id = 0;
    {
      auto store = RunStore::open(path.toStdString());
      QVERIFY(store.isOk());
      id = (*store)->createRun(sampleRun("old decisions")).value();
    }
    QCOMPARE(rawExec(path, kToVersion4), SQLITE_OK);
    struct Old {
      const char* decision;
      std::optional<DecisionKind> kind;
    };
    const Old old[] = {
        {"state_change SYNC->ASYNC", DecisionKind::StateChange}, {"SYNC->ASYNC", DecisionKind::StateChange},
        {"drop 9", DecisionKind::Drop},  {"barrier_timeout", DecisionKind::BarrierTimeout},
        {"repartition", DecisionKind::Repartition}, {"grant 2", DecisionKind::Grant},
        {"something else", std::nullopt},
    };
    for (const Old& o : old) {
      const QString sql = QStringLiteral("INSERT INTO decisions(run_id, t_s, node, decision, reason) "
                                         "VALUES(%1, 1.0, 'cluster', '%2', 'why')")
                              .arg(id)
                              .arg(QLatin1String(o.decision));
      QCOMPARE(rawExec(path, sql.toUtf8().constData()), SQLITE_OK);
    }
    auto store = RunStore::open(path.toStdString());
    QVERIFY2(store.isOk(), store.message().c_str());
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
    auto rows = (*store)->decisions(id);
    QVERIFY2(rows.isOk(), rows.message().c_str());
    QCOMPARE(rows->size(), std::size(old));
    for (std::size_t i = 0; i < rows->size(); ++i) {
      QCOMPARE((*rows)[i].decision, std::string(old[i].decision));
      QVERIFY2((*rows)[i].kind == old[i].kind, old[i].decision);
    }
    // A new row keeps the kind it was recorded with.
    {
      auto rec = RunRecorder::open(path.toStdString(), id);
      QVERIFY(rec.isOk());
      (*rec)->record(DecisionRow{id, 2.0, "cluster", "repartition", "changed", DecisionKind::Repartition});
      QVERIFY((*rec)->flush().isOk());
    }
    rows = (*store)->decisions(id);
    QVERIFY(rows->back().kind == DecisionKind::Repartition);
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
    QCOMPARE(rawExec(path, DASP_DROP_VERSION_4 "ALTER TABLE events DROP COLUMN code; ALTER TABLE events DROP COLUMN target; "
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
    QCOMPARE(rawCount(path, "SELECT version FROM schema_version"), qint64(6));
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
    const QString blocker = m_files.filePath(QStringLiteral("plain-file"));
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

QTEST_GUILESS_MAIN(TestRunStoreFiles)
#include "tst_run_store_files.moc"
