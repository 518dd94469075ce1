// SPDX-License-Identifier: MIT
// Stateless recovery's arithmetic, with real `dasp server` processes that the test
// SIGKILLs and restarts with --adopt: after a worker's backlog is flushed, the parameters
// are, bitwise, the rule applied to the parameters the worker held (SUM: Σg at the run's
// lr; MEAN: Σg/n; SCALED_LR: Σg at lr × backlog_lr_scale above backlog_lr_threshold, the
// run's lr at or below it), with momentum restarted at zero; a worker computing through
// an outage drops exactly what it computed beyond its bound; of two workers holding
// different versions, the higher version is adopted, whichever rejoins first. Recovery
// LOCAL's: the restarted server adopts, bitwise, the average of the copies the workers
// trained, weighted by their local steps, as the version after theirs; a copy that returns
// after the adoption is merged into the current parameters by the stated weights.
#include "core/params/local_average.h"
#include "core/params/parameter_store.h"
#include "core/spec/spec.h"
#include "net/client/recovery_line.h"
#include "tests/support/ps_fixtures.h"

#include <QtTest>

using namespace ps_fixtures;

namespace {

// The acknowledged parameters and version of worker `rank` after pushes `from`..`to`.
struct Held {
  std::int64_t version = -1;
  std::vector<float> params;
};

Held pushRange(PsClient& client, int from, int to, std::int64_t base, int rank = 0) {
  Held h;
  h.version = base;
  for (int k = from; k <= to; ++k) {
    auto [v, params] = pushNumber(client, k, h.version, 10, rank);
    if (v < 0) return {};
    h.version = v;
    h.params = params;
  }
  return h;
}

// A rejoin as the worker does it after an outage: its rank, its version and parameters.
pb::JoinRequest rejoin(int rank, const Held& held) {
  pb::JoinRequest req;
  req.set_role("worker");
  req.set_name("worker-" + std::to_string(rank));
  req.set_model("logreg");
  req.set_parameter_count(kParameters);
  req.set_requested_rank(rank);
  req.set_rejoin(true);
  req.set_held_version(held.version);
  req.set_held_parameters(reinterpret_cast<const char*>(held.params.data()), held.params.size() * sizeof(float));
  return req;
}

// A worker's copy after `steps` local steps from `held` (made-up values, finite and
// different for each `k`), and its rejoin offering it.
Held trainedCopy(const Held& held, int k) {
  Held copy = held;
  const auto g = gradientNumber(100 + k);
  for (std::size_t i = 0; i < copy.params.size(); ++i) copy.params[i] -= 3.0f * g[i];
  return copy;
}
pb::JoinRequest rejoinWithCopy(int rank, const Held& copy, std::int64_t steps) {
  auto req = rejoin(rank, copy);
  req.set_local_steps(steps);
  return req;
}

// A LOCAL drill's start: a server of `workers` slots (every worker joined, so the run
// started) at version 4 by worker 0's pushes 1-4, killed and restarted with --adopt at the
// same address (`again`). Returns worker 0's acknowledged version 4 (-1: a step failed).
Held fourUpdatesThenRestart(Servers& servers, const QString& spec, int workers, std::string* again) {
  const auto address = servers.start("server", spec, {}, "0", workers);
  if (address.empty()) return {};
  Held base;
  {
    std::vector<std::unique_ptr<PsClient>> clients;
    for (int r = 0; r < workers; ++r) {
      clients.push_back(std::make_unique<PsClient>(address, kParameters));
      if (!joinAsWorker(*clients.back(), r)) return {};
    }
    base = pushRange(*clients[0], 1, 4, 0, 0);
  }
  servers.kill("server");
  *again = servers.start("server", spec, {"--adopt", "--resume-at", "2"}, portOf(address), workers);
  return *again == address ? base : Held{};
}

// Momentum restarted at zero: the next push (gradient 42, computed on `version`) makes one
// plain step from `from`, bitwise.
bool nextPushIsAPlainStep(PsClient& client, const QString& spec, const std::vector<float>& from, std::int64_t version) {
  auto [next, after] = pushNumber(client, 42, version, 10, 0);
  auto loaded = loadSpecFile(spec.toStdString());
  if (next != version + 1 || !loaded.isOk()) return false;
  ParameterStore expected(from, kMomentum, kWeightDecay);
  const auto g42 = gradientNumber(42);
  const float* g = g42.data();
  const double one = 1.0;
  expected.apply(&g, &one, 1, learningRateAt(withDefaults(loaded.value()).optimizer(), version));
  return sameBits(after, std::vector<float>(expected.parameters(), expected.parameters() + kParameters));
}

// The backlog's gradients, pushed as a worker flushes them (one by one, the last applies).
bool flushBacklog(PsClient& client, const std::vector<std::vector<float>>& backlog, std::int64_t base) {
  for (std::size_t i = 0; i < backlog.size(); ++i) {
    pb::PushRequest req;
    req.set_rank(0);
    req.set_base_version(base);
    req.set_batch_size(16);
    req.set_backlog_total(static_cast<int>(backlog.size()));
    req.set_backlog_index(static_cast<int>(i));
    req.set_backlog_age_s(1.0);
    req.set_backlog_outage_s(1.0);
    pb::PushReply reply;
    if (!client.pushGradient(req, backlog[i].data(), reply, 10).ok()) return false;
  }
  return true;
}

}  // namespace

class TestStateless : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("DASP_RUN_TOKEN", "stateless-test-token"); }
  void backlogRuleArithmetic_data();
  void backlogRuleArithmetic();
  void droppedIsComputedBeyondTheBound();
  void higherHeldVersionIsAdopted_data();
  void higherHeldVersionIsAdopted();
  void localCopiesAverageByTheirSteps();
  void localCopyReturningLateIsMerged();

 private:
  QTemporaryDir m_dir;
};

void TestStateless::backlogRuleArithmetic_data() {
  QTest::addColumn<QString>("rule");
  QTest::addColumn<int>("backlog");
  QTest::addColumn<double>("weight");   // of Σg
  QTest::addColumn<double>("lrFactor");  // of the run's lr
  QTest::newRow("SUM") << "SUM" << 5 << 1.0 << 1.0;
  QTest::newRow("MEAN") << "MEAN" << 5 << 1.0 / 5 << 1.0;
  QTest::newRow("SCALED_LR above the threshold") << "SCALED_LR" << 5 << 1.0 << 0.1;
  QTest::newRow("SCALED_LR at the threshold") << "SCALED_LR" << 3 << 1.0 << 1.0;
}

void TestStateless::backlogRuleArithmetic() {
  QFETCH(QString, rule);
  QFETCH(int, backlog);
  QFETCH(double, weight);
  QFETCH(double, lrFactor);
  const QString name = "rule-" + rule.toLower() + "-" + QString::number(backlog);
  const auto specPath = writeSpec(m_dir, name,
                                  QStringLiteral(R"({"mode": "STATELESS", "backlog_rule": "%1", "backlog_lr_threshold": 3,
                                                     "backlog_lr_scale": 0.1})")
                                      .arg(rule));
  Servers servers;
  const auto address = servers.start("server", specPath, {});
  QVERIFY(!address.empty());
  Held held;
  {
    PsClient client(address, kParameters);
    QVERIFY(joinAsWorker(client));
    held = pushRange(client, 1, 6, 0);
    QCOMPARE(held.version, std::int64_t{6});
  }
  servers.kill("server");
  const auto again = servers.start("server", specPath, {"--adopt", "--resume-at", "2"}, portOf(address));
  QCOMPARE(again, address);
  EventLog events(again);
  PsClient client(again, kParameters);
  pb::JoinReply joined;
  auto request = rejoin(0, held);
  QVERIFY(client.join(request, joined, 10).ok());
  QVERIFY(events.waitRecovery("adopted", [&](const pb::ClusterEvent& e) { return e.version() == held.version; }));
  std::vector<std::vector<float>> gradients;
  for (int i = 0; i < backlog; ++i) gradients.push_back(gradientNumber(100 + i));
  QVERIFY(flushBacklog(client, gradients, held.version));
  auto applied = events.waitRecovery("backlog", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(applied);
  QCOMPARE(applied->count(), std::int64_t{backlog});
  QCOMPARE(applied->version(), held.version + 1);

  // The rule by hand: Σg summed in arrival order from zero, as the server sums it, then one
  // update on the held parameters with momentum zero (workers do not keep momentum).
  std::vector<float> sum(static_cast<std::size_t>(kParameters), 0.0f);
  for (const auto& g : gradients) {
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
  }
  auto spec = loadSpecFile(specPath.toStdString());
  QVERIFY(spec.isOk());
  const double baseLr = learningRateAt(withDefaults(spec.value()).optimizer(), held.version);
  const double lr = baseLr * lrFactor;
  ParameterStore expected(held.params, kMomentum, kWeightDecay);
  expected.setVersion(held.version);
  const float* g = sum.data();
  expected.apply(&g, &weight, 1, lr);
  auto [version, params] = readParameters(again);
  QCOMPARE(version, held.version + 1);
  const std::vector<float> want(expected.parameters(), expected.parameters() + kParameters);
  QVERIFY2(sameBits(params, want), qPrintable("parameters after the flush are not rule " + rule + "'s"));
  // And not some other rule's: the rules differ on this backlog.
  ParameterStore plain(held.params, kMomentum, kWeightDecay);
  const double one = 1.0;
  plain.apply(&g, &one, 1, baseLr);
  const std::vector<float> sumRule(plain.parameters(), plain.parameters() + kParameters);
  QCOMPARE(sameBits(params, sumRule), weight == 1.0 && lrFactor == 1.0);
}

void TestStateless::droppedIsComputedBeyondTheBound() {
  constexpr int kBound = 4;
  const auto spec = writeSpec(m_dir, "bound",
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
  // Exactly the bound is applied, in one step on the adopted parameters.
  QCOMPARE(backlog->count(), std::int64_t{kBound});
  QCOMPARE(backlog->version(), adopted->version() + 1);
  QVERIFY(backlog->outage_s() > 0);
  cancel = true;
  worker.join();
  std::optional<RecoveryReport> outage, reconnected;
  {
    std::lock_guard<std::mutex> lock(logMu);
    for (const auto& l : lines) {
      auto r = parseRecoveryLine(l);
      if (r && r->kind == RecoveryReport::Kind::OutageDetected) outage = r;
      if (r && r->kind == RecoveryReport::Kind::Reconnected) reconnected = r;
    }
  }
  QVERIFY2(outage && reconnected, "the worker did not report its outage and reconnection");
  // What it had acknowledged before the kill: at least its 19 first pushes' versions.
  QVERIFY2(outage->ackedVersion >= 19, std::to_string(outage->ackedVersion).c_str());
  // dropped = computed in the outage (with the gradient in flight it kept) - the bound.
  QVERIFY2(reconnected->computed >= kBound + 2, std::to_string(reconnected->computed).c_str());
  QCOMPARE(reconnected->flushed, std::int64_t{kBound});
  QCOMPARE(reconnected->dropped, reconnected->computed + reconnected->inFlightKept - kBound);
  QCOMPARE(backlog->dropped(), reconnected->dropped);
  QCOMPARE(reconnected->discarded, std::int64_t{0});
}

void TestStateless::higherHeldVersionIsAdopted_data() {
  QTest::addColumn<bool>("higherFirst");
  QTest::newRow("the higher version rejoins first") << true;
  QTest::newRow("the lower version rejoins first") << false;
}

void TestStateless::higherHeldVersionIsAdopted() {
  QFETCH(bool, higherFirst);
  const QString name = higherFirst ? "adopt-higher-first" : "adopt-lower-first";
  const auto spec = writeSpec(m_dir, name, R"({"mode": "STATELESS"})", 2);
  Servers servers;
  const auto address = servers.start("server", spec, {}, "0", 2);
  QVERIFY(!address.empty());
  Held low, high;
  {
    PsClient w0(address, kParameters), w1(address, kParameters);
    QVERIFY(joinAsWorker(w0, 0));
    QVERIFY(joinAsWorker(w1, 1));
    low = pushRange(w0, 1, 5, 0, 0);     // worker-0 holds version 5
    high = pushRange(w1, 6, 9, 5, 1);    // worker-1 then holds version 9
    QCOMPARE(low.version, std::int64_t{5});
    QCOMPARE(high.version, std::int64_t{9});
    QVERIFY(!sameBits(low.params, high.params));
  }
  servers.kill("server");
  const auto again = servers.start("server", spec, {"--adopt", "--resume-at", "2"}, portOf(address), 2);
  QCOMPARE(again, address);
  EventLog events(again);
  // The restarted server answers the joins once both have rejoined (or its wait ends).
  PsClient w0(again, kParameters), w1(again, kParameters);
  grpc::Status first, second;
  {
    const auto firstRank = higherFirst ? 1 : 0;
    auto firstReq = rejoin(firstRank, higherFirst ? high : low);
    auto secondReq = rejoin(1 - firstRank, higherFirst ? low : high);
    pb::JoinReply r1, r2;
    std::thread one([&] { first = (higherFirst ? w1 : w0).join(firstReq, r1, 15); });
    // The second rejoins only once the server has taken in the first (its NODE UP event).
    const bool firstIn = events.waitEvent([&](const pb::ClusterEvent& e) {
      return e.kind() == pb::ClusterEvent::NODE && e.code() == v1::RunEvent::NODE_UP && e.rank() == firstRank;
    }).has_value();
    std::thread two([&] { second = (higherFirst ? w0 : w1).join(secondReq, r2, 15); });
    one.join();
    two.join();
    QVERIFY2(firstIn, "the server did not report the first rejoin");
  }
  QVERIFY2(first.ok() && second.ok(), (first.error_message() + " / " + second.error_message()).c_str());
  auto adopted = events.waitRecovery("adopted", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(adopted);
  QCOMPARE(adopted->version(), std::int64_t{9});
  QVERIFY2(adopted->detail().find("from worker-1") != std::string::npos, adopted->detail().c_str());
  auto [version, params] = readParameters(again);
  QCOMPARE(version, std::int64_t{9});
  QVERIFY2(sameBits(params, high.params), "the adopted parameters are not those of the higher version");
  QVERIFY2(nextPushIsAPlainStep(w0, spec, high.params, 9), "momentum did not restart from zero");
}

void TestStateless::localCopiesAverageByTheirSteps() {
  const auto spec = writeSpec(m_dir, "local-average", R"({"mode": "LOCAL"})", 3);
  Servers servers;
  std::string again;
  const Held base = fourUpdatesThenRestart(servers, spec, 3, &again);
  QCOMPARE(base.version, std::int64_t{4});
  EventLog events(again);
  // Copies of 1 and 3 local steps, and one without (it holds version 4's parameters).
  const Held a = trainedCopy(base, 1), b = trainedCopy(base, 2);
  const std::vector<std::pair<pb::JoinRequest, int>> joins{
      {rejoinWithCopy(0, a, 1), 0}, {rejoinWithCopy(1, b, 3), 1}, {rejoinWithCopy(2, base, 0), 2}};
  std::vector<grpc::Status> status(3);
  {
    std::vector<std::unique_ptr<PsClient>> clients;
    std::vector<std::thread> threads;
    for (const auto& [req, rank] : joins) {
      clients.push_back(std::make_unique<PsClient>(again, kParameters));
      threads.emplace_back([&, r = rank, c = clients.back().get()] {
        pb::JoinReply reply;
        status[static_cast<std::size_t>(r)] = c->join(joins[static_cast<std::size_t>(r)].first, reply, 15);
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& s : status) QVERIFY2(s.ok(), s.error_message().c_str());
  auto adopted = events.waitRecovery("adopted", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(adopted);
  // The version after every copy's: the acknowledged version 4 is in it.
  QCOMPARE(adopted->version(), std::int64_t{5});
  QCOMPARE(adopted->count(), std::int64_t{4});  // steps merged
  QVERIFY2(adopted->detail().find("spread") != std::string::npos, adopted->detail().c_str());
  LocalModelAverage expected;
  expected.reset(static_cast<std::size_t>(kParameters));
  expected.add(a.params.data(), 1);
  expected.add(b.params.data(), 3);
  std::vector<float> average(static_cast<std::size_t>(kParameters));
  expected.average(average.data());
  auto [version, params] = readParameters(again);
  QCOMPARE(version, std::int64_t{5});
  QVERIFY2(sameBits(params, average), "the adopted parameters are not the steps-weighted average of the copies");
  PsClient w0(again, kParameters);
  QVERIFY2(nextPushIsAPlainStep(w0, spec, average, 5), "momentum did not restart from zero");
}

void TestStateless::localCopyReturningLateIsMerged() {
  const auto spec = writeSpec(m_dir, "local-late", R"({"mode": "LOCAL"})", 2);
  Servers servers;
  std::string again;
  const Held base = fourUpdatesThenRestart(servers, spec, 2, &again);
  QCOMPARE(base.version, std::int64_t{4});
  EventLog events(again);
  // Worker 0 returns with 2 local steps; worker 1 does not come back within the wait
  // (barrier_timeout_s after the first rejoin), so the adoption is worker 0's copy alone.
  const Held a = trainedCopy(base, 1), b = trainedCopy(base, 2);
  PsClient w0(again, kParameters), w1(again, kParameters);
  pb::JoinReply reply;
  const auto first = w0.join(rejoinWithCopy(0, a, 2), reply, 15);
  QVERIFY2(first.ok(), first.error_message().c_str());
  auto adopted = events.waitRecovery("adopted", [](const pb::ClusterEvent&) { return true; });
  QVERIFY(adopted);
  QCOMPARE(adopted->version(), std::int64_t{5});
  QVERIFY(sameBits(readParameters(again).second, a.params));
  // Worker 1 returns late with 3 steps on version 4: against the current parameters'
  // weight of 1 update since version 4 plus the adoption's 2 steps less the one update
  // it counts as: (2 · current + 3 · copy) / 5, as version 6.
  const auto late = w1.join(rejoinWithCopy(1, b, 3), reply, 15);
  QVERIFY2(late.ok(), late.error_message().c_str());
  auto merged = events.waitRecovery("adopted", [](const pb::ClusterEvent& e) { return e.rank() == 1; });
  QVERIFY(merged);
  QCOMPARE(merged->version(), std::int64_t{6});
  QCOMPARE(merged->count(), std::int64_t{3});
  std::vector<float> expected = a.params;
  QCOMPARE(mergeLocalCopy(expected.data(), 2, b.params.data(), 3, expected.size()), std::int64_t{5});
  auto [version, params] = readParameters(again);
  QCOMPARE(version, std::int64_t{6});
  QVERIFY2(sameBits(params, expected), "the late copy was not merged by the stated weights");
}

QTEST_GUILESS_MAIN(TestStateless)
#include "tst_stateless.moc"
