// SPDX-License-Identifier: MIT
// Multi-host run with emulated links: the test builds three network namespaces joined by
// veth pairs on a bridge (net/bench/netns_hosts.h) — the server's host (server and
// evaluator) and two worker hosts — plus a veth from the test's own namespace (where the
// runner runs) to the bridge, limits one worker host's link (both directions), and runs
// experiments through `dasp run` with the nodes placed on those "hosts" (launcher LOCAL
// with netns). Latency comes from netem where `tc ... netem` works, else from the spec's
// link model in the sender (this machine's kernel has no netem); the test prints which.
//
// It checks that a run completes and that the slow link shows in the store (the slow
// worker's pull and push intervals are many times the fast worker's), and that a sharded
// server's shards run on the hosts the placement names.
// Needs root, iproute2 and the kernel's netns/veth/bridge/tbf support; skips saying which
// is missing.

#include "core/store/run_store.h"
#include "net/bench/netns_hosts.h"
#include "tests/support/processes.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace {


using Ran = test_support::Finished;
Ran run(const QString& program, const QStringList& args, int timeoutMs = 30000) {
  return test_support::runProgram(program, args, timeoutMs);
}

}  // namespace

class TestNetns : public QObject {
  Q_OBJECT

  std::unique_ptr<dasp::net::NetnsHosts> m_hosts;
  QString m_skip;

  // The server's host s and worker hosts a and b; b's link 8 Mbit/s each way, and 5 ms
  // where netem works.
  bool buildTopology() {
    if (m_hosts) return true;
    auto made = dasp::net::NetnsHosts::create("dnt", 231, {{"s", 0, 0}, {"a", 0, 0}, {"b", 8, 5}});
    if (!made) {
      m_skip = QString::fromStdString(made.message());
      return false;
    }
    m_hosts = std::move(made).value();
    qInfo("link of host b: %s", m_hosts->hasNetem() ? "netem delay 5ms rate 8mbit (both directions)"
                                                    : "tc tbf rate 8mbit (both directions); latency 5 ms from the "
                                                      "spec's link model in the sender (no netem in this kernel)");
    return true;
  }

  QJsonObject hostJson(const char* name) const {
    return QJsonObject{{"name", name},
                       {"address", QString::fromStdString(m_hosts->address(name))},
                       {"netns", QString::fromStdString(m_hosts->netns(name))}};
  }

  // Mean pull + push time per iteration of each worker of a stored run.
  static std::map<std::string, double> transferPerIteration(const QString& db, std::int64_t runId,
                                                            std::map<std::string, double>* iterations) {
    std::map<std::string, double> transfer, count;
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store.isOk()) return {};
    for (const auto& i : store.value()->stateIntervals(runId).value()) {
      if (i.state == "PULL" || i.state == "PUSH") transfer[i.node] += i.t1S - i.t0S;
    }
    for (const auto& s : store.value()->samples(runId, "compute_s").value()) count[s.node] += 1;
    for (auto& [node, t] : transfer) t /= std::max(1.0, count[node]);
    if (iterations) *iterations = count;
    return transfer;
  }

  // Runs `spec` through `dasp run`; the run id, or -1 with the failure logged.
  static std::int64_t runSpec(const QJsonObject& spec, const QString& dir, const QString& db) {
    const QString path = dir + "/spec.json";
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return -1;
    f.write(QJsonDocument(spec).toJson());
    f.close();
    const auto o = run(test_support::daspBinary(), {"run", path, "--db", db, "--json", "--quiet"}, 120000);
    if (o.exitCode != 0) {
      qWarning("dasp run failed: %s", qPrintable(o.err));
      return -1;
    }
    const auto json = QJsonDocument::fromJson(o.out.trimmed().split('\n').last().toUtf8()).object();
    if (json["status"].toString() != "completed") return -1;
    return static_cast<std::int64_t>(json["run_id"].toInteger());
  }

  // The transport a worker says it joined over ("joined as rank R over T"); "" if none.
  static std::string joinedOver(const QString& db, std::int64_t runId, const std::string& worker) {
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store.isOk()) return {};
    for (const auto& l : store.value()->logs(runId, worker).value()) {
      const auto at = l.line.find(" over ");
      if (l.line.find("joined as rank") != std::string::npos && at != std::string::npos) {
        return l.line.substr(at + 6, l.line.find_first_of(" (", at + 6) - (at + 6));
      }
    }
    return {};
  }

  static QJsonObject twoWorkerSpec() {
    // A 44 KB model (MLP 32-256-10): 44 ms a transfer at 8 Mbit/s against ~0.1 ms on an
    // unshaped loopback.
    return QJsonDocument::fromJson(R"({
      "name": "links", "model": {"name": "mlp", "hidden": 256}, "dataset": {"name": "synthetic"},
      "optimizer": {"lr": 0.02, "momentum": 0.9}, "batch_size": 32,
      "cluster": {"workers": [{"name": "worker-0", "speed": {"base_iteration_ms": 20}},
                              {"name": "worker-1", "speed": {"base_iteration_ms": 20}}]},
      "strategy": {"name": "asp"}, "stop": {"max_seconds": 6}, "evaluation": {"every_s": 1}
    })").object();
  }

  // Sets cluster.workers[index].link of a spec.
  static void setLink(QJsonObject& spec, int index, const QJsonObject& link) {
    QJsonObject cluster = spec["cluster"].toObject();
    QJsonArray workers = cluster["workers"].toArray();
    QJsonObject w = workers[index].toObject();
    w["link"] = link;
    workers[index] = w;
    cluster["workers"] = workers;
    spec["cluster"] = cluster;
  }

 private slots:
  // The spec's link model on one machine (no namespaces, no root): worker-1's link of
  // 15 ms and 8 Mbit/s is emulated in the worker, both ways.
  void linkModelForLocalRuns() {
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    QJsonObject spec = twoWorkerSpec();
    setLink(spec, 1, QJsonObject{{"latency_ms", 15}, {"mbit", 8}});
    const auto runId = runSpec(spec, dir.path(), db);
    QVERIFY(runId > 0);
    std::map<std::string, double> iterations;
    const auto t = transferPerIteration(db, runId, &iterations);
    QVERIFY(iterations["worker-0"] > 20 && iterations["worker-1"] > 5);
    qInfo("pull + push per iteration: worker-0 %.2f ms, worker-1 (15 ms, 8 Mbit/s) %.2f ms",
          t.at("worker-0") * 1e3, t.at("worker-1") * 1e3);
    // 2 × (15 ms + 44 KB × 8 / 8 Mbit/s) ≈ 118 ms.
    QVERIFY2(t.at("worker-1") > 0.110, qPrintable(QString::number(t.at("worker-1"))));
    QVERIFY(t.at("worker-1") > 5 * t.at("worker-0"));
    // Both workers share the server's host: shared memory (the link is emulated in them).
    QCOMPARE(joinedOver(db, runId, "worker-0"), std::string("shm"));
    QCOMPARE(joinedOver(db, runId, "worker-1"), std::string("shm"));
  }

  void cleanupTestCase() { m_hosts.reset(); }  // the namespaces and the runner's veth go

  void slowLinkShowsInTheStore() {
    if (!buildTopology()) QSKIP(qPrintable(m_skip));
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    QJsonObject spec = twoWorkerSpec();
    QJsonObject launch;
    launch["launcher"] = "LOCAL";
    launch["hosts"] = QJsonArray{hostJson("s"), hostJson("a"), hostJson("b")};
    launch["placement"] = QJsonObject{{"servers", QJsonArray{"s"}}, {"evaluator", "s"}, {"workers", QJsonArray{"a", "b"}}};
    spec["launch"] = launch;
    if (!m_hosts->hasNetem()) {
      // Latency of the slow host's link from our own model, in the sender.
      setLink(spec, 1, QJsonObject{{"latency_ms", 5}});
    }
    const auto runId = runSpec(spec, dir.path(), db);
    QVERIFY(runId > 0);
    std::map<std::string, double> iterations;
    const auto t = transferPerIteration(db, runId, &iterations);
    QVERIFY2(iterations["worker-0"] > 20 && iterations["worker-1"] > 5,
             qPrintable(QString("iterations %1 / %2").arg(iterations["worker-0"]).arg(iterations["worker-1"])));
    const double fast = t.at("worker-0"), slow = t.at("worker-1");
    qInfo("pull + push per iteration: worker-0 (unshaped) %.2f ms, worker-1 (8 Mbit/s) %.2f ms", fast * 1e3, slow * 1e3);
    // Two 44 KB transfers at 8 Mbit/s, of which the tbf burst (16 KB) passes at once:
    // at least 2 × 28 KB × 8 / 8 Mbit/s = 56 ms.
    QVERIFY2(slow > 0.056, qPrintable(QString::number(slow)));
    QVERIFY2(slow > 5 * fast, qPrintable(QString("%1 vs %2").arg(slow).arg(fast)));
    // Workers on other hosts than the server's use TCP, whatever the default says.
    QCOMPARE(joinedOver(db, runId, "worker-0"), std::string("tcp"));
    QCOMPARE(joinedOver(db, runId, "worker-1"), std::string("tcp"));
  }

  // ps.shards 2 on two hosts: shard 0 on s, shard 1 on a, the workers on b. Each shard is
  // a node of the run on its host, and shard 0's log crosses the bridge to shard 1.
  void shardsRunOnTheirHosts() {
    if (!buildTopology()) QSKIP(qPrintable(m_skip));
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    QJsonObject spec = twoWorkerSpec();
    spec["ps"] = QJsonObject{{"shards", 2}};
    spec["stop"] = QJsonObject{{"max_seconds", 4}};
    QJsonObject launch;
    launch["launcher"] = "LOCAL";
    launch["hosts"] = QJsonArray{hostJson("s"), hostJson("a"), hostJson("b")};
    launch["placement"] = QJsonObject{{"servers", QJsonArray{"s", "a"}}, {"evaluator", "s"}, {"workers", QJsonArray{"b"}}};
    spec["launch"] = launch;
    const auto runId = runSpec(spec, dir.path(), db);
    QVERIFY(runId > 0);
    auto store = dasp::RunStore::open(db.toStdString());
    QVERIFY(store.isOk());
    std::map<std::string, std::string> hostOf;
    for (const auto& n : store.value()->nodes(runId).value()) hostOf[n.node] = n.host;
    QCOMPARE(hostOf["server"], std::string("s"));
    QCOMPARE(hostOf["shard-1"], std::string("a"));
    QCOMPARE(hostOf["worker-0"], std::string("b"));
    std::map<std::string, double> iterations;
    (void)transferPerIteration(db, runId, &iterations);
    QVERIFY2(iterations["worker-0"] > 5 && iterations["worker-1"] > 5,
             qPrintable(QString("iterations %1 / %2").arg(iterations["worker-0"]).arg(iterations["worker-1"])));
  }
};

QTEST_GUILESS_MAIN(TestNetns)
#include "tst_netns.moc"
