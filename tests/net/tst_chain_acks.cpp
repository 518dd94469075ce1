// SPDX-License-Identifier: MIT
// Chain replication counted against acknowledgements, end to end: `dasp run` with four
// ASP workers pushing concurrently while the runner's drills SIGKILL the chain's head
// mid-stream, 10 times over 3 seeds, every node writing an update record (`--record`).
// Per kill, no acknowledged update is lost (the runner's figure, counted against the
// highest version any worker was told). Per run, the history the promoted heads hold is
// rebuilt from the records (each restarted replica's catch-up state traced to the replica
// it came from) and replayed with ParameterStore: it equals the final head's parameters
// byte for byte; every acknowledged push is in it (at or below the version it was
// acknowledged under), and nothing else is, except pushes whose answer died with a head.
// A restarted replica rejoins at the tail and catches up; the runner re-links the chain
// around a dead middle replica.
#include "core/params/parameter_store.h"
#include "core/params/update_record.h"
#include "core/store/run_store.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace dasp;
using RE = dasp::v1::RunEvent;

namespace {

constexpr int kWorkers = 4;
constexpr double kMomentum = 0.9;
constexpr double kWeightDecay = 1e-4;

// One node start's update record: DIR/NODE.N.record.
struct Log {
  std::string node;  // server-1, worker-3
  int start = 0;
  std::vector<UpdateRecord> records;
  std::string name() const { return node + "." + std::to_string(start); }
};

std::string bytesOf(const float* v, std::size_t n) { return std::string(reinterpret_cast<const char*>(v), n * sizeof(float)); }

// A short chain run of four ASP workers; `faults` are its drills.
QString writeSpec(const QTemporaryDir& dir, const QString& name, std::uint64_t seed, double seconds,
                  const QJsonArray& faults) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.workers = kWorkers;
  base.maxSeconds = seconds;
  QJsonObject spec = base.json();
  spec["seed"] = static_cast<qint64>(seed);
  spec["optimizer"] = QJsonObject{{"lr", 0.05}, {"momentum", kMomentum}, {"weight_decay", kWeightDecay}};
  spec["recovery"] = QJsonObject{{"mode", "CHAIN"}, {"replicas", 3}, {"forward_every", 1}};
  spec["faults"] = faults;
  return test_support::writeSpecFile(dir.path(), name, spec);
}

QJsonObject kill(const QString& node, double atS, std::optional<double> restartAfterS) {
  QJsonObject f{{"node", node}, {"action", "KILL"}, {"at_s", atS}};
  if (restartAfterS) f["restart_after_s"] = *restartAfterS;
  return f;
}

struct Run {
  QJsonObject json;
  std::vector<Log> servers, workers;
  QString why;  // for failure messages
};

// `dasp run SPEC --record DIR` and its records (empty json on failure; `why` says).
Run runWithRecords(const QString& spec, const QTemporaryDir& dir, const QString& tag) {
  Run r;
  const QString records = dir.filePath("records-" + tag);
  const QString db = dir.filePath(tag + ".sqlite");
  const auto done = test_support::runDasp({"run", spec, "--db", db, "--json", "--quiet", "--record", records}, 120000);
  const auto lines = done.out.trimmed().split('\n');
  r.json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  r.why = QStringLiteral("exit %1; stderr: %2; stdout: %3").arg(done.exitCode).arg(done.err.right(1500), lines.last().right(3000));
  if (done.exitCode != 0 || r.json.isEmpty()) {
    r.json = {};
    return r;
  }
  const QDir runDir(records + "/run-" + QString::number(r.json["run_id"].toInteger()));
  for (const auto& file : runDir.entryList({"*.record"}, QDir::Files, QDir::Name)) {
    const auto parts = file.split('.');
    Log log;
    log.node = parts[0].toStdString();
    log.start = parts[1].toInt();
    auto read = readUpdateRecords(runDir.filePath(file).toStdString());
    if (!read) {
      r.why = QString::fromStdString(read.message());
      r.json = {};
      return r;
    }
    log.records = std::move(read).value();
    (log.node.rfind("server", 0) == 0 ? r.servers : r.workers).push_back(std::move(log));
  }
  return r;
}

// A server's state while its record is replayed.
struct State {
  std::int64_t version = 0;
  std::vector<float> params, momentum;
  bool equals(const UpdateRecord& r) const {
    const std::size_t n = params.size();
    return r.version == version && r.values.size() == 2 * n && std::memcmp(r.values.data(), params.data(), n * 4) == 0 &&
           std::memcmp(r.values.data() + n, momentum.data(), n * 4) == 0;
  }
};

// Replays a record with ParameterStore's arithmetic, calling `at(index, state)` after
// every record that sets the state; false (with `why`) when the record contradicts itself:
// a gap in the versions, or a Final that is not the replayed state.
template <typename At>
bool replay(const Log& log, std::size_t n, QString& why, At&& at) {
  std::unique_ptr<ParameterStore> store;
  for (std::size_t i = 0; i < log.records.size(); ++i) {
    const auto& r = log.records[i];
    const auto state = [&] {
      State s;
      s.version = store->version();
      s.params.assign(store->parameters(), store->parameters() + n);
      s.momentum = store->momentumBuffer();
      return s;
    };
    switch (r.kind) {
      case UpdateRecordKind::Initial:
      case UpdateRecordKind::State:
        if (r.values.size() != 2 * n) return (why = QString::fromStdString(log.name()) + ": a state of the wrong size"), false;
        if (!store) store = std::make_unique<ParameterStore>(std::vector<float>(n), kMomentum, kWeightDecay);
        store->restore(r.values.data(), r.values.data() + n, r.version);
        break;
      case UpdateRecordKind::Update: {
        if (!store || r.version != store->version() + 1 || r.values.size() != n) {
          why = QStringLiteral("%1: update %2 does not follow version %3")
                    .arg(QString::fromStdString(log.name()))
                    .arg(r.version)
                    .arg(store ? store->version() : -1);
          return false;
        }
        const float* g = r.values.data();
        const double one = 1.0;
        store->apply(&g, &one, 1, r.lr);
        break;
      }
      case UpdateRecordKind::Final:
        if (!store || !state().equals(r)) {
          why = QString::fromStdString(log.name()) + ": its final state is not the replay of its record";
          return false;
        }
        continue;
      default:
        return (why = QString::fromStdString(log.name()) + ": not a server's record"), false;
    }
    at(i, state());
  }
  return true;
}

// The updates (version order, from 1) that made the state `log` holds after its record
// `end`: its own since its last state, and before that those of the log whose replay
// passed through that state (a replica's catch-up came from its predecessor).
bool historyTo(const std::vector<Log>& logs, const Log& log, std::size_t end, std::size_t n,
               std::vector<const UpdateRecord*>& out, const UpdateRecord*& root, QString& why, int depth = 0) {
  std::size_t s = end;
  while (log.records[s].kind == UpdateRecordKind::Update) --s;  // the first record is a state
  const UpdateRecord& from = log.records[s];
  std::vector<const UpdateRecord*> own;
  for (std::size_t i = s + 1; i <= end; ++i) own.push_back(&log.records[i]);
  if (from.kind == UpdateRecordKind::Initial && from.version == 0) {
    root = &from;
  } else {
    const Log* source = nullptr;
    std::size_t at = 0;
    for (const auto& other : logs) {
      if (&other == &log || source != nullptr) continue;
      QString ignored;
      replay(other, n, ignored, [&](std::size_t i, const State& st) {
        // Where the state was made (an update, or the start), not where it was taken over.
        const auto kind = other.records[i].kind;
        if (source == nullptr && (kind == UpdateRecordKind::Update || kind == UpdateRecordKind::Initial) &&
            st.equals(from)) {
          source = &other;
          at = i;
        }
      });
    }
    if (source == nullptr || depth > 16) {
      why = QStringLiteral("%1: no replica held the state of version %2 it took over")
                .arg(QString::fromStdString(log.name()))
                .arg(from.version);
      return false;
    }
    if (!historyTo(logs, *source, at, n, out, root, why, depth + 1)) return false;
  }
  out.insert(out.end(), own.begin(), own.end());
  return true;
}

// FNV-1a of a state's bytes (parameters, momentum).
std::uint64_t hashOf(const float* p, const float* m, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (const float* a : {p, m}) {
    const auto* b = reinterpret_cast<const unsigned char*>(a);
    for (std::size_t i = 0; i < n * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  return h;
}

struct Audit {
  int acked = 0;           // acknowledged pushes, all in the history
  int answerLost = 0;      // history updates whose push was not acknowledged (killed head, stop)
  std::int64_t finalVersion = 0;
  std::int64_t highestAck = -1;
  std::map<std::int64_t, std::uint64_t> stateHash;  // version -> hash of the history's state
};

// The checks of one run's records (see the file comment); QVERIFY failures inside.
void audit(const Run& run, std::size_t n, const std::string& finalHead, Audit& a) {
  const Log* head = nullptr;
  for (const auto& l : run.servers) {
    if (l.node == finalHead && (head == nullptr || l.start > head->start)) head = &l;
  }
  QVERIFY2(head != nullptr && !head->records.empty(), finalHead.c_str());
  QVERIFY2(head->records.back().kind == UpdateRecordKind::Final, "the final head's record has no final state");
  QString why;
  for (const auto& l : run.servers) QVERIFY2(replay(l, n, why, [](std::size_t, const State&) {}), qPrintable(why));

  std::vector<const UpdateRecord*> history;
  const UpdateRecord* root = nullptr;
  QVERIFY2(historyTo(run.servers, *head, head->records.size() - 2, n, history, root, why), qPrintable(why));
  QVERIFY(root != nullptr);
  // The replay of the history from the initial parameters is, bitwise, the final head's.
  ParameterStore store(std::vector<float>(root->values.begin(), root->values.begin() + static_cast<long>(n)), kMomentum,
                       kWeightDecay);
  a.stateHash[0] = hashOf(store.parameters(), store.momentumBuffer().data(), n);
  std::map<std::string, std::int64_t> versionOf;  // history gradient bytes -> version
  for (const UpdateRecord* u : history) {
    QCOMPARE(u->version, store.version() + 1);
    const float* g = u->values.data();
    const double one = 1.0;
    store.apply(&g, &one, 1, u->lr);
    a.stateHash[store.version()] = hashOf(store.parameters(), store.momentumBuffer().data(), n);
    versionOf.emplace(bytesOf(u->values.data(), n), u->version);
  }
  const UpdateRecord& last = head->records.back();
  a.finalVersion = last.version;
  QCOMPARE(store.version(), last.version);
  QVERIFY2(std::memcmp(store.parameters(), last.values.data(), n * 4) == 0,
           "the replayed history's parameters differ from the final head's");
  QVERIFY2(std::memcmp(store.momentumBuffer().data(), last.values.data() + n, n * 4) == 0,
           "the replayed history's momentum differs from the final head's");

  // Every acknowledged push is in the history, at or below the version it was acknowledged
  // under; every update of the history is a push of a worker's.
  std::set<std::string> pushed;
  for (const auto& w : run.workers) {
    for (const auto& r : w.records) {
      const auto bytes = bytesOf(r.values.data(), r.values.size());
      pushed.insert(bytes);
      if (r.kind != UpdateRecordKind::Acked) continue;
      ++a.acked;
      a.highestAck = std::max(a.highestAck, r.version);
      const auto it = versionOf.find(bytes);
      QVERIFY2(it != versionOf.end(), qPrintable(QStringLiteral("%1: a push acknowledged under version %2 is lost")
                                                      .arg(QString::fromStdString(w.name()))
                                                      .arg(r.version)));
      QVERIFY2(it->second <= r.version, qPrintable(QStringLiteral("acknowledged under %1 but applied as %2")
                                                       .arg(r.version)
                                                       .arg(it->second)));
    }
  }
  std::set<std::string> acked;
  for (const auto& w : run.workers) {
    for (const auto& r : w.records) {
      if (r.kind == UpdateRecordKind::Acked) acked.insert(bytesOf(r.values.data(), r.values.size()));
    }
  }
  for (const auto& [bytes, version] : versionOf) {
    QVERIFY2(pushed.count(bytes) > 0, qPrintable(QStringLiteral("update %1 is no worker's push").arg(version)));
    if (acked.count(bytes) == 0) ++a.answerLost;
  }
}

// Every server alive at the end (a record ending in a final state) holds what the history
// holds at its version, and at least every acknowledged version.
void verifyReplicasHoldTheHistory(const Run& run, std::size_t n, const Audit& a) {
  int finals = 0;
  for (const auto& l : run.servers) {
    if (l.records.empty() || l.records.back().kind != UpdateRecordKind::Final) continue;
    ++finals;
    const auto& f = l.records.back();
    QVERIFY2(f.version >= a.highestAck, qPrintable(QStringLiteral("%1 ends at %2 below the acknowledged %3")
                                                       .arg(QString::fromStdString(l.name()))
                                                       .arg(f.version)
                                                       .arg(a.highestAck)));
    const auto it = a.stateHash.find(f.version);
    QVERIFY2(it != a.stateHash.end() && it->second == hashOf(f.values.data(), f.values.data() + n, n),
             qPrintable(QString::fromStdString(l.name()) + " holds a state the history never had"));
  }
  QCOMPARE(finals, 3);  // every replica was in the chain at the end
}

std::vector<EventRow> eventsOf(const QString& db, std::int64_t runId) {
  auto store = RunStore::open(db.toStdString());
  if (!store) return {};
  auto events = store.value()->events(runId);
  return events ? events.value() : std::vector<EventRow>();
}

}  // namespace

class TestChainAcks : public QObject {
  Q_OBJECT

 private slots:
  void headKillsLoseNoAcknowledgedUpdate_data();
  void headKillsLoseNoAcknowledgedUpdate();
  void middleReplicaDeathRelinksTheChain();

 private:
  QTemporaryDir m_dir;
};

void TestChainAcks::headKillsLoseNoAcknowledgedUpdate_data() {
  QTest::addColumn<quint64>("seed");
  QTest::addColumn<QList<double>>("killsAt");
  // 4 + 3 + 3 = 10 head kills; each killed head restarts 0.5 s later and rejoins at the tail.
  // A restarted process takes about 0.9 s to listen while the run loads the machine (the
  // runner's loop goes on meanwhile), and seconds when the other tests of a full suite load
  // it too (a seed's last restart was still starting 2.5 s after its kill), so the run
  // lasts 4 s past the last kill: every restart is complete before it ends.
  QTest::newRow("seed 1") << quint64{1} << QList<double>{1.0, 2.2, 3.4, 4.6};
  QTest::newRow("seed 2") << quint64{2} << QList<double>{1.0, 2.1, 3.2};
  QTest::newRow("seed 3") << quint64{3} << QList<double>{1.3, 2.4, 3.5};
}

void TestChainAcks::headKillsLoseNoAcknowledgedUpdate() {
  QFETCH(quint64, seed);
  QFETCH(QList<double>, killsAt);
  // Under a sanitizer a restart takes longer: the schedule stretches with it.
  const double scale = test_support::kProcessTimeScale;
  for (double& t : killsAt) t *= scale;
  QJsonArray faults;
  for (double t : killsAt) faults.append(kill("server", t, 0.5 * scale));
  const QString tag = QStringLiteral("heads-%1").arg(seed);
  const auto run = runWithRecords(writeSpec(m_dir, tag, seed, killsAt.back() + 4.0 * scale, faults), m_dir, tag);
  QVERIFY2(!run.json.isEmpty(), qPrintable(run.why));
  QCOMPARE(run.json["status"].toString(), QStringLiteral("completed"));
  const auto fs = run.json["faults"].toArray();
  QCOMPARE(fs.size(), killsAt.size());
  std::string lastHead;
  for (const auto& v : fs) {
    const auto f = v.toObject();
    const QString why = QJsonDocument(f).toJson(QJsonDocument::Compact);
    QVERIFY2(f["node"].toString().startsWith("server-"), qPrintable(why));
    QVERIFY2(f["acked_before"].isDouble() && f["version_after"].isDouble(), qPrintable(why));
    // The kill hit a training run, and the promoted replica holds every acknowledged version.
    QVERIFY2(f["acked_before"].toInteger() > 20, qPrintable(why));
    QVERIFY2(f["version_after"].toInteger() >= f["acked_before"].toInteger(), qPrintable(why));
    QCOMPARE(f["updates_lost"].toInteger(), qint64{0});
  }
  // The final head: the one promoted at the last kill.
  const auto events = eventsOf(m_dir.filePath(tag + ".sqlite"), run.json["run_id"].toInteger());
  int rejoined = 0;
  for (const auto& e : events) {
    if (e.kind == RE::RECOVERY && e.code == RE::PROMOTED) lastHead = e.target;
    if (e.kind == RE::FAULT && e.code == RE::RESTARTED &&
        e.detail.find("rejoins the chain at the tail") != std::string::npos) {
      ++rejoined;
    }
  }
  QCOMPARE(rejoined, static_cast<int>(killsAt.size()));
  QVERIFY2(!lastHead.empty(), "no promotion recorded");
  const std::size_t n = run.servers.empty() || run.servers.front().records.empty()
                            ? 0
                            : run.servers.front().records.front().values.size() / 2;
  QVERIFY(n > 0);
  QCOMPARE(static_cast<int>(run.workers.size()), kWorkers);
  Audit a;
  audit(run, n, lastHead, a);
  if (QTest::currentTestFailed()) return;
  QVERIFY2(a.acked > 100, qPrintable(QString::number(a.acked)));
  // Each restarted replica caught up: its record holds a state taken over from the chain.
  for (const auto& l : run.servers) {
    if (l.start == 0) continue;
    const bool caughtUp = std::any_of(l.records.begin(), l.records.end(),
                                      [](const UpdateRecord& r) { return r.kind == UpdateRecordKind::State; });
    QVERIFY2(caughtUp, qPrintable(QString::fromStdString(l.name()) + " never caught up"));
  }
  verifyReplicasHoldTheHistory(run, n, a);
  qInfo("seed %llu: %d kills, final version %lld, %d acknowledged pushes replayed, %d applied pushes never "
        "acknowledged (the answer died with a head, or was the stop)",
        static_cast<unsigned long long>(seed), static_cast<int>(killsAt.size()), static_cast<long long>(a.finalVersion),
        a.acked, a.answerLost);
}

void TestChainAcks::middleReplicaDeathRelinksTheChain() {
  const QString tag = QStringLiteral("middle");
  const auto run = runWithRecords(writeSpec(m_dir, tag, 4, 4.0, QJsonArray{kill("server-1", 1.5, std::nullopt)}), m_dir, tag);
  QVERIFY2(!run.json.isEmpty(), qPrintable(run.why));
  QCOMPARE(run.json["status"].toString(), QStringLiteral("completed"));
  const auto events = eventsOf(m_dir.filePath(tag + ".sqlite"), run.json["run_id"].toInteger());
  const bool relinked = std::any_of(events.begin(), events.end(), [](const EventRow& e) {
    return e.kind == RE::RECOVERY && e.code == RE::LEFT_CHAIN && e.node == "server-1" &&
           e.detail.find("server-0 forwards to") != std::string::npos;
  });
  QVERIFY2(relinked, "the runner did not re-link server-0 to server-2");
  const std::size_t n = run.servers.front().records.front().values.size() / 2;
  Audit a;
  audit(run, n, "server-0", a);
  if (QTest::currentTestFailed()) return;
  // The tail caught up from its new predecessor and holds every acknowledged update.
  const auto tail = std::find_if(run.servers.begin(), run.servers.end(), [](const Log& l) { return l.node == "server-2"; });
  QVERIFY(tail != run.servers.end());
  QVERIFY(std::any_of(tail->records.begin(), tail->records.end(),
                      [](const UpdateRecord& r) { return r.kind == UpdateRecordKind::State; }));
  QVERIFY2(tail->records.back().kind == UpdateRecordKind::Final, "server-2 did not end cleanly");
  QVERIFY(tail->records.back().version >= a.highestAck);
  const auto it = a.stateHash.find(tail->records.back().version);
  QVERIFY(it != a.stateHash.end() && it->second == hashOf(tail->records.back().values.data(),
                                                         tail->records.back().values.data() + n, n));
  // Training went on well past the relink.
  QVERIFY2(a.highestAck > 200, qPrintable(QString::number(a.highestAck)));
}

QTEST_GUILESS_MAIN(TestChainAcks)
#include "tst_chain_acks.moc"
