// SPDX-License-Identifier: MIT
// Tests of the virtual-cluster engine (core/sim/sim_engine.h) with the plain-C++ softmax model
// on synthetic data: bitwise reproducibility, the time model against hand-computed times,
// what the strategies do to waits on a heterogeneous cluster, speed changes, fault drills
// in virtual time (worker kill, server kill under every recovery mode, pauses), what goes
// into the store, and the errors for what the engine does not model.

#include "core/data/dataset.h"
#include "core/store/run_store.h"
#include "core/sim/sim_engine.h"
#include "core/sim/softmax_model.h"
#include "core/spec/spec.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace dasp;

namespace {

// A small synthetic experiment: softmax regression, 10 classes × 32 features.
ExperimentSpec baseSpec(const std::string& strategy, int workers, double baseMs = 10) {
  ExperimentSpec spec;
  spec.set_name("sim-test");
  spec.set_engine("sim");
  spec.mutable_model()->set_name("logreg");
  auto* d = spec.mutable_dataset();
  d->set_name("synthetic");
  d->mutable_synthetic()->set_train_count(4096);
  d->mutable_synthetic()->set_test_count(512);
  spec.mutable_sim()->set_gradients(v1::SimSpec::POLICY_ONLY);
  spec.mutable_optimizer()->set_lr(0.05);
  spec.mutable_optimizer()->set_momentum(0.0);
  spec.set_batch_size(32);
  spec.mutable_cluster()->set_count(workers);
  spec.mutable_cluster()->set_base_iteration_ms(baseMs);
  spec.mutable_strategy()->set_name(strategy);
  spec.mutable_stop()->set_max_seconds(2.0);
  spec.mutable_stop()->set_stop_at_target(false);
  spec.mutable_evaluation()->set_every_s(0.1);
  spec.set_seed(7);
  return withDefaults(spec);
}

// The computation of a spec: the softmax model on its synthetic data.
struct Compute {
  TrainTest data;
  std::unique_ptr<SoftmaxEvaluator> evaluator;
  SimCompute compute;
};
std::unique_ptr<Compute> computeFor(const ExperimentSpec& spec) {
  auto c = std::make_unique<Compute>();
  SyntheticOptions o;
  o.trainCount = spec.dataset().synthetic().train_count();
  o.testCount = spec.dataset().synthetic().test_count();
  c->data = makeSynthetic(o, spec.seed());
  auto e = SoftmaxEvaluator::create(c->data.test, 0);
  if (!e) qFatal("%s", e.message().c_str());
  c->evaluator = std::move(e).value();
  c->compute.initialParameters = softmaxInitialParameters(c->data.train, spec.seed());
  c->compute.evaluator = c->evaluator.get();
  c->compute.trainCount = c->data.train.count;
  const Dataset* train = &c->data.train;
  c->compute.makeSource = [train, spec](int rank, int n) -> Result<std::unique_ptr<GradientSource>> {
    auto s = SoftmaxGradientSource::create(spec, *train, rank, n);
    if (!s) return s.status();
    return std::unique_ptr<GradientSource>(std::move(s).value());
  };
  return c;
}

struct Outcome {
  RunSummary summary;
  std::vector<EvaluationRow> evaluations;
};
Outcome simulate(const ExperimentSpec& spec, const std::string& db = {}) {
  auto c = computeFor(spec);
  Outcome o;
  SimOptions options;
  options.dbPath = db;
  options.onEvaluation = [&](const EvaluationRow& r) { o.evaluations.push_back(r); };
  auto r = runSimulation(spec, c->compute, options);
  if (!r) qFatal("simulation failed: %s", r.message().c_str());
  o.summary = r.value();
  return o;
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

class TestSimEngine : public QObject {
  Q_OBJECT

 private slots:
  // Same spec and seed twice: bitwise the same evaluation series, for every strategy; a
  // different seed gives a different one.
  void reproducibleBitwise_data() {
    QTest::addColumn<QString>("strategy");
    for (const auto& s : dasp::knownStrategies()) QTest::newRow(s.c_str()) << QString::fromStdString(s);
  }
  void reproducibleBitwise() {
    QFETCH(QString, strategy);
    auto spec = baseSpec(strategy.toStdString(), 4);
    spec.mutable_cluster()->add_slowdowns(1);
    spec.mutable_cluster()->add_slowdowns(1);
    spec.mutable_cluster()->add_slowdowns(2);
    spec.mutable_cluster()->add_slowdowns(4);
    spec.mutable_cluster()->mutable_link()->set_latency_ms(0.3);
    // Jitter makes the event order depend on the seeded draws.
    auto withJitter = spec;
    const auto a = simulate(withJitter);
    const auto b = simulate(withJitter);
    QVERIFY(a.evaluations.size() > 10);
    QCOMPARE(a.evaluations.size(), b.evaluations.size());
    for (std::size_t i = 0; i < a.evaluations.size(); ++i) {
      QVERIFY2(sameBits(a.evaluations[i].accuracy, b.evaluations[i].accuracy), qPrintable(QString::number(i)));
      QVERIFY(sameBits(a.evaluations[i].loss, b.evaluations[i].loss));
      QVERIFY(sameBits(a.evaluations[i].tS, b.evaluations[i].tS));
      QCOMPARE(a.evaluations[i].version, b.evaluations[i].version);
    }
    QCOMPARE(a.summary.updates, b.summary.updates);
    QCOMPARE(a.summary.gradients, b.summary.gradients);
    auto other = spec;
    other.set_seed(8);
    const auto c = simulate(other);
    bool differs = c.evaluations.size() != a.evaluations.size();
    for (std::size_t i = 0; !differs && i < a.evaluations.size(); ++i) {
      differs = !sameBits(a.evaluations[i].loss, c.evaluations[i].loss);
    }
    QVERIFY(differs);
  }

  // A large model's traffic (sim.payload_parameters: 800,000 parameters, 3.2 MB each way)
  // from 64 workers over 10 Gbit/s server links: one shard's link carries every push and
  // every pull (2.6 ms each), so BSP's rounds wait on the server; 16 shards carry a
  // sixteenth each and the rounds are the workers' compute again.
  void serverLinksBindALargeModelAtOneShard() {
    auto spec = baseSpec("bsp", 64, 20);
    spec.mutable_sim()->set_payload_parameters(800'000);
    spec.mutable_stop()->set_max_seconds(3.0);
    auto unlimited = simulate(spec).summary;
    spec.mutable_sim()->mutable_server_link()->set_mbit(10'000);
    const auto one = simulate(spec).summary;
    spec.mutable_ps()->set_shards(16);
    const auto sixteen = simulate(spec).summary;
    qInfo("updates in 3 s: unlimited links %lld, one shard %lld (wait %.2f), 16 shards %lld (wait %.2f)",
          static_cast<long long>(unlimited.updates), static_cast<long long>(one.updates), one.waitFraction,
          static_cast<long long>(sixteen.updates), sixteen.waitFraction);
    // A round at one shard: 64 pulls out and 64 pushes in, 164 ms each way, and the
    // workers wait on it; with unlimited links the same server is bound by its apply
    // (64 × 800,000 values at 1 ns: 51 ms a round). 16 shards share both.
    QVERIFY(one.updates * 2 < unlimited.updates);
    QVERIFY(one.waitFraction > 0.8);
    QVERIFY(sixteen.updates > 3 * one.updates);
    QVERIFY(sixteen.updates > unlimited.updates);
    QVERIFY(sixteen.waitFraction < 0.5);
    // One shard of a small model: the links carry it without a queue (the default run).
    spec.clear_ps();
    spec.mutable_sim()->clear_payload_parameters();
    QVERIFY(simulate(withDefaults(spec)).summary.updates * 10 > unlimited.updates * 9);
  }

  // Two BSP workers whose transfers take 5 ms on their hosts' links (no other cost): on a
  // host each, a round is pull 5 + compute 10 + push 5 ms; on one shared host the second
  // pull waits for the first, so does the second push, and a round takes 25 ms.
  void sharedHostLinkQueuesItsTransfers() {
    auto spec = baseSpec("bsp", 2, 10);
    spec.mutable_cluster()->mutable_link()->set_latency_ms(0);
    spec.mutable_cluster()->mutable_link()->set_mbit(1e12);
    spec.mutable_sim()->set_push_overhead_ms(0);
    spec.mutable_sim()->set_apply_ns_per_param(0);
    spec.mutable_stop()->set_max_seconds(0);
    spec.mutable_stop()->set_max_updates(20);
    spec.mutable_evaluation()->set_every_s(0);
    spec.mutable_evaluation()->set_every_steps(5);
    const double params = static_cast<double>(computeFor(spec)->compute.initialParameters.size());
    const double mbit = params * 32 / 0.005 / 1e6;  // 5 ms a transfer
    for (const char* name : {"a", "b"}) {
      auto* host = spec.mutable_launch()->add_hosts();
      host->set_name(name);
      for (auto* way : {host->mutable_downlink(), host->mutable_uplink()}) {
        way->set_mbit(mbit);
        way->set_latency_ms(0);
      }
    }
    auto roundOf = [](const Outcome& o) {
      const auto& last = o.evaluations.back();
      return last.tS / static_cast<double>(last.version);
    };
    const auto apart = simulate(spec);  // worker 0 on a, worker 1 on b
    spec.mutable_launch()->mutable_placement()->add_workers("b");
    const auto together = simulate(spec);
    QCOMPARE(apart.evaluations.back().version, std::int64_t{20});
    QCOMPARE(together.evaluations.back().version, std::int64_t{20});
    QVERIFY2(std::abs(roundOf(apart) - 0.020) < 1e-6, qPrintable(QString::number(roundOf(apart), 'g', 10)));
    QVERIFY2(std::abs(roundOf(together) - 0.025) < 1e-6, qPrintable(QString::number(roundOf(together), 'g', 10)));
    // A way left unset delays nothing: two ASP workers on one host whose only link is its
    // uplink (of no cost), one 10 ms from the server and one 1 ms, make the updates of no
    // host link at all, at the same times.
    auto asp = baseSpec("asp", 2, 10);
    asp.mutable_cluster()->clear_count();
    for (double ms : {10.0, 1.0}) {
      auto* w = asp.mutable_cluster()->add_workers();
      w->mutable_speed()->set_base_iteration_ms(10);
      w->mutable_link()->set_latency_ms(ms);
    }
    asp.mutable_stop()->set_max_seconds(0.5);
    const auto plain = simulate(asp);
    auto* host = asp.mutable_launch()->add_hosts();
    host->set_name("a");
    host->mutable_uplink()->set_mbit(1e15);
    const auto uplinkOnly = simulate(asp);
    QCOMPARE(uplinkOnly.summary.updates, plain.summary.updates);
    QVERIFY(std::abs(uplinkOnly.evaluations.back().tS - plain.evaluations.back().tS) < 1e-6);
    // A real run's host link is the host's own: the field is refused there, naming it.
    spec.set_engine("real");
    spec.clear_sim();
    const auto refused = validateSpec(spec);
    QVERIFY(!refused);
    QVERIFY2(refused.message().find("launch.hosts[0].downlink") != std::string::npos, refused.message().c_str());
  }

  // A run that ends inside its first BSP round: the fast worker has waited since its push
  // (0.1 s) and the slow one (1 s an iteration) is still computing. Its waits in progress
  // count: 0.4 s waited of 0.4 + 0.1 + 0.5 s.
  void waitsInProgressAtTheEndCount() {
    auto spec = baseSpec("bsp", 2, 100);
    spec.mutable_cluster()->add_slowdowns(1);
    spec.mutable_cluster()->add_slowdowns(10);
    spec.mutable_stop()->set_max_seconds(0.5);
    const auto s = simulate(spec).summary;
    QCOMPARE(s.updates, std::int64_t{0});
    QVERIFY2(std::abs(s.waitFraction - 0.4) < 0.02, qPrintable(QString::number(s.waitFraction)));
  }

  void jitterIsReproducible() {
    auto spec = baseSpec("asp", 3);
    spec.mutable_cluster()->clear_count();
    for (int r = 0; r < 3; ++r) {
      auto* w = spec.mutable_cluster()->add_workers();
      w->mutable_speed()->set_base_iteration_ms(10);
      w->mutable_speed()->set_jitter(0.3);
    }
    spec = withDefaults(spec);
    const auto a = simulate(spec);
    const auto b = simulate(spec);
    QCOMPARE(a.summary.gradients, b.summary.gradients);
    QVERIFY(sameBits(a.summary.finalLoss, b.summary.finalLoss));
    QVERIFY(sameBits(a.summary.meanStaleness, b.summary.meanStaleness));
  }

  // One ASP worker: every iteration takes pull + compute + push + the server's take-in,
  // so version k is made at exactly k times that.
  void timeModelMatchesHandComputation() {
    auto spec = baseSpec("asp", 1, 10);
    spec.mutable_cluster()->mutable_link()->set_latency_ms(0.5);
    spec.mutable_cluster()->mutable_link()->set_mbit(800);  // 100 MB/s
    spec.mutable_sim()->set_push_overhead_ms(0.2);
    spec.mutable_sim()->set_apply_ns_per_param(2);
    spec.mutable_stop()->set_max_seconds(0);
    spec.mutable_stop()->set_max_updates(50);
    spec.mutable_evaluation()->set_every_s(0);
    spec.mutable_evaluation()->set_every_steps(10);
    auto c = computeFor(spec);
    const double p = static_cast<double>(c->compute.initialParameters.size());
    const double transfer = 0.0005 + p * 4 / 100e6;
    const double iteration = transfer + 0.010 + transfer;
    const double server = 0.0002 + p * 2e-9;
    const auto o = simulate(spec);
    QCOMPARE(o.summary.updates, std::int64_t{50});
    QCOMPARE(o.summary.stopReason, std::string("max_updates"));
    // Version 1 is made when the first push is taken in; every later one an iteration
    // plus a take-in later (the worker's pull is answered when the server is done).
    for (const auto& e : o.evaluations) {
      if (e.version == 0) continue;
      const double expected = iteration + static_cast<double>(e.version - 1) * (iteration + server);
      QVERIFY2(std::abs(e.tS - expected) < 1e-9,
               qPrintable(QString("v%1 at %2, expected %3").arg(e.version).arg(e.tS, 0, 'g', 12).arg(expected, 0, 'g', 12)));
    }
  }

  // Slowdowns 1, 1, 2, 4: BSP waits for the slowest every round; DASP lets the slow ones
  // push asynchronously and waits far less; ASP never waits.
  void strategiesShapeTheWaits() {
    auto make = [](const char* s) {
      auto spec = baseSpec(s, 4);
      for (double x : {1.0, 1.0, 2.0, 4.0}) spec.mutable_cluster()->add_slowdowns(x);
      spec.mutable_stop()->set_max_seconds(3.0);
      return spec;
    };
    const auto bsp = simulate(make("bsp")).summary;
    const auto dasp = simulate(make("dasp")).summary;
    const auto asp = simulate(make("asp")).summary;
    QVERIFY2(bsp.waitFraction > 0.4, qPrintable(QString::number(bsp.waitFraction)));
    QVERIFY2(dasp.waitFraction < bsp.waitFraction / 2, qPrintable(QString::number(dasp.waitFraction)));
    QVERIFY(asp.waitFraction < 0.01);
    QCOMPARE(bsp.meanStaleness, 0.0);
    QVERIFY(asp.meanStaleness > 0.5);
    // BSP: every update is one round of 4 gradients.
    QCOMPARE(bsp.applied, bsp.updates * 4);
    QVERIFY(asp.gradients > bsp.gradients);
  }

  // A scheduled speed change slows a node from then on, and is recorded as an event.
  void speedChangeInVirtualTime() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    auto spec = baseSpec("asp", 2);
    spec.mutable_cluster()->clear_count();
    for (int r = 0; r < 2; ++r) {
      auto* w = spec.mutable_cluster()->add_workers();
      w->mutable_speed()->set_base_iteration_ms(10);
    }
    auto* change = spec.mutable_cluster()->mutable_workers(1)->mutable_speed()->add_changes();
    change->set_at_s(1.0);
    change->set_slowdown(5);
    spec = withDefaults(spec);
    const auto o = simulate(spec, db);
    auto store = RunStore::open(db);
    QVERIFY(store);
    auto samples = store.value()->samples(o.summary.runId, "compute_s");
    QVERIFY(samples);
    int slowAfter = 0, fastBefore = 0;
    for (const auto& s : samples.value()) {
      if (s.node != "worker-1") continue;
      if (s.tS < 0.9) {
        QVERIFY(std::abs(s.value - 0.010) < 1e-12);
        ++fastBefore;
      }
      if (s.tS > 1.2) {
        QVERIFY(std::abs(s.value - 0.050) < 1e-12);
        ++slowAfter;
      }
    }
    QVERIFY(fastBefore > 50);
    QVERIFY(slowAfter > 10);
    auto events = store.value()->events(o.summary.runId);
    QVERIFY(events);
    bool recorded = false;
    for (const auto& e : events.value()) recorded = recorded || (e.kind == v1::RunEvent::SPEED && e.node == "worker-1" && e.tS == 1.0);
    QVERIFY(recorded);
  }

  // The server's gradient guard in virtual time: CLIP below every real norm clips each
  // gradient (an event each, and training goes on); a hard cap below every norm refuses
  // them all (no update is made, each refusal is an event).
  void gradientGuardAsTheServerApplies() {
    QTemporaryDir dir;
    for (const bool clip : {true, false}) {
      const std::string db = dir.filePath(clip ? "clip.sqlite" : "cap.sqlite").toStdString();
      auto spec = baseSpec("asp", 2);
      spec.mutable_stop()->set_max_seconds(0.5);
      auto* guard = spec.mutable_strategy()->mutable_gradient_guard();
      guard->set_mode(clip ? v1::GradientGuardSpec::CLIP : v1::GradientGuardSpec::REFUSE_OUTLIERS);
      guard->set_clip_norm(1e-4);
      guard->set_max_norm(clip ? 1e6 : 1e-9);
      const auto o = simulate(spec, db);
      auto store = RunStore::open(db);
      QVERIFY(store);
      int clipped = 0, refused = 0;
      for (const auto& e : store.value()->events(o.summary.runId).value()) {
        if (e.kind != v1::RunEvent::REJECT) continue;
        clipped += e.code == v1::RunEvent::GRADIENT_CLIPPED ? 1 : 0;
        refused += e.code == v1::RunEvent::GRADIENT_REFUSED ? 1 : 0;
        QVERIFY2(e.detail.find("gradient from worker") == 0, e.detail.c_str());
      }
      QVERIFY(o.summary.gradients > 50);
      // (A push that arrived as the run ended may not have been served.)
      if (clip) {
        QCOMPARE(static_cast<std::int64_t>(clipped), o.summary.applied);
        QVERIFY(o.summary.applied >= o.summary.gradients - 2);
        QCOMPARE(refused, 0);
      } else {
        QVERIFY(refused >= o.summary.gradients - 2);
        QCOMPARE(o.summary.updates, std::int64_t{0});
        QCOMPARE(clipped, 0);
      }
    }
  }

  // What a researcher finds in the store: the run as engine sim with every series.
  void storeHoldsTheRunLikeARealOne() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    auto spec = baseSpec("dasp", 4);
    for (double x : {1.0, 1.0, 2.0, 4.0}) spec.mutable_cluster()->add_slowdowns(x);
    spec.mutable_stop()->set_target_accuracy(0.5);
    const auto o = simulate(spec, db);
    auto store = RunStore::open(db);
    QVERIFY(store);
    auto run = store.value()->run(o.summary.runId);
    QVERIFY(run);
    QCOMPARE(run->engine, std::string("sim"));
    QCOMPARE(run->kind, std::string("sim"));
    QCOMPARE(run->status, RunStatus::Completed);
    QVERIFY(run->specJson.find("\"engine\":\"sim\"") != std::string::npos);
    auto evals = store.value()->evaluations(o.summary.runId);
    QVERIFY(evals);
    QCOMPARE(evals->size(), o.evaluations.size());
    auto intervals = store.value()->stateIntervals(o.summary.runId);
    QVERIFY(intervals && intervals->size() > 100);
    auto decisions = store.value()->decisions(o.summary.runId);
    QVERIFY(decisions && !decisions->empty());  // DASP partitions
    auto summary = store.value()->summary(o.summary.runId);
    QVERIFY(summary);
    bool engine = false, ttt = false;
    for (const auto& row : summary.value()) {
      engine = engine || (row.key == "engine" && row.text == "sim");
      ttt = ttt || (row.key == "time_to_target_s" && row.value && *row.value == *o.summary.timeToTargetS);
    }
    QVERIFY(engine);
    QVERIFY(ttt);
    auto nodes = store.value()->nodes(o.summary.runId);
    QVERIFY(nodes);
    QCOMPARE(nodes->size(), std::size_t{6});  // server, 4 workers, evaluator
    // Each worker's batch, a row per change (DASP's shares): the fast nodes' larger.
    auto batches = store.value()->samples(o.summary.runId, "batch_size");
    auto waits = store.value()->samples(o.summary.runId, "wait_s");
    QVERIFY(batches && waits);
    std::map<std::string, double> lastBatch;
    for (const auto& s : batches.value()) {
      QVERIFY2(lastBatch.count(s.node) == 0 || lastBatch[s.node] != s.value, s.node.c_str());
      lastBatch[s.node] = s.value;
    }
    QCOMPARE(lastBatch.size(), std::size_t{4});
    QVERIFY(batches->size() < waits->size());
    QVERIFY2(lastBatch["worker-0"] > lastBatch["worker-3"], std::to_string(lastBatch["worker-3"]).c_str());
  }

  // The compute cost is measured when no base iteration time is given, and written into
  // the stored spec so that rerunning the stored spec repeats the run.
  void measuredComputeGoesIntoTheSpec() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    auto spec = baseSpec("asp", 2, 0);
    spec.mutable_stop()->set_max_seconds(0.05);
    const auto o = simulate(spec, db);
    auto store = RunStore::open(db);
    auto run = store.value()->run(o.summary.runId);
    QVERIFY(run);
    auto stored = parseSpecJson(run->specJson, "stored");
    QVERIFY(stored);
    QVERIFY(stored->sim().compute_ms() > 0);
    const auto again = simulate(stored.value());
    const auto first = simulate(stored.value());
    QCOMPARE(again.summary.gradients, first.summary.gradients);
    QVERIFY(sameBits(again.summary.finalLoss, first.summary.finalLoss));
  }

  // A killed worker is marked down at once: BSP's rounds go on without it; restarted, it
  // joins again.
  void workerKillAndRestart() {
    auto spec = baseSpec("bsp", 4);
    auto* f = spec.add_faults();
    f->set_node("worker-2");
    f->set_at_s(0.5);
    f->set_restart_after_s(0.5);
    spec.mutable_sim()->set_restart_ms(100);
    const auto o = simulate(spec);
    QCOMPARE(o.summary.faults.size(), std::size_t{1});
    const auto& m = o.summary.faults.front();
    QCOMPARE(m.fault.node, std::string("worker-2"));
    QVERIFY(m.detectionS && *m.detectionS == 0.0);
    QVERIFY(m.downtimeS && *m.downtimeS < 0.05);  // the others go on at once
    QVERIFY(o.summary.updates > 150);             // ~10.5 ms rounds for 2 s, none stuck
  }

  // Server kill under each recovery mode, in virtual time.
  void serverKillRecovery_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<bool>("expectZeroLost");
    QTest::newRow("none") << int(v1::RecoverySpec::NONE) << false;
    QTest::newRow("checkpoint") << int(v1::RecoverySpec::CHECKPOINT) << false;
    QTest::newRow("chain") << int(v1::RecoverySpec::CHAIN) << true;
  }
  void serverKillRecovery() {
    QFETCH(int, mode);
    QFETCH(bool, expectZeroLost);
    auto spec = baseSpec("asp", 2);
    spec.mutable_recovery()->set_mode(static_cast<v1::RecoverySpec::Mode>(mode));
    spec.mutable_recovery()->set_checkpoint_every_updates(50);
    auto* f = spec.add_faults();
    f->set_node("server");
    f->set_at_s(1.0);
    f->set_restart_after_s(0.3);
    spec.mutable_stop()->set_max_seconds(3.0);
    spec = withDefaults(spec);
    const auto o = simulate(spec);
    QCOMPARE(o.summary.faults.size(), std::size_t{1});
    const auto& m = o.summary.faults.front();
    QVERIFY(m.updatesLost.has_value());
    QVERIFY(m.downtimeS.has_value());
    const auto before = m.fault.versionBefore;
    QVERIFY(before > 100);
    // Lost is counted against the highest version acknowledged to a worker (sent with a
    // released pull): at most the updates whose pulls were not yet answered behind it.
    QVERIFY(m.fault.ackedBefore.has_value());
    const auto acked = *m.fault.ackedBefore;
    QVERIFY2(acked <= before && acked >= before - 2, qPrintable(QStringLiteral("%1 %2").arg(acked).arg(before)));
    QCOMPARE(*m.updatesLost, std::max<std::int64_t>(0, acked - m.fault.versionAfter.value_or(0)));
    if (mode == v1::RecoverySpec::NONE) {
      QCOMPARE(*m.updatesLost, acked);
      QVERIFY(std::abs(*m.downtimeS - (0.3 + 0.5)) < 0.05);  // restart_after + restart_ms
    } else if (mode == v1::RecoverySpec::CHECKPOINT) {
      QVERIFY(*m.updatesLost < 50);
      QCOMPARE(*m.fault.versionAfter % 50, std::int64_t{0});
    } else {
      QVERIFY(expectZeroLost);
      QCOMPARE(*m.updatesLost, std::int64_t{0});
      QVERIFY2(*m.downtimeS < 0.3, qPrintable(QString::number(*m.downtimeS)));  // failover 250 ms
    }
    QVERIFY(o.summary.updates > 0);
  }

  // A paused worker is declared down after barrier_timeout_s of silence, then rejoins.
  void pausedWorkerIsMarkedDownThenRejoins() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    auto spec = baseSpec("bsp", 3);
    spec.mutable_strategy()->set_barrier_timeout_s(0.2);
    auto* f = spec.add_faults();
    f->set_node("worker-1");
    f->set_action(v1::FaultSpec::PAUSE);
    f->set_at_s(0.5);
    f->set_restart_after_s(0.6);
    const auto o = simulate(spec, db);
    auto store = RunStore::open(db);
    auto events = store.value()->events(o.summary.runId);
    QVERIFY(events);
    bool down = false, up = false;
    for (const auto& e : events.value()) {
      if (e.node == "worker-1" && e.code == v1::RunEvent::NODE_DOWN && e.detail.rfind("DOWN", 0) == 0) down = true;
      if (e.node == "worker-1" && e.code == v1::RunEvent::NODE_UP && e.detail.rfind("UP", 0) == 0) up = true;
    }
    QVERIFY(down);
    QVERIFY(up);
    QVERIFY(o.summary.updates > 100);
  }

  // A worker paused while its push waits in a paused server's queue keeps its place: when
  // both resume it is served and goes on iterating (it used to be forgotten).
  void overlappingServerAndWorkerPauses() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    auto spec = baseSpec("asp", 3);
    spec.mutable_stop()->set_max_seconds(3.0);
    auto* server = spec.add_faults();
    server->set_node("server");
    server->set_action(v1::FaultSpec::PAUSE);
    server->set_at_s(0.5);
    server->set_restart_after_s(1.0);
    auto* worker = spec.add_faults();
    worker->set_node("worker-1");
    worker->set_action(v1::FaultSpec::PAUSE);
    worker->set_at_s(0.6);
    worker->set_restart_after_s(0.4);
    const auto o = simulate(spec, db);
    auto store = RunStore::open(db);
    auto samples = store.value()->samples(o.summary.runId, "compute_s");
    QVERIFY(samples);
    int late = 0;
    for (const auto& x : samples.value()) late += x.node == "worker-1" && x.tS > 2.0 ? 1 : 0;
    QVERIFY2(late > 50, qPrintable(QString::number(late)));  // ~10.5 ms iterations for 1 s
  }

  // A server kill under STATELESS: the workers compute on through the outage into their
  // backlogs (bounded), the restarted server adopts the highest version they hold (so it
  // loses none of what it acknowledged), and each backlog is applied in one step by the
  // rule: SUM and MEAN take the same steps in the same order, with other weights.
  void statelessKeepsTheOutagesGradients() {
    QTemporaryDir dir;
    auto run = [&](v1::RecoverySpec::BacklogRule rule, int bound, const std::string& name) {
      auto spec = baseSpec("asp", 2);
      spec.mutable_recovery()->set_mode(v1::RecoverySpec::STATELESS);
      spec.mutable_recovery()->set_backlog_rule(rule);
      if (bound > 0) spec.mutable_recovery()->set_backlog_max_gradients(bound);
      auto* f = spec.add_faults();
      f->set_node("server");
      f->set_at_s(1.0);
      f->set_restart_after_s(0.3);
      spec.mutable_stop()->set_max_seconds(3.0);
      const std::string db = dir.filePath(QString::fromStdString(name + ".sqlite")).toStdString();
      const auto o = simulate(withDefaults(spec), db);
      auto events = RunStore::open(db).value()->events(o.summary.runId).value();
      int adopted = 0, backlogs = 0;
      for (const auto& e : events) {
        adopted += e.code == v1::RunEvent::ADOPTED ? 1 : 0;
        backlogs += e.code == v1::RunEvent::BACKLOG ? 1 : 0;
      }
      return std::make_tuple(o, adopted, backlogs);
    };
    const auto [sum, sumAdopted, sumBacklogs] = run(v1::RecoverySpec::SUM, 0, "sum");
    QCOMPARE(sum.summary.faults.size(), std::size_t{1});
    const auto& m = sum.summary.faults.front();
    QCOMPARE(sumAdopted, 1);
    QCOMPARE(sumBacklogs, 2);  // one step per worker
    QVERIFY(m.fault.versionAfter && *m.fault.versionAfter > 50);
    QVERIFY(m.updatesLost && *m.updatesLost == 0);
    // 0.8 s down (0.3 s + restart_ms) at about 10 ms an iteration, for each worker.
    QVERIFY2(m.fault.gradientsDuringOutage > 2 * 60, qPrintable(QString::number(m.fault.gradientsDuringOutage)));
    QCOMPARE(m.fault.gradientsDropped, std::int64_t{0});
    QVERIFY(sum.summary.updates > *m.fault.versionAfter + 50);  // training went on
    const auto [mean, meanAdopted, meanBacklogs] = run(v1::RecoverySpec::MEAN, 0, "mean");
    const auto& mm = mean.summary.faults.front();
    QCOMPARE(mm.fault.versionAfter, m.fault.versionAfter);
    QCOMPARE(mm.fault.gradientsDuringOutage, m.fault.gradientsDuringOutage);
    QVERIFY(!sameBits(mean.summary.finalLoss, sum.summary.finalLoss));
    // The bound keeps each worker's newest 5; the rest are dropped and counted.
    const auto [bounded, boundedAdopted, boundedBacklogs] = run(v1::RecoverySpec::SUM, 5, "bounded");
    const auto& b = bounded.summary.faults.front();
    QCOMPARE(b.fault.gradientsDuringOutage, m.fault.gradientsDuringOutage);
    QCOMPARE(b.fault.gradientsDropped, m.fault.gradientsDuringOutage - 2 * 5);
  }

  void errorsNameWhatIsNotModelled() {
    auto spec = baseSpec("asp", 2);
    auto* f = spec.add_faults();
    f->set_node("evaluator");
    f->set_at_s(1);
    auto c = computeFor(spec);
    auto r = runSimulation(spec, c->compute, SimOptions());
    QVERIFY(!r);
    QVERIFY2(r.message().find("faults[0].node") != std::string::npos, r.message().c_str());
    spec.clear_faults();
    spec.set_engine("real");
    r = runSimulation(spec, c->compute, SimOptions());
    QVERIFY(!r);
    QVERIFY(r.message().find("engine") != std::string::npos);
    spec.set_engine("warp");
    QVERIFY(!validateSpec(spec));
    spec.set_engine("sim");
    spec.mutable_cluster()->mutable_link()->set_mbit(0);
    const auto st = validateSpec(spec);
    QVERIFY(!st);
    QVERIFY(st.message().find("cluster.link.mbit") != std::string::npos);
  }

  // Many workers in policy-only mode: the engine stays cheap per event.
  void thousandWorkers() {
    auto spec = baseSpec("dasp", 1024);
    for (double x : {1.0, 1.0, 2.0, 4.0}) spec.mutable_cluster()->add_slowdowns(x);
    spec.mutable_stop()->set_max_seconds(0.3);
    spec.mutable_evaluation()->set_every_s(0.1);
    const auto o = simulate(spec);
    QCOMPARE(o.summary.workers, 1024);
    // 1024 pushes every 10 ms need 51 ms of server time (push_overhead_ms 0.05): the
    // server, not the workers, bounds the throughput.
    const double capacity = 0.3 / (spec.sim().push_overhead_ms() / 1000.0);
    QVERIFY2(o.summary.gradients > 0.8 * capacity && o.summary.gradients < capacity + 1024,
             qPrintable(QString::number(o.summary.gradients)));
    qInfo("1024 workers: %lld events in %.2f s wall", static_cast<long long>(o.summary.simEvents), o.summary.wallS);
  }
};

QTEST_GUILESS_MAIN(TestSimEngine)
#include "tst_sim_engine.moc"
