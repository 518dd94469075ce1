// SPDX-License-Identifier: MIT
// Parameter-server fault tolerance at the protocol level, with real `dasp server`
// processes that the test SIGKILLs: a restarted checkpointing server restores bitwise the
// parameters of its last (valid) checkpoint, also when the latest file is corrupt or the
// disk fills up; a chain with per-update forwarding loses no acknowledged update when its
// head dies or its tail cannot be reached; a stateless server applies a worker's whole
// backlog (within the worker's bound, the rest reported as dropped) on the parameters the
// worker held.
#include "core/params/checkpoint.h"
#include "net/client/nodes.h"
#include "net/launch/process.h"
#include "net/client/ps_client.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

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

using namespace dasp;
using namespace dasp::net;

namespace {

// logreg on 32-dimensional synthetic data with 10 classes: (32 + 1) × 10 parameters.
constexpr std::int64_t kParameters = 330;

// One ASP worker slot (the test pushes its gradients by hand) and `recovery` (JSON).
QString writeSpec(const QTemporaryDir& dir, const QString& name, const QString& recovery) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.workers = 1;
  base.trainCount = 512;
  base.testCount = 128;
  base.batchSize = 16;
  base.maxSeconds = 600;
  base.barrierTimeoutS = 5;
  QJsonObject spec = base.json();
  spec.remove("evaluation");
  spec["optimizer"] = QJsonObject{{"lr", 0.05}, {"momentum", 0.9}};
  spec["recovery"] = QJsonDocument::fromJson(recovery.toUtf8()).object();
  return test_support::writeSpecFile(dir.path(), name, spec);
}

// The test's gradient number k: deterministic, different for every k.
std::vector<float> gradientNumber(int k) {
  std::vector<float> g(kParameters);
  for (std::int64_t i = 0; i < kParameters; ++i) g[static_cast<std::size_t>(i)] = 0.01f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(k));
  return g;
}

// `dasp server` processes of one test, their output drained (and kept) by one pump.
class Servers {
 public:
  Servers()
      : m_pump([this](const std::string& node, bool, const std::string& line) {
          static const std::regex listening(R"(^dasp-server listening ([^ ]+) parameters=(\d+))");
          std::smatch m;
          std::lock_guard<std::mutex> lock(m_mu);
          m_log[node] += line + "\n";
          if (std::regex_search(line, m, listening)) {
            m_address[node] = m[1].str();
            m_cv.notify_all();
          }
        }) {}
  ~Servers() {
    for (auto& [name, child] : m_children) {
      child->signal(SIGCONT);
      child->signal(SIGKILL);
      child->waitFor(5.0);
    }
  }
  // Starts a server and waits for its listening line; returns its address ("" on failure).
  std::string start(const std::string& name, const QString& spec, const std::vector<std::string>& extra,
                    const std::string& port = "0") {
    std::vector<std::string> argv{test_support::daspBinary().toStdString(), "server", "--spec", spec.toStdString(), "--workers", "1",
                                  "--bind", "127.0.0.1", "--port", port, "--name", name};
    argv.insert(argv.end(), extra.begin(), extra.end());
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_address.erase(name);
    }
    auto child = ChildProcess::spawn(name, argv);
    if (!child) return {};
    m_pump.add(name, child.value()->stdoutFd(), false);
    m_pump.add(name, child.value()->stderrFd(), true);
    m_children[name] = std::move(child).value();
    std::unique_lock<std::mutex> lock(m_mu);
    m_cv.wait_for(lock, std::chrono::seconds(30), [&] { return m_address.count(name) > 0; });
    return m_address.count(name) ? m_address[name] : std::string();
  }
  void kill(const std::string& name) {
    m_children[name]->signal(SIGKILL);
    m_children[name]->waitFor(10.0);
  }
  std::string log(const std::string& name) {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_log[name];
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::map<std::string, std::string> m_address;
  std::map<std::string, std::string> m_log;
  std::map<std::string, std::unique_ptr<ChildProcess>> m_children;
  OutputPump m_pump;
};

// The events of one server's Watch stream, collected on a thread.
class EventLog {
 public:
  explicit EventLog(const std::string& address) : m_client(address, kParameters) {
    setDeadline(m_context, 120);
    m_reader = m_client.watch(m_context);
    m_thread = std::thread([this] {
      pb::EventBatch batch;
      while (m_reader->Read(&batch)) {
        std::lock_guard<std::mutex> lock(m_mu);
        for (const auto& e : batch.events()) m_events.push_back(e);
        m_cv.notify_all();
      }
      (void)m_reader->Finish();
    });
  }
  ~EventLog() {
    m_context.TryCancel();
    m_thread.join();
  }
  // Waits (at most `seconds`) for a RECOVERY event of kind `what` that satisfies `match`.
  std::optional<pb::ClusterEvent> waitRecovery(const std::string& what,
                                               const std::function<bool(const pb::ClusterEvent&)>& match,
                                               double seconds = 20) {
    std::unique_lock<std::mutex> lock(m_mu);
    std::optional<pb::ClusterEvent> found;
    m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
      for (const auto& e : m_events) {
        if (e.kind() == pb::ClusterEvent::RECOVERY && e.decision() == what && match(e)) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  // Versions of the RECOVERY events of kind `what` so far, in order.
  std::vector<std::int64_t> versionsOf(const std::string& what) {
    std::lock_guard<std::mutex> lock(m_mu);
    std::vector<std::int64_t> out;
    for (const auto& e : m_events) {
      if (e.kind() == pb::ClusterEvent::RECOVERY && e.decision() == what) out.push_back(e.version());
    }
    return out;
  }

 private:
  PsClient m_client;
  grpc::ClientContext m_context;
  std::unique_ptr<grpc::ClientReader<pb::EventBatch>> m_reader;
  std::thread m_thread;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<pb::ClusterEvent> m_events;
};

bool joinAsWorker(PsClient& client) {
  pb::JoinRequest req;
  req.set_role("worker");
  req.set_name("worker-0");
  req.set_model("logreg");
  req.set_parameter_count(kParameters);
  req.set_requested_rank(0);
  pb::JoinReply reply;
  return client.join(req, reply, 10).ok();
}

// Parameters and version as an evaluator sees them (no rank, no policy).
std::pair<std::int64_t, std::vector<float>> readParameters(const std::string& address) {
  PsClient client(address, kParameters);
  pb::PullRequest req;
  req.set_rank(-1);
  req.set_min_version(0);
  pb::PullReply reply;
  const float* params = nullptr;
  if (!client.pullParameters(req, reply, params, 10).ok() || params == nullptr) return {-1, {}};
  return {reply.version(), std::vector<float>(params, params + kParameters)};
}

// Pushes gradient k and returns the version and parameters of the reply (the ack).
std::pair<std::int64_t, std::vector<float>> pushNumber(PsClient& client, int k, std::int64_t base, double timeoutS = 10) {
  pb::PushRequest req;
  req.set_rank(0);
  req.set_base_version(base);
  req.set_batch_size(16);
  const auto g = gradientNumber(k);
  pb::PullReply reply;
  const float* params = nullptr;
  auto st = client.pushPull(req, g.data(), reply, params, timeoutS);
  if (!st.ok() || params == nullptr) return {-1, {}};
  return {reply.version(), std::vector<float>(params, params + kParameters)};
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string portOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// A gradient source for an in-process worker: a fixed gradient (so a backlog is a known
// multiple of it), counting its calls and letting the test wait for a number of them.
class CountingSource final : public GradientSource {
 public:
  std::int64_t parameterCount() const override { return kParameters; }
  int batchSize() const override { return 16; }
  Result<double> computeGradient(const float*, float* gradient) override {
    const auto g = gradientNumber(7);
    std::copy(g.begin(), g.end(), gradient);
    std::lock_guard<std::mutex> lock(m_mu);
    ++m_calls;
    m_cv.notify_all();
    return 1.0;
  }
  std::int64_t calls() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_calls;
  }
  bool waitCalls(std::int64_t n, double seconds) {
    std::unique_lock<std::mutex> lock(m_mu);
    return m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return m_calls >= n; });
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::int64_t m_calls = 0;
};

}  // namespace

class TestFaultTolerance : public QObject {
  Q_OBJECT

 private slots:
  // The servers this test starts and the clients it makes share one run token.
  void initTestCase() { qputenv("DASP_RUN_TOKEN", "fault-tolerance-test-token"); }
  void checkpointRestoresBitwise();
  void corruptLatestCheckpointFallsBack();
  void fullDiskDuringCheckpoint();
  void chainLosesNoAcknowledgedUpdate();
  void unreachableReplicaLosesNoAcknowledgedUpdate();
  void statelessAppliesTheBoundedBacklog();

 private:
  QTemporaryDir m_dir;
};

void TestFaultTolerance::checkpointRestoresBitwise() {
  const auto spec = writeSpec(m_dir, "ckpt", R"({"mode": "CHECKPOINT", "checkpoint_every_updates": 5})");
  const auto dir = m_dir.filePath("ckpt-files").toStdString();
  Servers servers;
  const auto address = servers.start("server", spec, {"--checkpoint-dir", dir});
  QVERIFY(!address.empty());
  std::map<std::int64_t, std::vector<float>> byVersion;  // what the server acknowledged
  std::int64_t latest = 0;
  {
    EventLog events(address);
    PsClient client(address, kParameters);
    QVERIFY(joinAsWorker(client));
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
  PsClient client(again, kParameters);
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
    PsClient client(head, kParameters);
    QVERIFY(joinAsWorker(client));
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
  PsClient client(middle, kParameters);
  QVERIFY(joinAsWorker(client));
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

void TestFaultTolerance::statelessAppliesTheBoundedBacklog() {
  constexpr int kBound = 4;
  const auto spec = writeSpec(m_dir, "stateless",
                              QStringLiteral(R"({"mode": "STATELESS", "backlog_max_gradients": %1, "backlog_rule": "SUM",
                                                 "reconnect_timeout_s": 60})")
                                  .arg(kBound));
  Servers servers;
  const auto address = servers.start("server", spec, {});
  QVERIFY(!address.empty());
  CountingSource source;
  std::atomic<bool> cancel{false};
  std::mutex logMu;
  std::vector<std::string> lines;
  WorkerOptions options;
  options.server = address;
  options.servers = {address};
  options.name = "worker-0";
  options.requestedRank = 0;
  options.model = "logreg";
  options.parameters = kParameters;
  options.cancel = &cancel;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(logMu);
    lines.push_back(line);
  };
  auto join = joinServer(options, "worker");
  QVERIFY2(join.isOk(), join.message().c_str());
  std::thread worker([&] { (void)runWorker(options, join.value(), source); });
  struct Stop {
    std::atomic<bool>& cancel;
    std::thread& worker;
    ~Stop() {
      cancel = true;
      if (worker.joinable()) worker.join();
    }
  } stopWorker{cancel, worker};

  // Let it train, then kill the server and let the worker compute more than its bound.
  QVERIFY(source.waitCalls(20, 20));
  servers.kill("server");
  const auto atKill = source.calls();
  QVERIFY(source.waitCalls(atKill + kBound + 3, 20));
  const auto restarted = servers.start("server", spec, {"--adopt", "--resume-at", "2"}, portOf(address));
  QCOMPARE(restarted, address);
  EventLog events(restarted);
  auto adopted = events.waitRecovery("adopted", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(adopted);
  QVERIFY(adopted->version() >= 19);
  auto backlog = events.waitRecovery("backlog", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(backlog);
  // Exactly the bound is applied, in one step on the adopted parameters; the rest is
  // reported as dropped.
  QCOMPARE(backlog->count(), std::int64_t{kBound});
  QVERIFY2(backlog->dropped() >= 3, std::to_string(backlog->dropped()).c_str());
  QCOMPARE(backlog->version(), adopted->version() + 1);
  QVERIFY(backlog->outage_s() > 0);
  cancel = true;
  worker.join();
  std::string reconnected;
  {
    std::lock_guard<std::mutex> lock(logMu);
    for (const auto& l : lines) {
      if (l.find("dasp-recovery reconnected") != std::string::npos) reconnected = l;
    }
  }
  QVERIFY2(!reconnected.empty(), "the worker did not report its reconnection");
  QVERIFY2(reconnected.find("flushed=" + std::to_string(kBound)) != std::string::npos, reconnected.c_str());
  QVERIFY2(reconnected.find("dropped=" + std::to_string(backlog->dropped())) != std::string::npos, reconnected.c_str());
}

QTEST_GUILESS_MAIN(TestFaultTolerance)
#include "tst_fault_tolerance.moc"
