// SPDX-License-Identifier: MIT
// `dasp run` end to end with real processes: a short synthetic run is recorded completely
// over each transport; a worker killed mid-run is marked down and training goes on;
// Ctrl-C stops the run cleanly; no node process outlives the run on any of these paths.
#include "core/results/cluster_profile.h"
#include "core/store/run_store.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <string>
#include <vector>

using RE = dasp::v1::RunEvent;

namespace {

// Three workers, the third three times slower.
// `transport`: cluster.transport (empty: the default, AUTO); `payloadPort`:
// launch.payload_port (0: none).
QString writeSpec(const QTemporaryDir& dir, const QString& name, const QString& strategy, double seconds,
                  const QString& transport = {}, int payloadPort = 0) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.strategy = strategy;
  base.maxSeconds = seconds;
  QJsonObject spec = base.json();
  QJsonObject cluster = spec["cluster"].toObject();
  cluster["slowdowns"] = QJsonArray{1, 1, 3};
  if (!transport.isEmpty()) cluster["transport"] = transport;
  spec["cluster"] = cluster;
  if (payloadPort > 0) spec["launch"] = QJsonObject{{"payload_port", payloadPort}};
  return test_support::writeSpecFile(dir.path(), name, spec);
}

// A port no socket of this machine listens on now (the kernel's pick, then given back).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : 0;
}

bool alive(std::int64_t pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0; }

// Every node process recorded for the run has exited.
void verifyNoOrphans(dasp::RunStore& store, std::int64_t runId) {
  auto nodes = store.nodes(runId);
  QVERIFY(nodes.isOk());
  QVERIFY(nodes->size() >= 5);  // server, 3 workers, evaluator
  for (const auto& n : nodes.value()) QVERIFY2(!alive(n.pid), qPrintable(QString::fromStdString(n.node) + " still running"));
}

// The run stored its profile when it ended (the summary's cluster_profile), and that is
// what dasp profile and dasp predict read: the cluster measured from the same records.
void verifyStoredProfile(dasp::RunStore& store, std::int64_t runId) {
  auto measured = dasp::measureStoredRun(store, runId);
  QVERIFY2(measured, measured.message().c_str());
  QVERIFY(measured->stored);
  const auto& workers = measured->profile.workers;
  QCOMPARE(workers.size(), std::size_t{3});
  auto now = dasp::measureRecordedProfile(store, runId, measured->spec.batch_size());
  QVERIFY2(now, now.message().c_str());
  for (std::size_t w = 0; w < workers.size(); ++w) {
    QCOMPARE(workers[w].name, now->workers[w].name);
    QCOMPARE(workers[w].iterations, now->workers[w].iterations);
  }
  QCOMPARE(measured->profile.evaluation.evaluations, static_cast<std::int64_t>(store.evaluations(runId)->size()));
  QVERIFY(measured->profile.evaluation.cpuSPerEvaluation > 0);
}

}  // namespace

class TestRunner : public QObject {
  Q_OBJECT

 private slots:
  void shortRunIsRecorded_data();
  void shortRunIsRecorded();
  void killedWorkerIsMarkedDown();
  void interruptStopsCleanly();

 private:
  QTemporaryDir m_dir;
};

// Each strategy over each cluster.transport; the workers (all on this host) say in their
// log which transport they joined over: AUTO gives them shared memory, TCP the payload
// socket (BSP's on the port launch.payload_port names).
void TestRunner::shortRunIsRecorded_data() {
  QTest::addColumn<QString>("strategy");
  QTest::addColumn<QString>("transport");
  QTest::addColumn<QString>("joinedOver");
  for (const char* strategy : {"bsp", "dasp"}) {
    QTest::newRow(qPrintable(QString(strategy) + " auto")) << strategy << "" << "shm";
    QTest::newRow(qPrintable(QString(strategy) + " TCP")) << strategy << "TCP" << "tcp (push and pull on its payload socket)";
    QTest::newRow(qPrintable(QString(strategy) + " UNIX")) << strategy << "UNIX" << "unix";
  }
}

void TestRunner::shortRunIsRecorded() {
  QFETCH(QString, strategy);
  QFETCH(QString, transport);
  QFETCH(QString, joinedOver);
  const QString over = joinedOver.section(' ', 0, 0);
  const QString name = "short-" + strategy + "-" + over;
  const auto db = m_dir.filePath("runs-" + strategy + "-" + over + ".sqlite");
  const int payloadPort = transport == "TCP" && strategy == "bsp" ? freePort() : 0;
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec(m_dir, name, strategy, 3, transport, payloadPort), "--db", db, "--json", "--quiet"});
  QVERIFY(p.waitForFinished(60000));
  const auto err = QString::fromUtf8(p.readAllStandardError());
  QVERIFY2(p.exitCode() == 0, qPrintable(err));
  const auto lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  for (const char* key : {"run_id", "strategy", "seed", "time_to_target_s", "final_accuracy", "updates", "mean_wait_s",
                          "mean_staleness", "max_staleness"}) {
    QVERIFY2(json.contains(key), key);
  }
  QCOMPARE(json["strategy"].toString(), strategy);
  QVERIFY(json["updates"].toInt() > 20);
  QVERIFY2(json["final_accuracy"].toDouble() > 0.5, qPrintable(lines.last()));
  if (strategy == "bsp") QCOMPARE(json["max_staleness"].toInt(), 0);

  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto runId = static_cast<std::int64_t>(json["run_id"].toInteger());
  auto run = store.value()->run(runId);
  QCOMPARE(run->status, dasp::RunStatus::Completed);
  QCOMPARE(run->strategy, strategy.toStdString());
  QVERIFY(store.value()->evaluations(runId)->size() >= 3);
  QVERIFY(!store.value()->stateIntervals(runId)->empty());
  QVERIFY(!store.value()->samples(runId, "staleness")->empty());
  QVERIFY(!store.value()->samples(runId, "wait_s")->empty());
  // The batch series: a row per change of a worker's batch (DASP's anytime batches change
  // with every draw of a node's speed), never two rows of one batch in a row, never more
  // rows than iterations; under BSP one a worker, the spec's batch.
  const auto batches = store.value()->samples(runId, "batch_size");
  QVERIFY(batches && !batches->empty());
  std::map<std::string, std::vector<double>> batched;
  for (const auto& s : batches.value()) {
    auto& seen = batched[s.node];
    QVERIFY2(seen.empty() || seen.back() != s.value, s.node.c_str());
    seen.push_back(s.value);
  }
  QVERIFY(batches->size() <= store.value()->samples(runId, "wait_s")->size());
  if (strategy == "bsp") {
    for (const auto& [node, values] : batched) QCOMPARE(values.size(), std::size_t{1});
  }
  verifyStoredProfile(*store.value(), runId);
  QVERIFY(!store.value()->logs(runId, "server")->empty());
  if (payloadPort > 0) {
    const std::string said = "payload socket listening on 127.0.0.1:" + std::to_string(payloadPort);
    bool found = false;
    for (const auto& line : store.value()->logs(runId, "server").value()) found = found || line.line.find(said) != std::string::npos;
    QVERIFY2(found, ("the server never said: " + said).c_str());
  }
  for (const auto& n : store.value()->nodes(runId).value()) {
    QVERIFY2(n.exitCode.has_value() && *n.exitCode == 0, n.node.c_str());
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::string worker = "worker-" + std::to_string(rank);
    const std::string said = "joined as rank " + std::to_string(rank) + " over " + joinedOver.toStdString();
    bool found = false;
    for (const auto& line : store.value()->logs(runId, worker).value()) found = found || line.line.find(said) != std::string::npos;
    QVERIFY2(found, (worker + " never said: " + said).c_str());
  }
  verifyNoOrphans(*store.value(), runId);
}

void TestRunner::killedWorkerIsMarkedDown() {
  const auto db = m_dir.filePath("kill.sqlite");
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec(m_dir, "kill", "bsp", 6), "--db", db, "--json", "--quiet"});
  QVERIFY(p.waitForStarted());
  // Wait until the run has worker processes and has applied updates, then kill worker-1.
  std::int64_t victim = 0, runId = 0;
  auto ready = [&]() -> bool {
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    runId = runs->front().id;
    auto evals = store.value()->evaluations(runId);
    if (!evals || evals->size() < 2) return false;
    for (const auto& n : store.value()->nodes(runId).value()) {
      if (n.node == "worker-1") victim = n.pid;
    }
    return victim > 0;
  };
  QTRY_VERIFY_WITH_TIMEOUT(ready(), 30000);
  QCOMPARE(::kill(static_cast<pid_t>(victim), SIGKILL), 0);
  QVERIFY(p.waitForFinished(60000));
  QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
  auto store = dasp::RunStore::open(db.toStdString());
  auto run = store.value()->run(runId);
  QCOMPARE(run->status, dasp::RunStatus::Completed);
  bool sawExit = false, sawDown = false;
  for (const auto& e : store.value()->events(runId).value()) {
    sawExit = sawExit || (e.kind == RE::EXIT && e.code == RE::EXITED && e.node == "worker-1" &&
                          e.detail.find("signal 9") != std::string::npos);
    sawDown = sawDown || (e.kind == RE::NODE && e.code == RE::NODE_DOWN && e.node == "worker-1" &&
                          e.detail.rfind("DOWN", 0) == 0);
  }
  QVERIFY(sawExit);
  QVERIFY(sawDown);
  // Training went on after the kill: evaluations of later versions exist.
  const auto evals = store.value()->evaluations(runId).value();
  QVERIFY(evals.back().version > evals.front().version + 10);
  verifyNoOrphans(*store.value(), runId);
}

void TestRunner::interruptStopsCleanly() {
  const auto db = m_dir.filePath("interrupt.sqlite");
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec(m_dir, "interrupt", "asp", 120), "--db", db, "--quiet"});
  QVERIFY(p.waitForStarted());
  std::int64_t runId = 0;
  auto running = [&]() -> bool {
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    runId = runs->front().id;
    auto evals = store.value()->evaluations(runId);
    return evals && evals->size() >= 2;
  };
  QTRY_VERIFY_WITH_TIMEOUT(running(), 30000);
  ::kill(static_cast<pid_t>(p.processId()), SIGINT);  // what Ctrl-C sends
  QVERIFY(p.waitForFinished(60000));
  QCOMPARE(p.exitCode(), 130);
  auto store = dasp::RunStore::open(db.toStdString());
  QCOMPARE(store.value()->run(runId)->status, dasp::RunStatus::Stopped);
  verifyNoOrphans(*store.value(), runId);
}

QTEST_GUILESS_MAIN(TestRunner)
#include "tst_runner.moc"
