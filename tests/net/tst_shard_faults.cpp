// SPDX-License-Identifier: MIT
// A sharded parameter server's faults: `dasp run` with 3 shards through real processes and
// a drill on one of them.
//  - A killed shard (or shard 0) under CHECKPOINT, NONE or STATELESS: every shard restores
//    one version, the updates lost are counted against the acknowledgements, and training
//    goes on (under STATELESS with the workers' backlogs applied on every shard).
//  - Under CHAIN a killed shard's replica takes its place with nothing lost, and a
//    replica holds its shard's bits at the end of a run.
//  - A paused shard or shard 0 holds the workers on their deadlines; the run goes on where
//    it stopped, nothing lost, every shard and replica with one model's bits.
#include "core/params/update_record.h"
#include "core/store/run_store.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <optional>

namespace {

using namespace dasp;

// A run of `seconds` of 3 workers (mlp) on 3 shards with `recovery`.
QJsonObject threeShardSpec(const QJsonObject& recovery, double seconds) {
  test_support::SyntheticSpec base;
  base.workers = 3;
  base.maxSeconds = seconds;
  QJsonObject spec = base.json();
  spec["model"] = QJsonObject{{"name", "mlp"}};
  spec["ps"] = QJsonObject{{"shards", 3}};
  spec["recovery"] = recovery;
  return spec;
}

// A run of 12 s of 3 workers (mlp) on 3 shards with `recovery` and one drill (`fault`), in
// `dir`: its store once the run completed with one fault recorded (null, the test failed,
// otherwise). 12 s: the restarted processes (the shard, then shard 0) must be up before the
// run ends, and on 2 cores beside three other tests, or under AddressSanitizer, a process
// start can take seconds (a STATELESS row's were still starting at 9 s under ASan).
std::unique_ptr<RunStore> runShardDrill(const QString& dir, const QJsonObject& recovery, const QJsonObject& fault) {
  QJsonObject spec = threeShardSpec(recovery, 12);
  spec["faults"] = QJsonArray{fault};
  const QString path = test_support::writeSpecFile(dir, "shard-drill", spec);
  const QString db = QDir(dir).filePath("runs.sqlite");
  const auto run = test_support::runDasp({"run", path, "--db", db, "--json", "--quiet"}, 90000);
  if (run.exitCode != 0 || !run.out.contains("\"status\":\"completed\"")) {
    QTest::qFail(qPrintable(run.err + run.out), __FILE__, __LINE__);
    return nullptr;
  }
  auto store = RunStore::open(db.toStdString()).value();
  if (store->faults(store->listRuns().value().front().id).value().size() != 1) {
    QTest::qFail("not one fault recorded", __FILE__, __LINE__);
    return nullptr;
  }
  return store;
}

// The final state (parameters and momentum) `node` wrote to its update record in `records`.
std::optional<UpdateRecord> finalStateOf(const QString& records, const QString& node) {
  auto all = readUpdateRecords(QDir(records).filePath("run-1/" + node + ".0.record").toStdString());
  if (!all) return std::nullopt;
  for (auto& r : all.value()) {
    if (r.kind == UpdateRecordKind::Final) return std::move(r);
  }
  return std::nullopt;
}
}  // namespace

class TestShardFaults : public QObject {
  Q_OBJECT

 private slots:
  void killedShardRestoresOneVersion_data();
  void killedShardRestoresOneVersion();
  void killedShardsReplicaTakesItsPlace();
  void replicasHoldTheirShardsBits();
  void pausedShardHoldsItsNodesThenGoesOn_data();
  void pausedShardHoldsItsNodesThenGoesOn();
};

// A drill kills one shard of 3 (or shard 0) mid-run. Every shard restores one version: the
// newest checkpoint all of them hold (each writes its range at shard 0's CHECKPOINT), or
// the initial parameters under NONE; the updates lost are those acknowledged beyond it,
// and training goes on from it (a torn pull would fail the workers instead).
void TestShardFaults::killedShardRestoresOneVersion_data() {
  QTest::addColumn<QString>("mode");
  QTest::addColumn<QString>("killed");
  QTest::newRow("checkpoint, shard-2 killed") << "CHECKPOINT" << "shard-2";
  QTest::newRow("checkpoint, shard 0 killed") << "CHECKPOINT" << "server";
  QTest::newRow("none, shard-1 killed") << "NONE" << "shard-1";
  QTest::newRow("stateless, shard-1 killed") << "STATELESS" << "shard-1";
  QTest::newRow("stateless, shard 0 killed") << "STATELESS" << "server";
}

void TestShardFaults::killedShardRestoresOneVersion() {
  QFETCH(QString, mode);
  QFETCH(QString, killed);
  QTemporaryDir dir;
  const auto store =
      runShardDrill(dir.path(), QJsonObject{{"mode", mode}, {"checkpoint_every_updates", 50}},
                    QJsonObject{{"node", killed}, {"action", "KILL"}, {"at_s", 1.5}, {"restart_after_s", 1}});
  QVERIFY(store);
  const std::int64_t id = store->listRuns().value().front().id;
  const auto faults = store->faults(id).value();
  const auto& f = faults.front();
  QCOMPARE(QString::fromStdString(f.fault.node), killed);
  QVERIFY2(f.fault.versionAfter, f.fault.detail.c_str());
  const std::int64_t restored = *f.fault.versionAfter;
  const std::int64_t before = f.fault.versionBefore;
  if (mode == "NONE") {
    QCOMPARE(restored, std::int64_t{0});
  } else if (mode == "STATELESS") {
    // The highest version a rejoining worker held: at most a push or two behind.
    QVERIFY2(restored > 0 && before - restored <= 5, f.fault.detail.c_str());
  } else {
    // A checkpoint every shard held: every 50 updates, two kept, so well within 200.
    QVERIFY2(restored > 0 && before - restored < 200, f.fault.detail.c_str());
  }
  // Lost: what the workers were acknowledged (the version before the fault, give or take
  // the pushes in flight) beyond the version restored.
  QVERIFY2(f.updatesLost && *f.updatesLost >= std::max<std::int64_t>(0, before - restored - 5) &&
               *f.updatesLost <= before - restored + 5,
           qPrintable(QStringLiteral("lost %1, version before %2, restored %3")
                          .arg(f.updatesLost.value_or(-1))
                          .arg(before)
                          .arg(restored)));
  // Every other shard rolled back to that version at shard 0's RESTORE.
  for (const char* shard : {"shard-1", "shard-2"}) {
    bool rolledBack = false;
    for (const auto& l : store->logs(id, shard).value()) {
      rolledBack = rolledBack || l.line.find("restored version " + std::to_string(restored) + " ") != std::string::npos;
    }
    QVERIFY2(rolledBack, shard);
  }
  if (mode == "STATELESS") {
    // The workers' backlogs were applied on every shard (a shard that missed one would
    // answer a version the others do not hold: a torn pull, and the workers fail).
    bool backlog = false;
    for (const auto& e : store->events(id).value()) backlog = backlog || e.code == v1::RunEvent::BACKLOG;
    QVERIFY(backlog);
  }
  // Training went on from it.
  const auto summary = store->summary(id).value();
  double updates = 0;
  for (const auto& row : summary) updates = row.key == "updates" && row.value ? *row.value : updates;
  QVERIFY2(updates > static_cast<double>(restored) + 10, qPrintable(QString::number(updates)));
}

// Chain replication per shard: a killed shard's replica, which followed shard 0's log and
// took every range the workers pushed the shard, takes its place at once: nothing is
// undone, nothing acknowledged is lost, and training goes on.
void TestShardFaults::killedShardsReplicaTakesItsPlace() {
  QTemporaryDir dir;
  const auto store = runShardDrill(dir.path(), QJsonObject{{"mode", "CHAIN"}, {"replicas", 2}},
                                   QJsonObject{{"node", "shard-2"}, {"action", "KILL"}, {"at_s", 1.5}});
  QVERIFY(store);
  const std::int64_t id = store->listRuns().value().front().id;
  const auto faults = store->faults(id).value();
  const auto& f = faults.front().fault;
  const auto& lost = faults.front().updatesLost;
  QCOMPARE(QString::fromStdString(f.node), QStringLiteral("shard-2"));
  QVERIFY2(f.versionAfter && *f.versionAfter >= f.versionBefore, f.detail.c_str());
  QVERIFY2(f.detail.find("took its place") != std::string::npos, f.detail.c_str());
  QVERIFY2(lost && *lost == 0, f.detail.c_str());
  // The replica carried on from shard 0's version: it was told to serve, and did not restore.
  bool serves = false;
  for (const auto& l : store->logs(id, "shard-2-r1").value()) {
    serves = serves || l.line.find("takes shard 2's place at version " + std::to_string(*f.versionAfter)) !=
                           std::string::npos;
  }
  QVERIFY(serves);
  const auto summary = store->summary(id).value();
  double updates = 0;
  for (const auto& row : summary) updates = row.key == "updates" && row.value ? *row.value : updates;
  QVERIFY2(updates > static_cast<double>(*f.versionAfter) + 10, qPrintable(QString::number(updates)));
}

// A shard's replica is fed what the shard is fed (the ranges the workers push, shard 0's
// log), so at the end of a run it holds the shard's parameters and momentum bit for bit
// (each writes its final state to its update record). Its load is the run's too: a lane of
// its own, from its SHARD_LOAD periods in the store.
void TestShardFaults::replicasHoldTheirShardsBits() {
  QTemporaryDir dir;
  const QString path = test_support::writeSpecFile(
      dir.path(), "shard-replicas", threeShardSpec(QJsonObject{{"mode", "CHAIN"}, {"replicas", 2}}, 2));
  const QString records = dir.filePath("records");
  const QString db = dir.filePath("runs.sqlite");
  const auto run = test_support::runDasp({"run", path, "--db", db, "--record", records, "--json", "--quiet"}, 90000);
  QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  for (const QString shard : {"shard-1", "shard-2"}) {
    const auto head = finalStateOf(records, shard);
    const auto replica = finalStateOf(records, shard + "-r1");
    QVERIFY2(head && replica, qPrintable(shard));
    QVERIFY2(head->version > 10, qPrintable(QString::number(head->version)));  // it trained
    QCOMPARE(replica->version, head->version);
    QCOMPARE(replica->values.size(), head->values.size());
    QVERIFY2(std::memcmp(replica->values.data(), head->values.data(), head->values.size() * sizeof(float)) == 0,
             qPrintable(shard + " and its replica hold different bits"));
  }
  auto store = RunStore::open(db.toStdString()).value();
  const auto applied = store->samples(store->listRuns().value().front().id, "shard_apply_s").value();
  for (const char* replica : {"shard-1-r1", "shard-2-r1"}) {
    double applying = -1;
    for (const auto& a : applied) applying = a.node == replica ? std::max(applying, 0.0) + a.value : applying;
    QVERIFY2(applying > 0, replica);  // periods were reported, and the replica applied updates
  }
}
void TestShardFaults::pausedShardHoldsItsNodesThenGoesOn_data() {
  QTest::addColumn<QString>("paused");
  QTest::newRow("shard-1") << "shard-1";
  QTest::newRow("shard 0") << "server";
}

// SIGSTOP on one process of a sharded server (under CHAIN: every shard 1..S-1 has a
// replica) for longer than the workers' deadlines. Their calls wait on the deadlines (the
// stall is detected), a push that timed out is never pushed again, and when the process
// is continued it carries out what it was sent meanwhile: the run goes on from the same
// version, nothing acknowledged is lost, no replica takes a place, and every replica ends
// with its shard's bits (a range applied twice, or one a paused shard missed, would differ).
void TestShardFaults::pausedShardHoldsItsNodesThenGoesOn() {
  QFETCH(QString, paused);
  QTemporaryDir dir;
  QJsonObject spec = threeShardSpec(QJsonObject{{"mode", "CHAIN"}, {"replicas", 2}, {"call_timeout_s", 1}}, 8);
  spec["faults"] = QJsonArray{QJsonObject{{"node", paused}, {"action", "PAUSE"}, {"at_s", 2}, {"restart_after_s", 2}}};
  const QString path = test_support::writeSpecFile(dir.path(), "shard-pause", spec);
  const QString records = dir.filePath("records");
  const QString db = dir.filePath("runs.sqlite");
  const auto run = test_support::runDasp({"run", path, "--db", db, "--record", records, "--json", "--quiet"}, 90000);
  QVERIFY2(run.exitCode == 0 && run.out.contains("\"status\":\"completed\""), qPrintable(run.err + run.out));
  auto store = RunStore::open(db.toStdString()).value();
  const std::int64_t id = store->listRuns().value().front().id;
  const auto faults = store->faults(id).value();
  QCOMPARE(faults.size(), std::size_t{1});
  const auto& f = faults.front();
  const QString why = QString::fromStdString(f.fault.detail) + " " + run.out;
  QCOMPARE(QString::fromStdString(f.fault.node), paused);
  QCOMPARE(QString::fromStdString(f.fault.action), QStringLiteral("pause"));
  QVERIFY2(f.detectionS, qPrintable(why));  // the workers' calls waited past their deadlines
  QVERIFY2(f.fault.versionAfter && *f.fault.versionAfter >= f.fault.versionBefore, qPrintable(why));
  QVERIFY2(f.updatesLost && *f.updatesLost == 0, qPrintable(why));
  for (const auto& e : store->events(id).value()) {
    QVERIFY2(e.kind != v1::RunEvent::EXIT || e.subject() != paused.toStdString(), e.detail.c_str());
    QVERIFY2(e.code != v1::RunEvent::PROMOTED && e.detail.find("took its place") == std::string::npos,
             e.detail.c_str());
  }
  const auto summary = store->summary(id).value();
  double updates = 0;
  for (const auto& row : summary) updates = row.key == "updates" && row.value ? *row.value : updates;
  QVERIFY2(updates > static_cast<double>(*f.fault.versionAfter) + 10, qPrintable(QString::number(updates)));
  QString recoveries;  // what the run said of its servers, quoted when a replica fell behind
  for (const auto& e : store->events(id).value()) {
    if (e.kind == v1::RunEvent::RECOVERY) recoveries += QString::fromStdString(e.detail) + "\n";
  }
  for (const QString shard : {"shard-1", "shard-2"}) {
    const auto head = finalStateOf(records, shard);
    const auto replica = finalStateOf(records, shard + "-r1");
    QVERIFY2(head && replica, qPrintable(shard));
    QVERIFY2(replica->version == head->version,
             qPrintable(QStringLiteral("%1 ends at version %2, its replica at %3; the run's recovery events:\n%4")
                            .arg(shard)
                            .arg(head->version)
                            .arg(replica->version)
                            .arg(recoveries)));
    QCOMPARE(replica->values.size(), head->values.size());
    QVERIFY2(std::memcmp(replica->values.data(), head->values.data(), head->values.size() * sizeof(float)) == 0,
             qPrintable(shard + " and its replica hold different bits"));
  }
}

QTEST_GUILESS_MAIN(TestShardFaults)
#include "tst_shard_faults.moc"
