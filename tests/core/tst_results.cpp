// SPDX-License-Identifier: MIT
// The evidence pipeline: best learning rate per strategy, heterogeneity cost, the results
// tables, the generated blocks of the docs, and the homogeneous-equivalent reference.
#include "core/spec/reference_cluster.h"
#include "core/results/paper_table.h"
#include "core/results/results_table.h"
#include "core/spec/spec.h"

#include <QtTest>

#include <cmath>
#include <optional>

using namespace dasp;

namespace {

v1::RunResult run(const std::string& label, double lr, std::uint64_t seed, std::optional<double> ttt,
                  double accuracy = 0.86) {
  v1::RunResult r;
  r.set_label(label);
  r.set_lr(lr);
  r.set_seed(seed);
  r.set_target(0.85);
  if (ttt) r.set_time_to_target_s(*ttt);
  r.set_final_accuracy(accuracy);
  return r;
}

ExperimentSpec hetero4() {
  ExperimentSpec s;
  s.mutable_cluster()->set_count(4);
  for (double x : {1.0, 1.0, 2.0, 4.0}) s.mutable_cluster()->add_slowdowns(x);
  s.mutable_cluster()->set_base_iteration_ms(20);
  s.mutable_strategy()->set_name("dasp");
  return withDefaults(s);
}

}  // namespace

class TestResults : public QObject {
  Q_OBJECT

 private slots:
  void bestRateIsTheFastestThatAlwaysReaches() {
    std::vector<v1::RunResult> runs;
    // lr 0.02 is faster but one seed never reaches the target: 0.01 wins.
    for (std::uint64_t s : {1, 2, 3}) runs.push_back(run("bsp", 0.01, s, 10.0 + static_cast<double>(s)));
    runs.push_back(run("bsp", 0.02, 1, 5.0));
    runs.push_back(run("bsp", 0.02, 2, std::nullopt));
    runs.push_back(run("bsp", 0.02, 3, 6.0));
    for (std::uint64_t s : {1, 2, 3}) runs.push_back(run("asp", 0.005, s, 20.0));
    for (std::uint64_t s : {1, 2, 3}) runs.push_back(run("asp", 0.01, s, 20.0, 0.87));  // tie: accuracy
    const auto rows = bestByStrategy(runs);
    QCOMPARE(rows.size(), std::size_t{2});
    QCOMPARE(rows[0].label, std::string("bsp"));
    QCOMPARE(rows[0].lr, 0.01);
    QCOMPARE(rows[0].timeToTarget.mean, 12.0);
    QCOMPARE(rows[0].timeToTarget.sd, 1.0);
    QCOMPARE(rows[0].lrsTried, (std::vector<double>{0.01, 0.02}));
    QCOMPARE(rows[1].lr, 0.01);
  }

  void heterogeneityCostAgainstTheReferenceMean() {
    std::vector<v1::RunResult> runs;
    for (std::uint64_t s : {1, 2}) runs.push_back(run("reference", 0.01, s, s == 1 ? 4.0 : 6.0));
    runs.push_back(run("dasp", 0.01, 1, 6.0));
    runs.push_back(run("asp", 0.01, 1, std::nullopt));
    fillHeterogeneityCost(runs);
    QCOMPARE(runs[2].heterogeneity_cost(), 1.2);
    QVERIFY(!runs[3].has_heterogeneity_cost());
    const auto table = suiteTableMarkdown(runs);
    QVERIFY2(table.find("| dasp | 0.01 | 1 | 6.0 ± 0.0 | 1.20 ± 0.00 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("never (0/1)") != std::string::npos, table.c_str());
    // One rate per strategy: the note says so instead of naming a grid.
    QVERIFY2(table.find("the one learning rate of its lr column") != std::string::npos, table.c_str());
  }

  void matrixMarksTheFastestAndJudgesDasp() {
    std::vector<v1::RunResult> a;
    for (std::uint64_t s : {1, 2, 3}) {
      a.push_back(run("bsp", 0.01, s, 20.0 + static_cast<double>(s)));
      a.push_back(run("backup(1)", 0.01, s, 10.0 + static_cast<double>(s)));
      a.push_back(run("dasp", 0.02, s, 12.0));
    }
    const auto table = matrixTableMarkdown({{"case-a", a}});
    QVERIFY2(table.find("**12.0 ± 1.0 @0.01**") != std::string::npos, table.c_str());
    // DASP 12.0 ≤ backup's 12.0 + 1.0: within one std.
    QVERIFY2(table.find("yes (best other: backup(1))") != std::string::npos, table.c_str());
    // DASP ÷ BSP = 12 / 22, DASP ÷ backup(1) = 12 / 12.
    QVERIFY2(table.find("| 0.55 | 1.00 |") != std::string::npos, table.c_str());
  }

  void diagnosisCountsPerUpdateAndPerSecond() {
    std::vector<v1::RunResult> a;
    for (std::uint64_t s : {1, 2}) {
      auto r = run("dasp", 0.01, s, 5.0);
      r.set_seconds(10);
      r.set_updates(s == 1 ? 100 : 300);  // 10 and 30 per second
      r.set_epochs(s == 1 ? 1.0 : 2.0);     // 0.1 and 0.2 per second
      r.set_gradients(s == 1 ? 400 : 900);
      r.set_dropped(s == 1 ? 4 : 9);  // 1 per 100 gradients
      r.set_mean_staleness(0.5);
      r.set_max_staleness(s == 1 ? 1 : 3);
      a.push_back(r);
    }
    a[1].set_speed_change_dip(1.5);
    const auto table = diagnosisTableMarkdown({{"case-a", a}});
    QVERIFY2(table.find("| case-a | dasp | 0.01 | 20.0 ± 14.1 | 0.150 ± 0.071 | 3.50 ± 0.71 | 1.0 ± 0.0 | 0.00 ± 0.00 | 0.50 ± 0.00 | 3 | 1.5 |") !=
                 std::string::npos,
             table.c_str());
  }

  void shardsTableNamesEachShardCount() {
    std::vector<v1::RunResult> a;
    for (std::uint64_t s : {1, 2}) {
      for (int shards : {1, 16}) {
        auto r = run(shards == 1 ? "bsp S=1" : "bsp S=16", 0.01, s, shards == 1 ? 8.0 : 2.0);
        r.set_shards(shards);
        r.set_seconds(4);
        r.set_updates(shards == 1 ? 8 : 40);  // 2 and 10 per second
        r.set_wait_fraction(shards == 1 ? 0.9 : 0.3);
        a.push_back(r);
      }
    }
    const auto table = shardsTableMarkdown({{"case-a", a}});
    QVERIFY2(table.find("| case-a | bsp S=1 | 1 | 8.0 ± 0.0 | 2.0 ± 0.0 | 0.90 ± 0.00 |") != std::string::npos,
             table.c_str());
    QVERIFY2(table.find("| case-a | bsp S=16 | 16 | 2.0 ± 0.0 | 10.0 ± 0.0 | 0.30 ± 0.00 |") !=
                 std::string::npos,
             table.c_str());
  }

  void validationCountsSeparatedPairs() {
    std::vector<v1::RunResult> real, sim;
    for (std::uint64_t s : {1, 2, 3}) {
      real.push_back(run("bsp", 0.01, s, 20.0 + static_cast<double>(s)));
      real.push_back(run("dasp", 0.01, s, 10.0 + static_cast<double>(s)));
      sim.push_back(run("bsp", 0.01, s, 19.0));
      sim.push_back(run("dasp", 0.01, s, 9.0));
    }
    const auto table = validationTableMarkdown(real, sim);
    QVERIFY2(table.find("| bsp | 22.0 ± 1.0 | 19.0 ± 0.0 | 0.86 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("separate 1 pairs") != std::string::npos && table.find("orders 1 of them") != std::string::npos,
             table.c_str());
    // A strategy the engine does not always bring to the target ranks after one it does.
    for (std::uint64_t s : {1, 2, 3}) {
      real.push_back(run("dssp", 0.01, s, 40.0 + static_cast<double>(s)));
      sim.push_back(run("dssp", 0.01, s, s == 2 ? std::nullopt : std::optional<double>(30.0)));
    }
    const auto withNever = validationTableMarkdown(real, sim);
    QVERIFY2(withNever.find("separate 3 pairs") != std::string::npos &&
                 withNever.find("orders 3 of them") != std::string::npos,
             withNever.c_str());
  }

  void predictionCountsStrategiesWithinTolerance() {
    std::vector<v1::RunResult> real, predicted, measured;
    auto withRate = [](v1::RunResult r, std::int64_t updates) {
      r.set_updates(updates);
      r.set_seconds(10);
      return r;
    };
    for (std::uint64_t s : {1, 2, 3}) {
      real.push_back(run("bsp", 0.01, s, 20.0));
      real.push_back(run("dasp", 0.01, s, 10.0));
      predicted.push_back(withRate(run("bsp", 0.01, s, 21.0), 110));  // 1.05x: within 20 %; 11 updates/s
      predicted.push_back(run("dasp", 0.01, s, 7.0));                 // 0.70x: not
      measured.push_back(withRate(run("bsp", 0.01, s, 20.0), 100));   // 10 updates/s
    }
    const auto table = predictionTableMarkdown(real, predicted, measured);
    QVERIFY2(table.find("| dasp | 10.0 ± 0.0 | 7.0 ± 0.0 | 0.70 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("1 of the 2 strategies") != std::string::npos, table.c_str());
    QVERIFY2(table.find("The measured strategy (bsp): 10.0 ± 0.0 updates/s in the measured runs, 11.0 ± 0.0 "
                        "predicted (1.10×)") != std::string::npos,
             table.c_str());
  }

  void parseNamesTheBadLine() {
    auto ok = parseResultLines("{\"label\":\"bsp\",\"time_to_target_s\":null,\"faults\":[],\"seed\":2}\n\n", "f.jsonl");
    QVERIFY(ok);
    QCOMPARE(ok->size(), std::size_t{1});
    QVERIFY(!ok->front().has_time_to_target_s());
    QCOMPARE(ok->front().seed(), std::uint64_t{2});
    auto bad = parseResultLines("{\"label\":\"bsp\"}\n{oops\n", "f.jsonl");
    QVERIFY(!bad);
    QVERIFY2(bad.message().rfind("f.jsonl:2:", 0) == 0, bad.message().c_str());
  }

  void blocksAreRegeneratedInPlace() {
    const std::string text = "intro\n<!-- dasp-tables suite a.jsonl -->\nold\n<!-- /dasp-tables -->\nafter\n";
    auto out = regenerateBlocks(text, [](const std::string& kind, const std::vector<std::string>& args) -> Result<std::string> {
      return kind + ":" + args.at(0) + "\n";
    });
    QVERIFY(out);
    QCOMPARE(out.value(), std::string("intro\n<!-- dasp-tables suite a.jsonl -->\n\nsuite:a.jsonl\n\n<!-- /dasp-tables -->\nafter\n"));
    // Regenerating again changes nothing (the check in CI compares exactly this).
    auto again = regenerateBlocks(out.value(), [](const std::string& kind, const std::vector<std::string>& args) -> Result<std::string> {
      return kind + ":" + args.at(0) + "\n";
    });
    QCOMPARE(again.value(), out.value());
    auto unclosed = regenerateBlocks("x\n<!-- dasp-tables suite a -->\n", [](const std::string&, const std::vector<std::string>&) -> Result<std::string> { return std::string(); });
    QVERIFY(!unclosed);
    QVERIFY2(unclosed.message().find("line 2") != std::string::npos, unclosed.message().c_str());
  }

  void referenceHasTheSameTotalRate() {
    auto ref = homogeneousEquivalent(hetero4());
    QVERIFY2(ref, ref ? "" : ref.message().c_str());
    QCOMPARE(ref->strategy().name(), std::string("bsp"));
    const auto nodes = expandWorkers(ref.value());
    QCOMPARE(nodes.size(), std::size_t{4});
    // 4 / (1/20 + 1/20 + 1/40 + 1/80) = 29.09 ms each.
    for (const auto& n : nodes) {
      QVERIFY(std::abs(n.speed().base_iteration_ms() - 4.0 / (0.05 + 0.05 + 0.025 + 0.0125)) < 1e-9);
      QCOMPARE(n.speed().slowdown(), 1.0);
      QCOMPARE(n.speed().jitter(), 0.0);
    }
    QVERIFY(validateSpec(ref.value()));
  }

  void referenceFollowsSpeedChanges() {
    auto spec = hetero4();
    spec.mutable_cluster()->clear_count();
    spec.mutable_cluster()->clear_slowdowns();
    for (int i = 0; i < 4; ++i) {
      auto* w = spec.mutable_cluster()->add_workers();
      w->mutable_speed()->set_slowdown(1);
      w->mutable_speed()->set_base_iteration_ms(20);
      w->mutable_speed()->set_jitter(0.3);
    }
    auto* change = spec.mutable_cluster()->mutable_workers(3)->mutable_speed()->add_changes();
    change->set_at_s(5);
    change->set_slowdown(4);
    auto ref = homogeneousEquivalent(spec);
    QVERIFY(ref);
    const auto& speed = ref->cluster().workers(0).speed();
    QCOMPARE(speed.base_iteration_ms(), 20.0);
    QCOMPARE(speed.changes_size(), 1);
    QCOMPARE(speed.changes(0).at_s(), 5.0);
    // After the change: 4 / (3/20 + 1/80) = 24.6 ms, i.e. × 1.23 of 20 ms.
    QVERIFY(std::abs(speed.changes(0).slowdown() - (4.0 / (3.0 / 20 + 1.0 / 80)) / 20.0) < 1e-9);
    QCOMPARE(speed.jitter(), 0.0);
  }

  void referenceRefusesMixedBases() {
    auto spec = hetero4();
    spec.mutable_cluster()->clear_count();
    spec.mutable_cluster()->clear_slowdowns();
    spec.mutable_cluster()->set_base_iteration_ms(0);
    spec.mutable_cluster()->add_workers()->mutable_speed()->set_base_iteration_ms(20);
    spec.mutable_cluster()->add_workers()->set_name("w-real");
    auto ref = homogeneousEquivalent(spec);
    QVERIFY(!ref);
    QVERIFY2(ref.message().find("w-real") != std::string::npos, ref.message().c_str());
  }

  void referenceRunsOncePerSeedAndRate() {
    auto spec = hetero4();
    for (std::uint64_t s : {1, 2}) spec.add_seeds(s);
    spec.add_lr_grid(0.01);
    spec.add_lr_grid(0.02);
    spec.add_suite()->mutable_strategy()->set_name("bsp");
    spec.add_suite()->mutable_strategy()->set_name("dasp");
    auto planned = planRuns(spec);
    QVERIFY(planned);
    QCOMPARE(planned->size(), std::size_t{8});  // 2 strategies × 2 rates × 2 seeds
    auto all = withReferenceRuns(planned.value());
    QVERIFY(all);
    int refs = 0;
    for (const auto& p : all.value()) refs += p.label == "reference" ? 1 : 0;
    QCOMPARE(refs, 4);
    // spec.with_reference plans the same runs (the workbench's way), and a reference
    // does not ask for a reference of its own.
    spec.set_with_reference(true);
    auto withField = planRuns(spec);
    QVERIFY(withField);
    QCOMPARE(withField->size(), all->size());
    for (std::size_t i = 0; i < all->size(); ++i) {
      QCOMPARE(withField->at(i).label, all->at(i).label);
      QCOMPARE(withField->at(i).spec.reference_of(), all->at(i).spec.reference_of());
    }
    QCOMPARE(withField->back().label, std::string("reference"));
    QVERIFY(!withField->back().spec.with_reference());
  }

  void daspVariantsHaveTheirOwnLabels() {
    auto spec = hetero4();
    spec.add_suite()->mutable_strategy()->set_name("dasp");
    auto* paper = spec.add_suite()->mutable_strategy();
    paper->set_name("dasp");
    paper->mutable_dasp()->set_rule(v1::DaspParams::PAPER);
    auto* total = spec.add_suite()->mutable_strategy();
    total->set_name("dasp");
    total->mutable_dasp()->set_batch_budget(v1::DaspParams::CLUSTER_TOTAL);
    auto* equal = spec.add_suite()->mutable_strategy();
    equal->set_name("dasp");
    equal->mutable_dasp()->set_balance_batches(false);
    auto* counted = spec.add_suite()->mutable_strategy();
    counted->set_name("dasp");
    counted->mutable_dasp()->set_anytime(false);
    auto planned = planRuns(spec);
    QVERIFY2(planned, planned ? "" : planned.message().c_str());
    QCOMPARE(planned->at(0).label, std::string("dasp"));
    QCOMPARE(planned->at(1).label, std::string("dasp-r"));
    QCOMPARE(planned->at(2).label, std::string("dasp-ct"));
    QCOMPARE(planned->at(3).label, std::string("dasp-eq"));
    QCOMPARE(planned->at(4).label, std::string("dasp-count"));
    QVERIFY(planned->at(0).spec.strategy().dasp().anytime());
    QCOMPARE(planned->at(0).spec.strategy().dasp().rule(), v1::DaspParams::ADAPTIVE);
    QCOMPARE(planned->at(0).spec.strategy().dasp().batch_budget(), v1::DaspParams::FASTEST_AT_NOMINAL);
    QCOMPARE(planned->at(0).spec.strategy().dasp().min_batch(), 4);  // batch_size 64 / 16
  }

  void badGridAndKnobsAreNamed() {
    auto spec = hetero4();
    spec.add_lr_grid(-1);
    auto st = validateSpec(spec);
    QVERIFY(!st);
    QVERIFY2(st.message().find("lr_grid[0]") != std::string::npos, st.message().c_str());
    auto knob = hetero4();
    knob.mutable_strategy()->mutable_dasp()->set_change_band(1.5);
    st = validateSpec(knob);
    QVERIFY(!st);
    QVERIFY2(st.message().find("strategy.dasp.change_band") != std::string::npos, st.message().c_str());
  }

  void recoveryTableFromResultLines() {
    // Two seeds of a checkpoint drill as `dasp run --json` prints them (null: no figure).
    const std::string lines =
        R"({"run_id":1,"label":"asp","recovery":"checkpoint","workers":4,"seed":1,"status":"completed",)"
        R"("final_accuracy":0.82,"faults":[{"index":0,"node":"server","action":"kill","at_s":15,"restart_at_s":30,)"
        R"("detection_s":0.02,"downtime_s":15.6,"version_before":900,"version_after":850,"updates_lost":50,)"
        R"("gradients_during_outage":0,"gradients_dropped":0,"gradients_discarded":4,"accuracy_before":0.68,)"
        R"("accuracy_lowest_after":0.7,"recover_s":15.7,"accuracy_jump":0.05,"final_accuracy":0.82,"cpu_s":1.6,)"
        R"("detail":"restored checkpoint v850"}]})"
        "\n"
        R"({"run_id":2,"label":"asp","recovery":"checkpoint","workers":4,"seed":2,"status":"completed",)"
        R"("final_accuracy":0.8,"faults":[{"index":0,"node":"server","action":"kill","at_s":15,"restart_at_s":null,)"
        R"("detection_s":0.04,"downtime_s":15.8,"version_before":910,"version_after":854,"updates_lost":56,)"
        R"("gradients_during_outage":0,"gradients_dropped":0,"gradients_discarded":4,"accuracy_before":0.7,)"
        R"("accuracy_lowest_after":null,"recover_s":null,"accuracy_jump":null,"final_accuracy":0.8,"cpu_s":1.4,)"
        R"("detail":""}]})";
    auto runs = parseResultLines(lines, "test.jsonl");
    QVERIFY2(runs.isOk(), runs.message().c_str());
    const auto faults = runFaultsOf(runs.value());
    QCOMPARE(faults.size(), std::size_t(2));
    QCOMPARE(faults[0].recovery, std::string("checkpoint"));
    QCOMPARE(faults[0].workers, 4);
    QCOMPARE(faults[0].faults.size(), std::size_t(1));
    QCOMPARE(*faults[0].faults[0].updatesLost, std::int64_t(50));
    QCOMPARE(*faults[0].faults[0].fault.restartAtS, 30.0);
    QVERIFY(!faults[1].faults[0].fault.restartAtS);
    QVERIFY(!faults[1].faults[0].recoverS);
    QCOMPARE(faults[1].faults[0].fault.cpuS, 1.4);
    const std::string table = recoveryTableMarkdown(faults);
    QVERIFY2(table.find("| checkpoint | 4 |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("53 ± 4.2") != std::string::npos, table.c_str());  // updates lost, 2 runs
  }

  void paperTableSetsEachSideByMode() {
    const std::string paperLines =
        R"({"label":"stateless, 2 kills","engine":"paper","strategy":"asp","recovery":"stateless","workers":1,)"
        R"("target":0.7,"time_to_target_s":106,"faults":[{"index":0,"accuracy_jump":0.054},{"index":1,"accuracy_jump":0.06}]})"
        "\n"
        R"({"label":"chain async","engine":"paper","strategy":"asp","recovery":"chain","workers":1,"time_to_target_s":101})"
        "\n"
        R"({"label":"chain sync","engine":"paper","strategy":"bsp","recovery":"chain","workers":1,"time_to_target_s":120})";
    auto paper = parseResultLines(paperLines, "paper.jsonl");
    QVERIFY2(paper.isOk(), paper.message().c_str());
    auto ours = [](const std::string& recovery, int workers, std::optional<double> ttt, std::vector<double> jumps) {
      v1::RunResult r;
      r.set_recovery(recovery);
      r.set_workers(workers);
      r.set_target(0.7);
      if (ttt) r.set_time_to_target_s(*ttt);
      for (double j : jumps) r.add_faults()->set_accuracy_jump(j);
      return r;
    };
    const std::vector<v1::RunResult> twoKills{ours("local", 1, 40, {0.10, -0.01}), ours("local", 1, 44, {0.08, 0.03}),
                                              ours("local", 4, std::nullopt, {0.04, 0.01}),
                                              ours("chain", 1, 100, {})};
    const std::string table = paperComparisonMarkdown(paper.value(), twoKills);
    QVERIFY2(table.find("| recovery | time to 0.70, 2 kills (s): paper, 1 worker | ours, 1 worker | ours, 4 workers |") !=
                 std::string::npos,
             table.c_str());
    // The paper's runs each, ours as mean ± std, each kill's change at resume as a range.
    QVERIFY2(table.find("| chain | 101 (async), 120 (sync) | 100.0 | — | — | — | — |") != std::string::npos, table.c_str());
    QVERIFY2(table.find("| stateless | 106 (async) | — | — | +5.4, +6.0 (async, 2 kills) | — | — |") != std::string::npos,
             table.c_str());
    QVERIFY2(table.find("| local | — | 42.0 ± 2.8 | 1/1 never | — | +8.0 to +10.0, then -1.0 to +3.0 | +4.0, then +1.0 |") !=
                 std::string::npos,
             table.c_str());
  }
};

QTEST_GUILESS_MAIN(TestResults)
#include "tst_results.moc"
