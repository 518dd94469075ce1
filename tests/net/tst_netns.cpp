// SPDX-License-Identifier: MIT
// Multi-host run with emulated links: the test builds three network namespaces joined by
// veth pairs on a bridge — the server's host (server and evaluator) and two worker hosts —
// plus a veth from the test's own namespace (where the runner runs) to the bridge, limits
// one worker host's link with `tc tbf` (both directions), and runs an experiment through
// `dasp run` with the nodes placed on those "hosts" (launcher LOCAL with netns). Latency
// comes from netem where `tc ... netem` works, else from the spec's link model in the
// sender (this machine's kernel has no netem); the test prints which.
//
// It checks that the run completes and that the slow link shows in the store: the slow
// worker's pull and push intervals are many times the fast worker's.
// Needs root, iproute2 and the kernel's netns/veth/bridge/tbf support; skips saying which
// is missing.

#include "core/store/run_store.h"
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
Ran ip(const QStringList& args) { return run(QStringLiteral("ip"), args); }

}  // namespace

class TestNetns : public QObject {
  Q_OBJECT

  // Names unique to this process, short enough for interface names (15 chars).
  QString m_tag = QString::number(::getpid() % 100000);
  QString ns(const char* which) const { return QStringLiteral("dasp%1%2").arg(m_tag, which); }
  QString dev(const char* which) const { return QStringLiteral("d%1%2").arg(m_tag, which); }
  QStringList m_created;
  bool m_netem = false;
  QString m_skip;

  bool step(const QStringList& args) {
    const auto r = ip(args);
    if (r.exitCode != 0) {
      m_skip = QStringLiteral("ip %1: %2").arg(args.join(' '), r.err.trimmed());
      return false;
    }
    return true;
  }
  bool in(const QString& nspace, const QStringList& args) {
    return step(QStringList{QStringLiteral("-n"), nspace} + args);
  }
  // tc in a namespace; false (with the reason kept) when the kernel refuses.
  bool tc(const QString& nspace, const QStringList& args, QString* why) {
    const auto r = run(QStringLiteral("ip"), QStringList{"netns", "exec", nspace, "tc"} + args);
    if (r.exitCode != 0 && why) *why = QStringLiteral("tc %1: %2").arg(args.join(' '), r.err.trimmed());
    return r.exitCode == 0;
  }

  bool buildTopology() {
    if (::geteuid() != 0) {
      m_skip = QStringLiteral("needs root to create network namespaces");
      return false;
    }
    if (QStandardPaths::findExecutable(QStringLiteral("ip")).isEmpty() ||
        QStandardPaths::findExecutable(QStringLiteral("tc")).isEmpty()) {
      m_skip = QStringLiteral("needs iproute2 (ip, tc)");
      return false;
    }
    for (const char* n : {"s", "a", "b"}) {
      if (!step({"netns", "add", ns(n)})) return false;
      m_created << ns(n);
      if (!in(ns(n), {"link", "set", "lo", "up"})) return false;
    }
    const QString s = ns("s");
    if (!in(s, {"link", "add", "br0", "type", "bridge"})) return false;
    if (!in(s, {"addr", "add", "10.231.0.1/24", "dev", "br0"})) return false;
    if (!in(s, {"link", "set", "br0", "up"})) return false;
    // Worker hosts a (.11) and b (.12): one veth each, the server end on the bridge.
    std::map<std::string, QString> address{{"a", "10.231.0.11/24"}, {"b", "10.231.0.12/24"}};
    for (const char* h : {"a", "b"}) {
      const QString host = ns(h), mine = dev(h), peer = dev(h) + "p";
      if (!step({"link", "add", mine, "netns", host, "type", "veth", "peer", "name", peer, "netns", s})) return false;
      if (!in(host, {"addr", "add", address[h], "dev", mine})) return false;
      if (!in(host, {"link", "set", mine, "up"})) return false;
      if (!in(s, {"link", "set", peer, "master", "br0"})) return false;
      if (!in(s, {"link", "set", peer, "up"})) return false;
    }
    // The runner's own way in: a veth from this namespace to the bridge.
    const QString r = dev("r"), rp = dev("r") + "p";
    if (!step({"link", "add", r, "type", "veth", "peer", "name", rp, "netns", s})) return false;
    m_created << QStringLiteral("link:") + r;
    if (!step({"addr", "add", "10.231.0.254/24", "dev", r})) return false;
    if (!step({"link", "set", r, "up"})) return false;
    if (!in(s, {"link", "set", rp, "master", "br0"})) return false;
    if (!in(s, {"link", "set", rp, "up"})) return false;

    // Host b's link: 8 Mbit/s each way (pushes leave b, pulls leave the bridge port to b).
    QString why;
    m_netem = tc(ns("b"), {"qdisc", "add", "dev", dev("b"), "root", "netem", "delay", "5ms", "rate", "8mbit"}, &why) &&
              tc(s, {"qdisc", "add", "dev", dev("b") + "p", "root", "netem", "delay", "5ms", "rate", "8mbit"}, &why);
    if (!m_netem) {
      tc(ns("b"), {"qdisc", "del", "dev", dev("b"), "root"}, nullptr);
      if (!tc(ns("b"), {"qdisc", "add", "dev", dev("b"), "root", "tbf", "rate", "8mbit", "burst", "16kb", "latency", "400ms"},
              &why) ||
          !tc(s, {"qdisc", "add", "dev", dev("b") + "p", "root", "tbf", "rate", "8mbit", "burst", "16kb", "latency", "400ms"},
              &why)) {
        m_skip = QStringLiteral("the kernel has neither netem nor tbf: ") + why;
        return false;
      }
    }
    qInfo("link of host b: %s", m_netem ? "netem delay 5ms rate 8mbit (both directions)"
                                        : "tc tbf rate 8mbit (both directions); latency 5 ms from the spec's link "
                                          "model in the sender (no netem in this kernel)");
    return true;
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

  void cleanupTestCase() {
    for (const QString& c : m_created) {
      if (c.startsWith("link:")) ip({"link", "del", c.mid(5)});
      else ip({"netns", "del", c});
    }
  }

  void slowLinkShowsInTheStore() {
    if (!buildTopology()) QSKIP(qPrintable(m_skip));
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    QJsonObject spec = twoWorkerSpec();
    QJsonObject launch;
    launch["launcher"] = "LOCAL";
    launch["hosts"] = QJsonArray{
        QJsonObject{{"name", "s"}, {"address", "10.231.0.1"}, {"netns", ns("s")}},
        QJsonObject{{"name", "a"}, {"address", "10.231.0.11"}, {"netns", ns("a")}},
        QJsonObject{{"name", "b"}, {"address", "10.231.0.12"}, {"netns", ns("b")}}};
    launch["placement"] = QJsonObject{{"servers", QJsonArray{"s"}}, {"evaluator", "s"}, {"workers", QJsonArray{"a", "b"}}};
    spec["launch"] = launch;
    if (!m_netem) {
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
};

QTEST_GUILESS_MAIN(TestNetns)
#include "tst_netns.moc"
