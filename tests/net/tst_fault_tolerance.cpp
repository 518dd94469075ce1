// SPDX-License-Identifier: MIT
// Parameter-server fault tolerance at the protocol level, with real `dasp server`
// processes that the test SIGKILLs: a restarted checkpointing server restores bitwise the
// parameters of its last (valid) checkpoint, also when the latest file is corrupt or the
// disk fills up; a chain with per-update forwarding loses no acknowledged update when its
// head dies or its tail cannot be reached; the first and the fourth over TCP and over
// shared memory. (Stateless recovery: tst_stateless.cpp.)
#include "core/params/checkpoint.h"
#include "tests/support/ps_fixtures.h"

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

using namespace ps_fixtures;

namespace {
// The recovery tests run over TCP and over shared memory (whose regions belong to one
// server: a restarted or promoted server hands out new ones when the worker rejoins).
void transportRows() {
  QTest::addColumn<int>("transport");
  QTest::newRow("tcp") << static_cast<int>(LocalTransport::Tcp);
  QTest::newRow("shm") << static_cast<int>(LocalTransport::Shm);
}
LocalTransport fetchedTransport() {
  QFETCH(int, transport);
  return static_cast<LocalTransport>(transport);
}
}  // namespace

class TestFaultTolerance : public QObject {
  Q_OBJECT

 private slots:
  // The servers this test starts and the clients it makes share one run token.
  void initTestCase() { qputenv("DASP_RUN_TOKEN", "fault-tolerance-test-token"); }
  void checkpointRestoresBitwise_data() { transportRows(); }
  void checkpointRestoresBitwise();
  void corruptLatestCheckpointFallsBack();
  void fullDiskDuringCheckpoint();
  void chainLosesNoAcknowledgedUpdate_data() { transportRows(); }
  void chainLosesNoAcknowledgedUpdate();
  void unreachableReplicaLosesNoAcknowledgedUpdate();

 private:
  QTemporaryDir m_dir;
};

void TestFaultTolerance::checkpointRestoresBitwise() {
  const auto transport = fetchedTransport();
  const auto spec = writeSpec(m_dir, "ckpt", R"({"mode": "CHECKPOINT", "checkpoint_every_updates": 5})");
  // A directory per transport row: the restore below must not find the other row's files.
  const auto dir = m_dir.filePath(QStringLiteral("ckpt-files-") + QTest::currentDataTag()).toStdString();
  Servers servers;
  const auto address = servers.start("server", spec, {"--checkpoint-dir", dir});
  QVERIFY(!address.empty());
  std::map<std::int64_t, std::vector<float>> byVersion;  // what the server acknowledged
  std::int64_t latest = 0;
  {
    EventLog events(address);
    PsClient client(address, kParameters, NodeSecurity(), transport);
    QVERIFY(joinAsWorker(client));
    QCOMPARE(client.transport(), transport);
    for (int k = 1; k <= 12; ++k) {
      auto [v, params] = pushNumber(client, k, k - 1);
      QCOMPARE(v, static_cast<std::int64_t>(k));
      byVersion[v] = params;
    }
    // Checkpoints are due every 5 updates; one due while the writer is busy is taken at
    // the next update. After the one at version >= 10 no further one is due (12 pushes).
    auto last = events.waitRecovery("checkpoint", [](const pb::ClusterEvent& e) { return e.version() >= 10; });
    QVERIFY(last);
    latest = last->version();
  }
  servers.kill("server");
  // The restarted server continues the run at 5 s from the latest checkpoint.
  const auto again = servers.start("server", spec, {"--checkpoint-dir", dir, "--restore", "--resume-at", "5"},
                                   portOf(address));
  QCOMPARE(again, address);
  EventLog events(again);
  auto restored = events.waitRecovery("restored", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(restored);
  QCOMPARE(restored->version(), latest);
  QVERIFY(restored->t_s() >= 5.0);
  auto [version, params] = readParameters(again);
  QCOMPARE(version, latest);
  QVERIFY2(sameBits(params, byVersion[latest]), "restored parameters differ from those the server acknowledged");
  // Training goes on from there.
  PsClient client(again, kParameters, NodeSecurity(), transport);
  QVERIFY(joinAsWorker(client));
  QCOMPARE(pushNumber(client, 99, latest).first, latest + 1);
}

void TestFaultTolerance::corruptLatestCheckpointFallsBack() {
  const auto spec = writeSpec(m_dir, "corrupt", R"({"mode": "CHECKPOINT", "checkpoint_every_updates": 5})");
  const auto dir = m_dir.filePath("corrupt-files").toStdString();
  Servers servers;
  const auto address = servers.start("server", spec, {"--checkpoint-dir", dir});
  QVERIFY(!address.empty());
  std::map<std::int64_t, std::vector<float>> byVersion;
  std::vector<std::int64_t> written;
  {
    EventLog events(address);
    PsClient client(address, kParameters);
    QVERIFY(joinAsWorker(client));
    for (int k = 1; k <= 12; ++k) {
      auto [v, params] = pushNumber(client, k, k - 1);
      byVersion[v] = params;
    }
    QVERIFY(events.waitRecovery("checkpoint", [](const pb::ClusterEvent& e) { return e.version() >= 10; }));
    written = events.versionsOf("checkpoint");
  }
  QVERIFY(written.size() >= 2);
  const std::int64_t previous = written[written.size() - 2];
  servers.kill("server");
  // Flip one byte in the middle of the latest checkpoint.
  CheckpointDirectory files(dir, 2);
  const auto latest = files.pathFor(written.back());
  QFile f(QString::fromStdString(latest));
  QVERIFY(f.open(QIODevice::ReadWrite));
  const qint64 middle = f.size() / 2;
  f.seek(middle);
  char byte = 0;
  QVERIFY(f.getChar(&byte));
  f.seek(middle);
  QVERIFY(f.putChar(static_cast<char>(byte ^ 0x5a)));
  f.close();

  const auto again = servers.start("server", spec, {"--checkpoint-dir", dir, "--restore", "--resume-at", "3"},
                                   portOf(address));
  QVERIFY(!again.empty());
  EventLog events(again);
  auto restored = events.waitRecovery("restored", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(restored);
  QCOMPARE(restored->version(), previous);
  // The message names the corrupt file and why it was skipped.
  QVERIFY2(restored->detail().find(latest) != std::string::npos, restored->detail().c_str());
  QVERIFY2(restored->detail().find("CRC mismatch") != std::string::npos, restored->detail().c_str());
  auto [version, params] = readParameters(again);
  QCOMPARE(version, previous);
  QVERIFY(sameBits(params, byVersion[previous]));
}

void TestFaultTolerance::fullDiskDuringCheckpoint() {
  if (geteuid() != 0) QSKIP("mounting a small tmpfs needs root (CI runs as root)");
  const auto dir = m_dir.filePath("full-disk").toStdString();
  QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
  // Two pages: room for two checkpoint files of this model (one page each), not a third.
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=8k") != 0) {
    QSKIP(qPrintable(QString("cannot mount a tmpfs at %1: %2").arg(QString::fromStdString(dir), strerror(errno))));
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{dir};
  const auto spec = writeSpec(m_dir, "full", R"({"mode": "CHECKPOINT", "checkpoint_every_updates": 1, "checkpoint_keep": 2})");
  Servers servers;
  const auto address = servers.start("server", spec, {"--checkpoint-dir", dir});
  QVERIFY(!address.empty());
  std::int64_t acked = 0;
  {
    EventLog events(address);
    PsClient client(address, kParameters);
    QVERIFY(joinAsWorker(client));
    for (int k = 1; k <= 12; ++k) {
      // Every push is acknowledged: a checkpoint that cannot be written stops nothing.
      auto [v, params] = pushNumber(client, k, k - 1);
      QCOMPARE(v, static_cast<std::int64_t>(k));
      acked = v;
      // One checkpoint a version: the writer coalesces the versions made while it writes,
      // and a loaded machine would otherwise write two files that fit and never fill it.
      const auto attempt = events.waitEvent([&](const pb::ClusterEvent& e) {
        return e.kind() == pb::ClusterEvent::RECOVERY && e.version() == v &&
               (e.decision() == "checkpoint" || e.decision() == "checkpoint_failed");
      });
      QVERIFY2(attempt, qPrintable(QString("no checkpoint attempt of version %1").arg(v)));
    }
    auto failed = events.waitRecovery("checkpoint_failed", [](const pb::ClusterEvent&) { return true; });
    QVERIFY(failed);
    QVERIFY2(failed->detail().find("No space left on device") != std::string::npos, failed->detail().c_str());
    QVERIFY2(failed->detail().find(dir) != std::string::npos, failed->detail().c_str());
  }
  QCOMPARE(acked, std::int64_t{12});
  servers.kill("server");
  // What is on the full disk is the last checkpoint that was written, intact.
  CheckpointDirectory files(dir, 2);
  auto onDisk = files.loadLatest(nullptr, "logreg", kParameters);
  QVERIFY2(onDisk.isOk(), onDisk.message().c_str());
  const auto again = servers.start("server", spec, {"--checkpoint-dir", dir, "--restore", "--resume-at", "2"},
                                   portOf(address));
  QVERIFY(!again.empty());
  auto [version, params] = readParameters(again);
  QCOMPARE(version, onDisk->version);
  QVERIFY(sameBits(params, onDisk->parameters));
}

void TestFaultTolerance::chainLosesNoAcknowledgedUpdate() {
  const auto transport = fetchedTransport();
  const auto spec = writeSpec(m_dir, "chain", R"({"mode": "CHAIN", "replicas": 3, "forward_every": 1})");
  Servers servers;
  const auto tail = servers.start("server-2", spec, {"--replica"});
  const auto middle = servers.start("server-1", spec, {"--replica", "--chain-next", tail});
  const auto head = servers.start("server-0", spec, {"--chain-next", middle});
  QVERIFY(!tail.empty() && !middle.empty() && !head.empty());
  // A replica refuses worker traffic.
  {
    PsClient replica(tail, kParameters);
    pb::JoinRequest req;
    req.set_role("worker");
    req.set_model("logreg");
    req.set_parameter_count(kParameters);
    pb::JoinReply reply;
    const auto st = replica.join(req, reply, 5);
    QCOMPARE(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    QVERIFY2(st.error_message().find("server-2 is a chain replica") != std::string::npos, st.error_message().c_str());
  }
  std::int64_t lastAck = 0;
  std::vector<float> ackedParams;
  {
    PsClient client(head, kParameters, NodeSecurity(), transport);
    QVERIFY(joinAsWorker(client));
    QCOMPARE(client.transport(), transport);
    for (int k = 1; k <= 15; ++k) {
      auto [v, params] = pushNumber(client, k, lastAck);
      QCOMPARE(v, static_cast<std::int64_t>(k));
      lastAck = v;
      ackedParams = params;
    }
  }
  servers.kill("server-0");
  // The configuration master (here the test) promotes the next replica.
  PsClient control(middle, kParameters);
  pb::ControlRequest promote;
  promote.set_action(pb::ControlRequest::PROMOTE);
  promote.set_t_s(4.0);
  pb::ControlReply reply;
  QVERIFY(control.control(promote, reply, 5).ok());
  QVERIFY2(reply.accepted(), reply.detail().c_str());
  QCOMPARE(reply.version(), lastAck);
  auto [version, params] = readParameters(middle);
  QCOMPARE(version, lastAck);
  QVERIFY2(sameBits(params, ackedParams), "the promoted replica's parameters differ from the head's at the last ack");
  // The new head takes workers and goes on.
  PsClient client(middle, kParameters, NodeSecurity(), transport);
  QVERIFY(joinAsWorker(client));
  QCOMPARE(client.transport(), transport);
  QCOMPARE(pushNumber(client, 16, lastAck).first, lastAck + 1);
}

void TestFaultTolerance::unreachableReplicaLosesNoAcknowledgedUpdate() {
  const auto spec = writeSpec(m_dir, "unreachable", R"({"mode": "CHAIN", "replicas": 3, "forward_every": 1})");
  Servers servers;
  const auto tail = servers.start("server-2", spec, {"--replica"});
  const auto middle = servers.start("server-1", spec, {"--replica", "--chain-next", tail});
  const auto head = servers.start("server-0", spec, {"--chain-next", middle});
  QVERIFY(!tail.empty() && !middle.empty() && !head.empty());
  EventLog middleEvents(middle);
  PsClient client(head, kParameters);
  QVERIFY(joinAsWorker(client));
  for (int k = 1; k <= 5; ++k) QCOMPARE(pushNumber(client, k, k - 1).first, static_cast<std::int64_t>(k));
  servers.kill("server-2");
  // The tail is gone: the next push is applied at the head but cannot be acknowledged.
  QCOMPARE(pushNumber(client, 6, 5, 2.0).first, std::int64_t{-1});
  auto unreachable = middleEvents.waitRecovery("replica_unreachable", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(unreachable);
  QVERIFY2(unreachable->detail().find(tail) != std::string::npos, unreachable->detail().c_str());
  QVERIFY2(unreachable->detail().find("cannot be reached") != std::string::npos, unreachable->detail().c_str());
  // The master takes the dead tail out: server-1 becomes the tail and acknowledges.
  PsClient control(middle, kParameters);
  pb::ControlRequest relink;
  relink.set_action(pb::ControlRequest::SET_NEXT);
  relink.set_address("");
  pb::ControlReply reply;
  QVERIFY(control.control(relink, reply, 5).ok());
  QVERIFY(reply.accepted());
  pb::PullRequest pull;
  pull.set_rank(0);
  pb::PullReply pulled;
  const float* params = nullptr;
  QVERIFY(client.pullParameters(pull, pulled, params, 10).ok());
  QCOMPARE(pulled.version(), std::int64_t{6});
  const std::vector<float> acked(params, params + kParameters);
  // The head dies: the promoted replica holds every acknowledged update, bitwise.
  servers.kill("server-0");
  pb::ControlRequest promote;
  promote.set_action(pb::ControlRequest::PROMOTE);
  promote.set_t_s(3.0);
  QVERIFY(control.control(promote, reply, 5).ok());
  QCOMPARE(reply.version(), std::int64_t{6});
  auto [version, after] = readParameters(middle);
  QCOMPARE(version, std::int64_t{6});
  QVERIFY(sameBits(after, acked));
}

QTEST_GUILESS_MAIN(TestFaultTolerance)
#include "tst_fault_tolerance.moc"
