// SPDX-License-Identifier: MIT
// The cluster profile (core/results/cluster_profile.h): known speeds and a speed change
// recovered from a scripted run's recorded iterations, with ±10 % noise on every
// iteration; batches that change without the speed (DASP's shares) are no speed change;
// the engine's cluster from it (a real run's link from its pull and push times); the
// server's apply and serve times from its load periods; a host's shared link from its
// workers' transfers at once and alone; and the errors of a run too short or without
// iterations.
#include "core/results/cluster_profile.h"

#include <QtTest>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

using namespace dasp;

namespace {

// A worker's iterations from t = 0 to `end`: `msPerSample` (after `changeAt`,
// `msAfter`) × its batch, each drawn ±10 % by a fixed pattern; compute and emulated
// halves recorded as a real worker records them, and its PULL and PUSH intervals.
void record(std::vector<SampleRow>& samples, std::vector<StateIntervalRow>& intervals, const std::string& node,
            double msPerSample, double changeAt, double msAfter, double end, double batch, double batchAfter = 0) {
  double t = 0;
  int i = 0;
  samples.push_back({1, node, "batch_size", 0.0, 0, batch});
  bool changedBatch = false;
  while (t < end) {
    if (batchAfter > 0 && !changedBatch && t >= end / 2) {
      samples.push_back({1, node, "batch_size", t + 1e-6, i, batchAfter});
      batch = batchAfter;
      changedBatch = true;
    }
    const double ms = (t < changeAt ? msPerSample : msAfter) * (1.0 + 0.1 * std::sin(1.7 * i));
    const double iteration = ms * batch / 1000;
    intervals.push_back({1, node, "PULL", "SYNC", t, t + 0.002});
    intervals.push_back({1, node, "COMPUTE", "SYNC", t + 0.002, t + 0.002 + iteration});
    intervals.push_back({1, node, "PUSH", "SYNC", t + 0.002 + iteration, t + 0.005 + iteration});
    t += 0.005 + iteration;
    samples.push_back({1, node, "compute_s", t, i, iteration / 2});
    samples.push_back({1, node, "emulated_s", t, i, iteration / 2});
    ++i;
  }
}

bool near(double a, double b, double tolerance) { return std::abs(a / b - 1) <= tolerance; }

}  // namespace

class TestClusterProfile : public QObject {
  Q_OBJECT

 private slots:
  void recoversSpeedsAndAChange() {
    std::vector<SampleRow> samples;
    std::vector<StateIntervalRow> intervals;
    record(samples, intervals, "worker-0", 0.5, 1e9, 0.5, 20, 64);
    record(samples, intervals, "worker-1", 1.0, 8.0, 3.0, 20, 64);          // 3x slower from 8 s
    record(samples, intervals, "worker-10", 2.0, 1e9, 2.0, 20, 64, 16);     // batch 64 -> 16, same speed
    auto profile = measureProfile(1, samples, intervals, 64);
    QVERIFY2(profile, profile.message().c_str());
    QCOMPARE(profile->workers.size(), std::size_t{3});
    QCOMPARE(profile->workers[2].name, std::string("worker-10"));  // after worker-1, not between
    const NodeProfile& fast = profile->workers[0];
    QCOMPARE(fast.segments.size(), std::size_t{1});
    QVERIFY2(near(fast.segments[0].secondsPerSample, 0.5e-3, 0.05), std::to_string(fast.segments[0].secondsPerSample).c_str());
    QVERIFY(near(fast.pullS, 0.002, 1e-6) && near(fast.pushS, 0.003, 1e-6));
    // The change: found, placed within an iteration of 8 s, both speeds within 5 %.
    const NodeProfile& changed = profile->workers[1];
    QCOMPARE(changed.segments.size(), std::size_t{2});
    QVERIFY(near(changed.segments[0].secondsPerSample, 1.0e-3, 0.05));
    QVERIFY(near(changed.segments[1].secondsPerSample, 3.0e-3, 0.05));
    const double iteration = 1.1 * 3.0e-3 * 64 + 0.005;  // the longest at the slow speed
    QVERIFY2(std::abs(changed.segments[1].fromS - 8.0) <= iteration, std::to_string(changed.segments[1].fromS).c_str());
    QCOMPARE(changed.segments[0].iterations + changed.segments[1].iterations, changed.iterations);
    // A smaller batch at the same cost per sample is no speed change.
    QCOMPARE(profile->workers[2].segments.size(), std::size_t{1});
    QVERIFY(near(profile->workers[2].segments[0].secondsPerSample, 2.0e-3, 0.05));

    // The engine's cluster: the base time at the spec's batch, the change as a slowdown.
    v1::ExperimentSpec spec;
    spec.set_batch_size(64);
    spec.mutable_cluster()->set_count(3);
    spec.mutable_cluster()->add_slowdowns(7);
    const v1::ClusterSpec cluster = profileCluster(profile.value(), spec);
    QVERIFY(!cluster.has_count() && cluster.slowdowns_size() == 0);
    QCOMPARE(cluster.workers_size(), 3);
    QVERIFY(near(cluster.workers(0).speed().base_iteration_ms(), 0.5 * 64, 0.05));
    QCOMPARE(cluster.workers(1).speed().changes_size(), 1);
    QVERIFY(near(cluster.workers(1).speed().changes(0).slowdown(), 3.0, 0.08));
    QCOMPARE(cluster.workers(1).speed().changes(0).at_s(), changed.segments[1].fromS);
    // A real run's link: each call's mean (2 ms pull, 3 ms push) as its latency, the
    // bytes in it; an engine run keeps its spec's link.
    QVERIFY(near(cluster.workers(0).link().latency_ms(), 2.5, 1e-6));
    QCOMPARE(cluster.workers(0).link().mbit(), kUnboundedMbit);
    spec.set_engine("sim");
    QVERIFY(!profileCluster(profile.value(), spec).workers(0).has_link());
    const std::string json = profileJson(profile.value());
    QVERIFY(json.find("\"name\":\"worker-1\"") != std::string::npos);
    QVERIFY(json.find("\"seconds_per_sample\":") != std::string::npos);
  }

  void serverLoadFromItsPeriods() {
    // The server's load periods (1 s each, from 1 s): 2 ms applying and 5 ms serving each;
    // 10 gradients applied and 5 pushes taken in per period, and more outside the periods
    // (before the first), which are not counted.
    std::vector<SampleRow> samples;
    std::vector<StateIntervalRow> intervals;
    record(samples, intervals, "worker-0", 0.5, 1e9, 0.5, 20, 64);
    for (int p = 0; p < 4; ++p) {
      const double end = 2.0 + p;
      samples.push_back({1, "server", "shard_period_s", end, 0, 1.0});
      samples.push_back({1, "server", "shard_apply_s", end, 0, 0.002});
      samples.push_back({1, "server", "shard_serve_s", end, 0, 0.005});
      for (int g = 0; g < 10; ++g) samples.push_back({1, "worker-0", "staleness", end - 0.05 - 0.09 * g, 0, 0});
      for (int w = 0; w < 5; ++w) samples.push_back({1, "worker-0", "wait_s", end - 0.1 - 0.15 * w, 0, 0});
    }
    samples.push_back({1, "worker-0", "staleness", 0.5, 0, 0});  // before the first period
    samples.push_back({1, "worker-0", "wait_s", 0.5, 0, 0});
    auto profile = measureProfile(1, samples, intervals, 64);
    QVERIFY2(profile, profile.message().c_str());
    const ServerLoad& load = profile->server;
    QCOMPARE(load.gradients, std::int64_t{40});
    QCOMPARE(load.pushes, std::int64_t{20});
    QVERIFY(near(load.coveredS, 4.0, 1e-9));
    QVERIFY(near(load.applySPerGradient, 0.008 / 40, 1e-9));
    QVERIFY(near(load.serveSPerPush, 0.020 / 20, 1e-9));
    // The engine's server: the apply per parameter of shard 0's share, the serve per push.
    v1::ExperimentSpec spec;
    spec.set_batch_size(64);
    spec.mutable_ps()->set_shards(2);
    const v1::ExperimentSpec measured = measuredSpec(profile.value(), spec, 1000);
    QVERIFY(near(measured.sim().apply_ns_per_param(), 1e9 * (0.008 / 40) / 500, 1e-9));
    QVERIFY(near(measured.sim().push_overhead_ms(), 1.0, 1e-9));
    // Without the model's size the apply keeps the engine's default; without periods both do.
    QVERIFY(!measuredSpec(profile.value(), spec).sim().has_apply_ns_per_param());
    ClusterProfile none = profile.value();
    none.server = ServerLoad{};
    QVERIFY(!measuredSpec(none, spec, 1000).has_sim());
    QVERIFY(profileJson(profile.value()).find("\"serve_s_per_push\":0.001") != std::string::npos);
  }

  // The evaluator's CPU time over its evaluations; nothing without the evaluator's row or
  // an evaluation (an engine run), and the profile's JSON carries it.
  void evaluationCostFromTheEvaluatorsCpu() {
    std::vector<NodeRow> nodes(3);
    nodes[0].node = "server";
    nodes[0].cpuS = 5.8;
    nodes[1].node = "worker-0";
    nodes[1].cpuS = 9.9;
    nodes[2].node = "evaluator";
    nodes[2].cpuS = 29.0;
    const EvaluationCost cost = measureEvaluationCost(nodes, 25);
    QCOMPARE(cost.evaluations, std::int64_t{25});
    QVERIFY(near(cost.cpuSPerEvaluation, 29.0 / 25, 1e-12));
    QVERIFY(near(cost.cpuS, 29.0, 1e-12));
    QCOMPARE(measureEvaluationCost(nodes, 0).cpuSPerEvaluation, 0.0);
    nodes.pop_back();
    QCOMPARE(measureEvaluationCost(nodes, 25).evaluations, std::int64_t{0});
    ClusterProfile profile;
    profile.evaluation = cost;
    const std::string json = profileJson(profile);
    QVERIFY2(json.find("\"evaluation\":{\"evaluations\":25,") != std::string::npos, json.c_str());
    QVERIFY2(json.find("\"cpu_s_per_evaluation\":1.16") != std::string::npos, json.c_str());
  }

  // What a run stores is read back whole: the same document again, every field.
  void profileJsonRoundTrips() {
    ClusterProfile profile;
    profile.runId = 7;
    profile.workers.push_back({"worker-0", {{0, 4.5, 0.00125, 40}, {4.5, 9.0, 0.0025, 36}}, 0.0011, 0.0009, 76});
    profile.workers.push_back({"worker \"1\"", {{0, 9.0, 0.001, 90}}, 0, 0, 90});
    profile.server = {0.00005, 0.0004, 8.0, 166, 160};
    profile.evaluation = {25, 1.16, 29.0};
    profile.hostLinks.push_back({"b", {"worker-1", "worker-3"}, {60, 30, 0.017, 0.016}, {60, 0, 0, 0}, {0.016, 0}});
    const std::string json = profileJson(profile);
    auto back = parseProfileJson(json);
    QVERIFY2(back, back.message().c_str());
    QCOMPARE(profileJson(back.value()), json);
    QCOMPARE(back->workers.size(), std::size_t{2});
    QCOMPARE(back->workers[1].name, std::string("worker \"1\""));
    QCOMPARE(back->workers[0].segments[1].iterations, std::int64_t{36});
    QCOMPARE(back->workers[0].segments[1].secondsPerSample, 0.0025);
    QCOMPARE(back->server.pushes, std::int64_t{160});
    QCOMPARE(back->evaluation.cpuSPerEvaluation, 1.16);
    QCOMPARE(back->hostLinks.size(), std::size_t{1});
    QCOMPARE(back->hostLinks[0].workers[1], std::string("worker-3"));
    QCOMPARE(back->hostLinks[0].down.linkS, 0.016);
    QCOMPARE(back->hostLinks[0].queuedS[0], 0.016);
    for (const char* bad : {"not json", "{}", R"({"workers":[{"name":"w","segments":[]}]})"}) {
      QVERIFY2(!parseProfileJson(bad), bad);
    }
  }

  // Hetero-4 on two hosts as the shaped-link validation measured it: workers 1 and 3
  // behind one link that takes a pull 16 ms, one at a time (1 ms of call besides), workers 0
  // and 2 behind one that is not their cost (3 ms a call, at once or not). BSP's pulls leave
  // together, its pushes (2 ms) one by one: host b's pulls end 17 and 33 ms after they
  // leave, host a's together.
  void sharedHostLinkFromTransfersAtOnce() {
    std::vector<StateIntervalRow> intervals;
    for (int r = 0; r < 30; ++r) {
      const double t = 0.1 * r;
      intervals.push_back({1, "worker-3", "PULL", "SYNC", t, t + 0.017});
      intervals.push_back({1, "worker-1", "PULL", "SYNC", t, t + 0.033});
      intervals.push_back({1, "worker-1", "PUSH", "SYNC", t + 0.050, t + 0.052});
      intervals.push_back({1, "worker-3", "PUSH", "SYNC", t + 0.075, t + 0.077});
      for (const char* w : {"worker-0", "worker-2"}) intervals.push_back({1, w, "PULL", "SYNC", t, t + 0.003});
      // Host c: pulls of 10 ms that only overlap, 5 ms apart: they end apart, but not later.
      intervals.push_back({1, "worker-4", "PULL", "SYNC", t, t + 0.010});
      intervals.push_back({1, "worker-5", "PULL", "SYNC", t + 0.005, t + 0.015});
      intervals.push_back({1, "worker-0", "PUSH", "SYNC", t + 0.040, t + 0.043});
      intervals.push_back({1, "worker-2", "PUSH", "SYNC", t + 0.060, t + 0.063});
    }
    ClusterProfile profile;
    profile.runId = 1;
    for (const auto& [w, pull, push] : std::vector<std::tuple<const char*, double, double>>{
             {"worker-0", 0.003, 0.003}, {"worker-1", 0.033, 0.002}, {"worker-2", 0.003, 0.003}, {"worker-3", 0.017, 0.002},
             {"worker-4", 0.010, 0.002}, {"worker-5", 0.010, 0.002}}) {
      profile.workers.push_back({w, {{0, 3, 0.0005, 30}}, pull, push, 30});
    }
    std::vector<NodeRow> nodes;
    for (const auto& [node, host] : std::vector<std::pair<std::string, std::string>>{
             {"worker-0", "a"}, {"worker-1", "b"}, {"worker-2", "a"}, {"worker-3", "b"}, {"worker-4", "c"},
             {"worker-5", "c"}, {"server", "s"}}) {
      NodeRow row;
      row.node = node;
      row.host = host;
      nodes.push_back(row);
    }
    profile.hostLinks = measureHostLinks(profile, nodes, intervals);
    QCOMPARE(profile.hostLinks.size(), std::size_t{3});
    const HostLinkProfile& a = profile.hostLinks[0];
    const HostLinkProfile& b = profile.hostLinks[1];
    const HostLinkProfile& c = profile.hostLinks[2];
    QCOMPARE(c.down.queues, std::int64_t{30});
    QVERIFY2(std::abs(c.down.linkS) < 1e-9 && !c.down.shared(), qPrintable(QString::number(c.down.linkS)));
    QCOMPARE(a.host, std::string("a"));
    QCOMPARE(b.host, std::string("b"));
    QCOMPARE(b.down.transfers, std::int64_t{60});
    QCOMPARE(b.down.queues, std::int64_t{30});
    QVERIFY2(std::abs(b.down.linkS - 0.016) < 1e-9 && std::abs(b.down.firstS - 0.017) < 1e-9,
             qPrintable(QString("%1 %2").arg(b.down.linkS).arg(b.down.firstS)));
    QVERIFY(b.down.shared());
    QCOMPARE(b.up.queues, std::int64_t{0});
    QVERIFY(!b.up.shared());
    // worker-1's pulls waited a link-time behind worker-3's.
    QCOMPARE(b.workers, (std::vector<std::string>{"worker-1", "worker-3"}));
    QVERIFY(std::abs(b.queuedS[0] - 0.016) < 1e-9 && std::abs(b.queuedS[1]) < 1e-9);
    QCOMPARE(a.down.queues, std::int64_t{30});
    QVERIFY2(std::abs(a.down.linkS) < 1e-9, qPrintable(QString::number(a.down.linkS)));
    QVERIFY(!a.down.shared() && !a.up.shared());

    // The engine's cluster: host b's downlink carries 100,000 parameters (3.2 Mbit) in 16 ms,
    // 200 Mbit/s, and its workers' own links keep the rest, (pull + push − queued − 16 ms) / 2
    // each way; host a gets no link, and its workers the mean of their calls.
    v1::ExperimentSpec spec;
    spec.set_engine("real");
    spec.set_batch_size(64);
    for (const char* h : {"s", "a", "b"}) spec.mutable_launch()->add_hosts()->set_name(h);
    for (const char* h : {"a", "b"}) spec.mutable_launch()->mutable_placement()->add_workers(h);
    const auto measured = measuredSpec(profile, spec, 100'000);
    QVERIFY(!measured.launch().hosts(1).has_downlink() && !measured.launch().hosts(1).has_uplink());
    QVERIFY(measured.launch().hosts(2).has_downlink() && !measured.launch().hosts(2).has_uplink());
    QVERIFY2(std::abs(measured.launch().hosts(2).downlink().mbit() - 200) < 1e-6,
             qPrintable(QString::number(measured.launch().hosts(2).downlink().mbit())));
    for (int w : {1, 3}) {
      const double ms = measured.cluster().workers(w).link().latency_ms();
      QVERIFY2(std::abs(ms - 1.5) < 1e-9, qPrintable(QString::number(ms)));
    }
    QCOMPARE(measured.cluster().workers(0).link().latency_ms(), 3.0);
    // Without the parameter count there are no bytes to give the link a rate: none is set.
    QVERIFY(!measuredSpec(profile, spec, 0).launch().hosts(2).has_downlink());
  }

  // The measured cluster lists the workers in the spec's rank order, whatever their
  // names, so that launch.placement.workers (by rank) puts each on its own host.
  void measuredClusterKeepsTheSpecsRankOrder() {
    v1::ExperimentSpec spec;
    spec.set_engine("real");
    spec.set_batch_size(32);
    for (const char* name : {"slow", "fast", "worker-10", "worker-9"}) spec.mutable_cluster()->add_workers()->set_name(name);
    ClusterProfile profile;
    for (const char* w : {"fast", "slow", "worker-9", "worker-10"}) profile.workers.push_back({w, {{0, 3, 0.001, 30}}, 0, 0, 30});
    const auto cluster = profileCluster(profile, spec);
    QCOMPARE(cluster.workers_size(), 4);
    for (int r = 0; r < 4; ++r) QCOMPARE(cluster.workers(r).name(), spec.cluster().workers(r).name());
  }

  void badRunsAreNamed() {
    std::vector<SampleRow> samples;
    std::vector<StateIntervalRow> intervals;
    auto none = measureProfile(7, samples, intervals, 64);
    QVERIFY(!none);
    QVERIFY2(none.message().find("run 7 has no iterations recorded") != std::string::npos, none.message().c_str());
    record(samples, intervals, "worker-0", 0.5, 1e9, 0.5, 20, 64);
    record(samples, intervals, "worker-1", 5.0, 1e9, 5.0, 0.5, 64);  // 2 iterations
    auto shortRun = measureProfile(7, samples, intervals, 64);
    QVERIFY(!shortRun);
    QVERIFY2(shortRun.message().find("worker-1 has 2 iterations recorded") != std::string::npos, shortRun.message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestClusterProfile)
#include "tst_cluster_profile.moc"
