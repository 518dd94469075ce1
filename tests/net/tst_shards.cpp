// SPDX-License-Identifier: MIT
// A sharded parameter server (ps.shards): shard servers in this process over real gRPC on
// 127.0.0.1, each owning one key range; shard 0 decides, the others carry out its log.
//  - The same bits: for the same scripted pushes (one order, at the same scripted times),
//    4 shards end with the parameters of 1 server bit for bit, for every strategy (and the
//    gradient guard's clipping, which needs the whole gradient's norm).
//  - No torn read: 8 workers hammering 4 shards; every pull they assemble is of one
//    version (each update moves every parameter alike, so a mix would show).
//  - A refusal by another shard (a NaN in its range) is shard 0's refusal: counted, and
//    nothing is applied anywhere.
//  - `dasp run` with ps.shards 2 runs through real processes, and the store names the shard.
#include "core/params/shard_layout.h"
#include "core/params/update_record.h"
#include "core/spec/spec.h"
#include "core/store/run_store.h"
#include "net/client/nodes.h"
#include "net/client/sharded_link.h"
#include "net/server/local_shards.h"
#include "tests/support/processes.h"
#include "tests/support/security_fixtures.h"
#include "tests/support/specs.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

namespace {

using namespace dasp;
using namespace dasp::net;
using security_fixtures::haveOpenssl;
using security_fixtures::makeLabCert;
using security_fixtures::tlsOf;
using security_fixtures::withToken;

// A flat model: 5 pages and a bit, so 4 shards hold ranges of 1, 2, 1 and 1.3 pages.
constexpr std::int64_t kFlat = 5 * kShardPage + 300;

ExperimentSpec scriptedSpec(const std::string& strategy, int workers) {
  ExperimentSpec spec;
  spec.mutable_model()->set_name("logreg");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_strategy()->set_name(strategy);
  // No decision of the ticker's within the script (its times are a few ms): every
  // decision is made by a push or a pull, at the script's time.
  spec.mutable_strategy()->set_barrier_timeout_s(1000);
  spec.mutable_strategy()->mutable_dasp()->set_kappa(1000);
  spec.mutable_cluster()->set_count(workers);
  spec.mutable_optimizer()->set_lr(0.1);
  spec.mutable_optimizer()->set_momentum(0.9);
  spec.mutable_optimizer()->set_weight_decay(1e-3);
  spec.set_batch_size(32);
  return withDefaults(spec);
}

std::vector<float> initialFlat(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(0.11f * static_cast<float>(i));
  return v;
}

// Worker w's k-th gradient: deterministic, different for every (w, k).
void gradientOf(int w, int k, std::vector<float>& g) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = 0.05f * std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(w) + 0.7f * static_cast<float>(k));
  }
}

// The S shard servers of one run in this process.
struct Shards {
  std::vector<std::unique_ptr<ParameterServer>> servers;  // [i]: shard i
  std::string address;                                    // shard 0's

  std::vector<float> parameters(std::int64_t* version = nullptr) const {
    std::vector<float> all, range;
    for (const auto& s : servers) {
      const std::int64_t v = s->snapshot(range);
      if (version != nullptr && &s == &servers.front()) *version = v;
      all.insert(all.end(), range.begin(), range.end());
    }
    return all;
  }
};

Shards startShards(const ExperimentSpec& spec, int workers, const std::vector<float>& initial, int shards,
                   std::function<double()> clock = {}, const std::string& localDir = {},
                   const NodeSecurity& security = {}) {
  ServerOptions o;
  o.localDir = localDir;
  o.security = security;
  o.spec = spec;
  o.workers = workers;
  o.modelName = "flat";
  o.initialParameters = initial;
  o.clock = std::move(clock);
  auto started = startLocalShards(o, shards);
  if (!started) qFatal("%s", started.message().c_str());
  Shards out;
  out.servers = std::move(started).value();
  out.address = "127.0.0.1:" + std::to_string(out.servers.front()->port());
  return out;
}

WorkerOptions flatWorker(const std::string& address, std::int64_t n, int rank) {
  WorkerOptions o;
  o.server = address;
  o.servers = {address};
  o.name = "worker-" + std::to_string(rank);
  o.requestedRank = rank;
  o.model = "flat";
  o.parameters = n;
  o.connectTimeoutS = 10;
  return o;
}

// Polls `done` (yielding the core to the servers' threads) for at most `seconds`.
template <typename Done>
bool within(double seconds, Done&& done) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > seconds * 1000) return false;
    std::this_thread::yield();
  }
  return true;
}

// One scripted run: each step, one worker (in the order `order`, round after round) pushes
// its next gradient with a push-pull at the script's time; the next step starts once the
// push is handled and its pull admitted, so every decision sees the same inputs whatever
// the threads do. Returns the model's parameters at the end (all shards').
std::vector<float> scriptedRun(const ExperimentSpec& spec, int workers, int shards, int rounds,
                               std::int64_t* version) {
  std::atomic<double> scripted{0.0};
  Shards cluster = startShards(spec, workers, initialFlat(kFlat), shards, [&scripted] { return scripted.load(); });
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> granted(static_cast<std::size_t>(workers), 0);  // pushes each worker may make
  std::atomic<bool> failed{false};
  std::string failure;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto fail = [&](const std::string& why) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) failure = why;
        cv.notify_all();
      };
      auto joined = joinServer(flatWorker(cluster.address, kFlat, w), "worker");
      if (!joined) return fail(joined.message());
      ServerLink& link = *joined->client;
      ps::v1::PullRequest pull;
      pull.set_rank(w);
      pull.set_min_version(-1);
      ps::v1::PullReply reply;
      const float* params = nullptr;
      if (auto st = link.pullParameters(pull, reply, params, 30); !st.ok()) return fail("first pull: " + describe(st));
      std::vector<float> g(static_cast<std::size_t>(kFlat));
      ps::v1::PushRequest push;
      push.set_rank(w);
      for (int k = 0;; ++k) {
        {
          std::unique_lock<std::mutex> lock(mu);
          const auto& mine = granted[static_cast<std::size_t>(w)];
          cv.wait(lock, [&] { return failed || mine < 0 || mine > k; });
          if (failed || mine < 0) return;
        }
        gradientOf(w, k, g);
        push.set_base_version(reply.version());
        push.set_batch_size(reply.batch_size() > 0 ? reply.batch_size() : spec.batch_size());
        push.set_compute_s(0.001);
        reply.Clear();
        if (auto st = link.pushPull(push, g.data(), reply, params, 30); !st.ok()) {
          return fail("push " + std::to_string(k) + ": " + describe(st));
        }
      }
    });
  }
  // Every worker joined and its first pull is admitted before the script starts.
  const bool started = within(30, [&] { return failed || cluster.servers[0]->stats().pullsAdmitted >= workers; });
  std::int64_t step = 0;
  for (int r = 0; started && !failed && r < rounds; ++r) {
    for (int i = 0; i < workers && !failed; ++i) {
      const int w = (i + r) % workers;  // the order turns each round
      scripted = 0.004 * static_cast<double>(++step) * (1.0 + 0.5 * w);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++granted[static_cast<std::size_t>(w)];
      }
      cv.notify_all();
      const bool handled = within(30, [&] {
        const auto s = cluster.servers[0]->stats();
        return failed || (s.pushes >= step && s.pullsAdmitted >= workers + step);
      });
      if (!handled && !failed) {
        failed = true;
        failure = "step " + std::to_string(step) + " (worker " + std::to_string(w) + ") was not handled in 30 s";
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& g : granted) g = -1;
  }
  for (auto& s : cluster.servers) s->requestStop();  // parked pulls are answered (stop)
  cv.notify_all();
  for (auto& t : threads) t.join();
  if (!started) QTest::qFail("the workers did not join and pull", __FILE__, __LINE__);
  if (failed) QTest::qFail(failure.c_str(), __FILE__, __LINE__);
  auto parameters = cluster.parameters(version);
  for (auto& s : cluster.servers) s->shutdown(1.0);
  return parameters;
}

// A stateless worker's backlog, flushed as after an outage: one push-pull, then `count`
// gradients computed at that version, pushed with their backlog fields; the model's
// parameters (all shards') once a pull sees the backlog applied.
std::vector<float> backlogRun(const ExperimentSpec& spec, int shards, int count) {
  Shards cluster = startShards(spec, 1, initialFlat(kFlat), shards);
  auto joined = joinServer(flatWorker(cluster.address, kFlat, 0), "worker");
  if (!joined) {
    QTest::qFail(joined.message().c_str(), __FILE__, __LINE__);
    return {};
  }
  ServerLink& link = *joined->client;
  ps::v1::PullRequest pull;
  pull.set_rank(0);
  pull.set_min_version(-1);
  ps::v1::PullReply reply;
  const float* params = nullptr;
  std::vector<float> g(static_cast<std::size_t>(kFlat));
  ps::v1::PushRequest push;
  push.set_rank(0);
  push.set_batch_size(spec.batch_size());
  std::string failure;
  if (auto st = link.pullParameters(pull, reply, params, 30); !st.ok()) failure = "pull: " + describe(st);
  gradientOf(0, 0, g);
  push.set_base_version(reply.version());
  if (auto st = link.pushPull(push, g.data(), reply, params, 30); failure.empty() && !st.ok()) {
    failure = "push-pull: " + describe(st);
  }
  const std::int64_t base = reply.version();
  for (int k = 0; k < count && failure.empty(); ++k) {
    gradientOf(0, k + 1, g);
    push.set_base_version(base);
    push.set_backlog_total(count);
    push.set_backlog_index(k);
    push.set_backlog_outage_s(1);
    ps::v1::PushReply pushed;
    if (auto st = link.pushGradient(push, g.data(), pushed, 30); !st.ok()) failure = "backlog: " + describe(st);
  }
  pull.set_min_version(base + 1);
  if (auto st = link.pullParameters(pull, reply, params, 30); failure.empty() && !st.ok()) {
    failure = "pull after the backlog: " + describe(st);
  }
  if (failure.empty() && reply.version() != base + 1) failure = "the backlog was not applied as one update";
  auto parameters = cluster.parameters();
  for (auto& s : cluster.servers) s->shutdown(1.0);
  if (!failure.empty()) QTest::qFail(failure.c_str(), __FILE__, __LINE__);
  return parameters;
}

}  // namespace

class TestShards : public QObject {
  Q_OBJECT

 private slots:
  void layoutIsPagesOfNearEqualRanges();
  void fourShardsGiveTheBitsOfOne_data();
  void fourShardsGiveTheBitsOfOne();
  void backlogGivesTheBitsOfOne_data();
  void backlogGivesTheBitsOfOne();
  void assembledPullsAreOfOneVersion_data();
  void assembledPullsAreOfOneVersion();
  void anotherShardsRefusalIsShardZeros();
  void shardedRunThroughProcesses();
};

void TestShards::layoutIsPagesOfNearEqualRanges() {
  const auto layout = shardLayout(kFlat, 4).value();
  QCOMPARE(layout.shards(), 4);
  QCOMPARE(layout.parameters(), kFlat);
  for (int i = 0; i < 4; ++i) {
    QVERIFY(layout.size(i) > 0);
    if (i + 1 < 4) QCOMPARE(layout.offset(i + 1) % kShardPage, std::int64_t{0});
  }
  // Near-equal: at most a page apart (the last holds the model's tail).
  QVERIFY(layout.size(1) - layout.size(0) <= kShardPage);
  // More shards than pages is refused, naming ps.shards.
  const auto tooMany = shardLayout(3 * kShardPage, 4);
  QVERIFY(!tooMany);
  QVERIFY(QString::fromStdString(tooMany.message()).startsWith("ps.shards:"));
  QVERIFY(QString::fromStdString(tooMany.message()).contains("at most 3 shards"));
  // A reply's layout that is not whole pages is refused.
  QVERIFY(!shardLayoutFrom({0, 1000, kFlat}));
  QVERIFY(shardLayoutFrom({0, kShardPage, kFlat}));
}

void TestShards::fourShardsGiveTheBitsOfOne_data() {
  QTest::addColumn<QString>("strategy");
  QTest::addColumn<QString>("variant");
  for (const auto& s : knownStrategies()) QTest::newRow(s.c_str()) << QString::fromStdString(s) << QString();
  QTest::newRow("dasp paper rule (DASP-R)") << "dasp" << "paper";
  QTest::newRow("asp with the guard clipping") << "asp" << "clip";
}

void TestShards::fourShardsGiveTheBitsOfOne() {
  QFETCH(QString, strategy);
  QFETCH(QString, variant);
  ExperimentSpec spec = scriptedSpec(strategy.toStdString(), 3);
  if (variant == "paper") spec.mutable_strategy()->mutable_dasp()->set_rule(v1::DaspParams::PAPER);
  if (variant == "clip") {
    // Every gradient's norm is above the bound: each is clipped by its whole norm.
    auto* guard = spec.mutable_strategy()->mutable_gradient_guard();
    guard->set_mode(v1::GradientGuardSpec::CLIP);
    guard->set_clip_norm(0.5);
  }
  std::int64_t v1 = -1, v4 = -1;
  const auto one = scriptedRun(spec, 3, 1, 8, &v1);
  const auto four = scriptedRun(spec, 3, 4, 8, &v4);
  QVERIFY(v1 > 0);
  QCOMPARE(v4, v1);
  QCOMPARE(four.size(), one.size());
  std::int64_t differ = 0;
  for (std::size_t i = 0; i < one.size(); ++i) differ += std::memcmp(&one[i], &four[i], sizeof(float)) != 0;
  QCOMPARE(differ, std::int64_t{0});
  // The parameters moved (the run did something to compare).
  QVERIFY(std::memcmp(one.data(), initialFlat(kFlat).data(), one.size() * sizeof(float)) != 0);
}

// Stateless recovery per shard: a worker's backlog reaches every shard as its pushes do,
// and each shard sums and applies its range as shard 0 says, so S = 4 keeps the bits of
// S = 1, whatever the backlog rule, with the guard clipping each gradient too.
void TestShards::backlogGivesTheBitsOfOne_data() {
  QTest::addColumn<int>("rule");
  QTest::addColumn<bool>("clip");
  QTest::newRow("sum") << int{v1::RecoverySpec::SUM} << false;
  QTest::newRow("mean, the guard clipping") << int{v1::RecoverySpec::MEAN} << true;
}

void TestShards::backlogGivesTheBitsOfOne() {
  QFETCH(int, rule);
  QFETCH(bool, clip);
  ExperimentSpec spec = scriptedSpec("asp", 1);
  spec.mutable_recovery()->set_mode(v1::RecoverySpec::STATELESS);
  spec.mutable_recovery()->set_backlog_rule(static_cast<v1::RecoverySpec::BacklogRule>(rule));
  if (clip) {
    auto* guard = spec.mutable_strategy()->mutable_gradient_guard();
    guard->set_mode(v1::GradientGuardSpec::CLIP);
    guard->set_clip_norm(0.5);
  }
  const auto one = backlogRun(spec, 1, 5);
  const auto four = backlogRun(spec, 4, 5);
  QCOMPARE(four.size(), one.size());
  QVERIFY(!one.empty());
  std::int64_t differ = 0;
  for (std::size_t i = 0; i < one.size(); ++i) differ += std::memcmp(&one[i], &four[i], sizeof(float)) != 0;
  QCOMPARE(differ, std::int64_t{0});
}

// Each way a node reaches the shards and shard 0's log reaches the others: the payload
// socket (the log as socket calls; the other shards' calls in parallel threads), shared
// memory (the doorbell's Push and Pull, made from the worker's own thread), and gRPC with
// TLS (no payload socket: the log over the FollowShard stream).
void TestShards::assembledPullsAreOfOneVersion_data() {
  QTest::addColumn<QString>("transport");
  QTest::newRow("payload socket") << "tcp";
  QTest::newRow("shared memory") << "shm";
  QTest::newRow("gRPC with TLS") << "tls";
}

void TestShards::assembledPullsAreOfOneVersion() {
  QFETCH(QString, transport);
  // ASP, lr 1, no momentum or decay, every gradient all ones: version v's parameters are
  // all -v. A pull assembled from ranges of two versions shows two values.
  ExperimentSpec spec = scriptedSpec("asp", 8);
  spec.mutable_optimizer()->set_lr(1.0);
  spec.mutable_optimizer()->set_momentum(0.0);
  spec.mutable_optimizer()->set_weight_decay(0.0);
  constexpr std::int64_t n = 16 * kShardPage + 7;
  QTemporaryDir dir;
  NodeSecurity security;
  if (transport == "tls") {
    if (!haveOpenssl()) QSKIP("openssl is not installed: tools/make-lab-cert.sh cannot make a certificate");
    QString error;
    const auto cert = makeLabCert(dir.filePath("shards"), {"lab-host"}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    security = withToken("shards-token-0123456789abcdef", tlsOf(cert, true));
  }
  Shards cluster = startShards(spec, 8, std::vector<float>(n, 0.0f), 4, {},
                               transport == "shm" ? dir.path().toStdString() : std::string(), security);
  constexpr int kIterations = 150;
  std::atomic<std::int64_t> checked{0};
  std::mutex mu;
  std::string failure;
  std::vector<std::thread> threads;
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&, w] {
      auto fail = [&](const std::string& why) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty()) failure = "worker " + std::to_string(w) + ": " + why;
      };
      WorkerOptions options = flatWorker(cluster.address, n, w);
      options.security = security;
      options.transport = transport == "shm" ? LocalTransport::Shm : LocalTransport::Tcp;
      auto joined = joinServer(options, "worker");
      if (!joined) return fail(joined.message());
      ServerLink& link = *joined->client;
      ps::v1::PullRequest pull;
      pull.set_rank(w);
      pull.set_min_version(-1);
      ps::v1::PullReply reply;
      const float* params = nullptr;
      if (auto st = link.pullParameters(pull, reply, params, 30); !st.ok()) return fail(describe(st));
      const std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
      ps::v1::PushRequest push;
      push.set_rank(w);
      push.set_batch_size(32);
      for (int k = 0; k < kIterations; ++k) {
        push.set_base_version(reply.version());
        reply.Clear();
        if (auto st = link.pushPull(push, ones.data(), reply, params, 30); !st.ok()) return fail(describe(st));
        const float expected = -static_cast<float>(reply.version());
        for (std::int64_t i = 0; i < n; ++i) {
          if (params[i] != expected) {
            return fail("version " + std::to_string(reply.version()) + ": parameter " + std::to_string(i) + " is " +
                        std::to_string(params[i]) + ", not " + std::to_string(expected));
          }
        }
        ++checked;
      }
    });
  }
  for (auto& t : threads) t.join();
  QVERIFY2(failure.empty(), failure.c_str());
  QCOMPARE(checked.load(), std::int64_t{8 * kIterations});
  std::int64_t version = 0;
  const auto final = cluster.parameters(&version);
  QCOMPARE(version, std::int64_t{8 * kIterations});
  QCOMPARE(final.front(), -static_cast<float>(version));
  QCOMPARE(final.back(), -static_cast<float>(version));
  for (auto& s : cluster.servers) s->shutdown(1.0);
}

void TestShards::anotherShardsRefusalIsShardZeros() {
  ExperimentSpec spec = scriptedSpec("asp", 1);
  Shards cluster = startShards(spec, 1, initialFlat(kFlat), 4);
  auto joined = joinServer(flatWorker(cluster.address, kFlat, 0), "worker");
  QVERIFY2(joined, joined ? "" : joined.message().c_str());
  QVERIFY(joined->sharded);
  ServerLink& link = *joined->client;
  ps::v1::PullRequest pull;
  pull.set_rank(0);
  ps::v1::PullReply reply;
  const float* params = nullptr;
  QVERIFY(link.pullParameters(pull, reply, params, 10).ok());
  std::vector<float> g(static_cast<std::size_t>(kFlat), 0.01f);
  g.back() = std::numeric_limits<float>::quiet_NaN();  // in the last shard's range
  ps::v1::PushRequest push;
  push.set_rank(0);
  push.set_batch_size(32);
  const auto status = link.pushPull(push, g.data(), reply, params, 10);
  QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  QCOMPARE(pushRefusalOf(status), std::optional(ps::v1::PushRefusal::NON_FINITE));
  QVERIFY(QString::fromStdString(status.error_message()).contains("shard 3"));
  const auto stats = cluster.servers[0]->stats();
  QCOMPARE(stats.rejected, std::int64_t{1});
  QCOMPARE(stats.version, std::int64_t{0});
  // The worker goes on: its next pull is answered by every shard, at version 0.
  reply.Clear();
  QVERIFY(link.pullParameters(pull, reply, params, 10).ok());
  QCOMPARE(reply.version(), std::int64_t{0});
  QVERIFY(std::memcmp(params, initialFlat(kFlat).data(), static_cast<std::size_t>(kFlat) * sizeof(float)) == 0);
  for (auto& s : cluster.servers) s->shutdown(1.0);
}

void TestShards::shardedRunThroughProcesses() {
  QTemporaryDir dir;
  test_support::SyntheticSpec base;
  base.strategy = "bsp";
  base.workers = 3;
  base.maxSeconds = 2;
  QJsonObject spec = base.json();
  spec["ps"] = QJsonObject{{"shards", 2}};
  // logreg on 32 features: 330 parameters, a single page: more than one shard is refused.
  spec["model"] = QJsonObject{{"name", "mlp"}};
  const QString path = test_support::writeSpecFile(dir.path(), "sharded", spec);
  const QString db = dir.filePath("runs.sqlite");
  const auto run = test_support::runDasp({"run", path, "--db", db, "--json", "--quiet"}, 90000);
  QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  QVERIFY2(run.out.contains("\"status\":\"completed\""), qPrintable(run.out));
  QVERIFY2(run.out.contains("\"shards\":2,"), qPrintable(run.out));
  auto store = RunStore::open(db.toStdString()).value();
  const auto runs = store->listRuns().value();
  QCOMPARE(runs.size(), std::size_t{1});
  const auto nodes = store->nodes(runs.front().id).value();
  bool shard = false;
  for (const auto& node : nodes) shard = shard || (node.node == "shard-1" && node.role == "server" && node.exitCode == 0);
  QVERIFY(shard);
  // Each shard's load (SHARD_LOAD, a period of a second or more) is in the store on the
  // run's clock: shard 1's too, although its own clock started before shard 0's.
  for (const char* name : {"server", "shard-1"}) {
    const auto periods = store->samples(runs.front().id, "shard_period_s").value();
    const auto applied = store->samples(runs.front().id, "shard_apply_s").value();
    int seen = 0;
    for (const auto& p : periods) {
      if (p.node != name) continue;
      ++seen;
      // A run of 2 s (max_seconds): its periods end within it, and its stop.
      QVERIFY2(p.value >= 1.0 && p.tS >= p.value && p.tS < 3.0, qPrintable(QString::number(p.tS)));
    }
    QVERIFY2(seen >= 1, name);
    double applying = 0;
    for (const auto& a : applied) applying += a.node == name ? a.value : 0;
    QVERIFY2(applying > 0, name);  // BSP applied updates on both ranges
  }
  // Too many shards for the model: a clear error naming ps.shards, before anything runs.
  spec["ps"] = QJsonObject{{"shards", 64}};
  spec["model"] = QJsonObject{{"name", "logreg"}};
  const QString tooMany = test_support::writeSpecFile(dir.path(), "too-many", spec);
  const auto refused = test_support::runDasp({"run", tooMany, "--db", db, "--quiet"}, 60000);
  QVERIFY(refused.exitCode != 0);
  QVERIFY2(refused.err.contains("ps.shards"), qPrintable(refused.err));
  // A drill on a shard names a shard the run has.
  spec["ps"] = QJsonObject{{"shards", 2}};
  spec["model"] = QJsonObject{{"name", "mlp"}};
  auto refusal = [&](const QJsonObject& changed, const QString& field) {
    const QString file = test_support::writeSpecFile(dir.path(), "refused", changed);
    const auto o = test_support::runDasp({"validate", file}, 60000);
    return o.exitCode != 0 && o.err.contains(field) ? QString() : o.err + o.out;
  };
  // With chain replication per shard, a drill kills shard 1..S-1 for good (its replica
  // takes its place): not shard 0, which has no replica, nor a replica.
  QJsonObject chain = spec;
  chain["recovery"] = QJsonObject{{"mode", "CHAIN"}, {"replicas", 2}};
  auto chainKill = [&](const QString& node, bool restart) {
    QJsonObject kill{{"node", node}, {"action", "KILL"}, {"at_s", 1}};
    if (restart) kill["restart_after_s"] = 1;
    QJsonObject s = chain;
    s["faults"] = QJsonArray{kill};
    return s;
  };
  QCOMPARE(refusal(chainKill("server", false), "faults[0].node"), QString());
  QCOMPARE(refusal(chainKill("shard-1-r1", false), "faults[0].node"), QString());
  QCOMPARE(refusal(chainKill("shard-1", true), "faults[0].restart_after_s"), QString());
  // A PAUSE of a shard is taken (net.shard_faults.pauses runs it).
  QJsonObject paused = spec;
  paused["faults"] = QJsonArray{QJsonObject{{"node", "shard-1"}, {"action", "PAUSE"}, {"at_s", 1}}};
  const QString pausedFile = test_support::writeSpecFile(dir.path(), "paused", paused);
  const auto pausedValid = test_support::runDasp({"validate", pausedFile}, 60000);
  QVERIFY2(pausedValid.exitCode == 0, qPrintable(pausedValid.err));
  // Not a replica's, yet (FAULT-TOLERANCE.md, Limits).
  QJsonObject pausedReplica = chain;
  pausedReplica["faults"] = QJsonArray{QJsonObject{{"node", "shard-1-r1"}, {"action", "PAUSE"}, {"at_s", 1}}};
  QCOMPARE(refusal(pausedReplica, "faults[0].action"), QString());
  QJsonObject unknown = spec;
  unknown["faults"] = QJsonArray{QJsonObject{{"node", "shard-2"}, {"action", "KILL"}, {"at_s", 1}}};
  QCOMPARE(refusal(unknown, "no node 'shard-2'"), QString());
}

QTEST_GUILESS_MAIN(TestShards)
#include "tst_shards.moc"
