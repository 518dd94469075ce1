// SPDX-License-Identifier: MIT
// `dasp run SPEC.json [options]` (addRunCommand declares them; `dasp run --help` lists them).
// Runs an experiment, or a suite (strategies × seeds × grid values) in turn, and prints a
// comparison table; --json prints one object per run after all other output. Each run
// goes to the engine its spec names: processes over gRPC (real) or the virtual-cluster
// engine in this process (sim). `dasp-run-progress DONE TOTAL` goes to stderr before the
// first run and after each, and `dasp-run-created <id>` as soon as a run
// exists in the store (the workbench follows sim runs by it).
#include "app/cli/cli.h"
#include "app/cli/signals.h"
#include "core/common/run_lines.h"

#include "ml/sim_compute.h"
#include "core/results/results_table.h"
#include "core/store/run_store.h"
#include "core/sim/sim_engine.h"
#include "net/runner/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <cstdio>
#include <fstream>
#include <set>
#include <tuple>
#include <iostream>
#include <map>
#include <sstream>

namespace dasp::cli {
namespace {

// The recovery metrics of a run's fault drills as a JSON array.
std::string faultsJson(const std::vector<RecoveryMetrics>& faults) {
  auto opt = [](const auto& v) { return v ? jsonNumber(static_cast<double>(*v)) : std::string("null"); };
  std::string out = "[";
  for (const auto& m : faults) {
    const auto& f = m.fault;
    if (out.size() > 1) out += ",";
    out += "{\"index\":" + std::to_string(f.index) + ",\"node\":" + jsonString(f.node) +
           ",\"action\":" + jsonString(f.action) + ",\"at_s\":" + jsonNumber(f.atS) +
           ",\"restart_at_s\":" + opt(f.restartAtS) + ",\"detection_s\":" + opt(m.detectionS) +
           ",\"downtime_s\":" + opt(m.downtimeS) + ",\"version_before\":" + std::to_string(f.versionBefore) +
           ",\"acked_before\":" + opt(f.ackedBefore) + ",\"version_after\":" + opt(f.versionAfter) + ",\"updates_lost\":" + opt(m.updatesLost) +
           ",\"gradients_during_outage\":" + std::to_string(f.gradientsDuringOutage) +
           ",\"gradients_dropped\":" + std::to_string(f.gradientsDropped) +
           ",\"gradients_discarded\":" + std::to_string(f.gradientsDiscarded) +
           ",\"accuracy_before\":" + opt(m.accuracyBefore) + ",\"accuracy_lowest_after\":" + opt(m.accuracyLowestAfter) +
           ",\"recover_s\":" + opt(m.recoverS) + ",\"accuracy_jump\":" + opt(m.accuracyJump) +
           ",\"final_accuracy\":" + jsonNumber(m.finalAccuracy) + ",\"cpu_s\":" + jsonNumber(f.cpuS) +
           ",\"detail\":" + jsonString(f.detail) + "}";
  }
  return out + "]";
}

// The summary line of one run, as `--json` prints it and results/ keeps it.
v1::RunResult toRunResult(const RunSummary& r, const PlannedRun& planned) {
  v1::RunResult out;
  out.set_run_id(r.runId);
  out.set_label(planned.label);
  out.set_engine(r.engine);
  out.set_wall_s(r.wallS);
  out.set_strategy(r.strategy);
  out.set_recovery(r.recovery);
  out.set_workers(r.workers);
  out.set_seed(r.seed);
  out.set_status(r.status);
  out.set_stop_reason(r.stopReason);
  if (r.timeToTargetS) out.set_time_to_target_s(*r.timeToTargetS);
  out.set_final_accuracy(r.finalAccuracy);
  out.set_final_loss(r.finalLoss);
  out.set_seconds(r.seconds);
  out.set_updates(r.updates);
  out.set_gradients(r.gradients);
  out.set_dropped(r.dropped);
  out.set_mean_wait_s(r.meanWaitS);
  out.set_wait_fraction(r.waitFraction);
  out.set_mean_staleness(r.meanStaleness);
  out.set_max_staleness(r.maxStaleness);
  out.set_epochs(r.epochs);
  out.set_lr(planned.spec.optimizer().lr());
  out.set_target(planned.spec.stop().target_accuracy());
  out.set_spec_name(planned.spec.name());
  out.set_shards(planned.spec.ps().shards());
  if (r.speedChangeDip) out.set_speed_change_dip(*r.speedChangeDip);
  if (r.divergence) {
    out.set_divergence_cause(toString(r.divergence->cause));
    out.set_diverged_version(r.divergence->version);
    out.set_diverged_t_s(r.divergence->tS);
  }
  return out;
}

// Each strategy's best learning rate in a results file (label -> lr).
Result<std::map<std::string, double>> tunedRates(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("--lr-from " + path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  auto runs = parseResultLines(text.str(), path);
  if (!runs) return runs.status();
  std::map<std::string, double> rates;
  for (const auto& row : bestByStrategy(runs.value())) rates[row.label] = row.lr;
  if (rates.empty()) return Status::error("--lr-from " + path + ": no runs in it");
  return rates;
}

// The planned runs at the tuned rates; runs that became identical (the reference planned
// once per rate) are kept once.
std::vector<PlannedRun> withTunedRates(const std::vector<PlannedRun>& planned, const std::map<std::string, double>& rates) {
  std::vector<PlannedRun> out;
  std::set<std::tuple<std::string, std::uint64_t, double>> seen;
  for (auto p : planned) {
    const auto it = rates.find(p.label);
    if (it != rates.end()) p.spec.mutable_optimizer()->set_lr(it->second);
    if (!seen.insert({p.label, p.spec.seed(), p.spec.optimizer().lr()}).second) continue;
    out.push_back(std::move(p));
  }
  return out;
}

// The runs of `planned` whose label is one of `labels`; a label no run has is an error that
// lists the plan's labels.
Result<std::vector<PlannedRun>> onlyLabelled(std::vector<PlannedRun> planned, const std::vector<std::string>& labels) {
  std::vector<PlannedRun> kept;
  for (auto& p : planned) {
    if (std::find(labels.begin(), labels.end(), p.label) != labels.end()) kept.push_back(p);
  }
  for (const auto& label : labels) {
    const bool found = std::any_of(kept.begin(), kept.end(), [&](const PlannedRun& p) { return p.label == label; });
    if (found) continue;
    std::string known;
    for (const auto& p : planned) {
      if (known.find("'" + p.label + "'") == std::string::npos) known += (known.empty() ? "'" : ", '") + p.label + "'";
    }
    return Status::error("--only " + label + ": no run of the plan has this label (its labels: " + known + ")");
  }
  return kept;
}

}  // namespace

int runCommand(const RunFlags& flags) {
  auto spec = specFromFlags(flags.spec, flags.specPath);
  if (!spec) return fail(spec.message());
  if (!flags.seeds.empty()) {
    spec->clear_seeds();
    for (auto seed : flags.seeds) spec->add_seeds(seed);
  }
  if (flags.engine) spec->set_engine(*flags.engine);
  if (flags.lrFrom) spec->clear_lr_grid();  // one rate per strategy, from the file
  if (flags.reference) spec->set_with_reference(true);
  auto planned = planRuns(spec.value(), flags.grid);
  if (!planned) return fail(flags.specPath + ": " + planned.message());
  if (!flags.only.empty()) {
    planned = onlyLabelled(std::move(planned).value(), flags.only);
    if (!planned) return fail(flags.specPath + ": " + planned.message());
  }
  std::vector<std::string> warned;
  for (const auto& run : planned.value()) {
    for (const auto& w : specWarnings(run.spec)) {
      if (std::find(warned.begin(), warned.end(), w) != warned.end()) continue;
      warned.push_back(w);
      std::fprintf(stderr, "dasp: warning: %s: %s\n", flags.specPath.c_str(), w.c_str());
    }
  }
  if (flags.lrFrom) {
    auto tuned = tunedRates(*flags.lrFrom);
    if (!tuned) return fail(tuned.message());
    planned = withTunedRates(planned.value(), tuned.value());
  }

  const bool json = flags.json;
  const bool quiet = flags.quiet;
  installStopSignals();
  net::RunnerOptions options;
  options.daspBinary = selfPath();
  options.dbPath = flags.db;
  options.tags = flags.tags;
  options.recordDir = flags.recordDir;
  options.cancel = stopRequested();
  if (!quiet) options.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  options.onRunCreated = [](std::int64_t runId) {
    std::fprintf(stderr, "%s%lld\n", kRunCreatedPrefix, static_cast<long long>(runId));
    std::fflush(stderr);
  };
  {
    auto store = RunStore::open(options.dbPath);
    if (!store) return fail(store.message());
  }

  std::vector<RunSummary> results;
  std::vector<PlannedRun> done;
  int failures = 0;
  // Progress for a parent process (the workbench's prediction): runs done of the plan.
  auto progress = [&](std::size_t finished) {
    std::fprintf(stderr, "%s%zu %zu\n", kRunProgressPrefix, finished, planned->size());
    std::fflush(stderr);
  };
  progress(0);
  for (std::size_t i = 0; i < planned->size(); ++i) {
    if (stopRequested()->load()) break;
    const auto& p = planned.value()[i];
    if (!quiet) std::fprintf(stderr, "[%zu/%zu] %s seed %llu\n", i + 1, planned->size(), p.label.c_str(),
                             static_cast<unsigned long long>(p.spec.seed()));
    auto r = p.spec.engine() == "sim" ? runOnSimulator(p.spec, options) : net::runExperiment(p.spec, options);
    progress(i + 1);
    if (!r) {
      std::fprintf(stderr, "%s%s\n", kErrorPrefix, r.message().c_str());
      ++failures;
      continue;
    }
    if (!quiet) {
      std::fprintf(stderr, "  run %lld %s: %s, accuracy %.4f, %lld updates in %.1f s%s\n",
                   static_cast<long long>(r->runId), r->status.c_str(), r->stopReason.c_str(), r->finalAccuracy,
                   static_cast<long long>(r->updates), r->seconds,
                   r->timeToTargetS ? (", target at " + std::to_string(*r->timeToTargetS) + " s").c_str() : "");
    }
    results.push_back(r.value());
    done.push_back(p);
  }
  std::vector<v1::RunResult> lines;
  for (std::size_t i = 0; i < results.size(); ++i) lines.push_back(toRunResult(results[i], done[i]));
  fillHeterogeneityCost(lines);
  if (!results.empty()) {
    std::printf("\n%s\nlearning-rate convention: %s\n", suiteTableMarkdown(lines).c_str(),
                v1::OptimizerSpec::LrConvention_Name(spec->optimizer().lr_convention()).c_str());
    std::vector<RunFaults> withFaults;
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (results[i].faults.empty()) continue;
      RunFaults rf;
      rf.runId = results[i].runId;
      rf.label = done[i].label;
      rf.recovery = results[i].recovery;
      rf.workers = results[i].workers;
      rf.seed = results[i].seed;
      rf.finalAccuracy = results[i].finalAccuracy;
      rf.timeToTargetS = results[i].timeToTargetS;
      rf.faults = results[i].faults;
      withFaults.push_back(rf);
    }
    if (!withFaults.empty()) std::printf("\n%s", recoveryTableMarkdown(withFaults).c_str());
  }
  if (json) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      const auto& line = lines[i];
      std::cout << "{\"run_id\":" << r.runId << ",\"label\":" << jsonString(done[i].label)
                << ",\"engine\":" << jsonString(r.engine) << ",\"wall_s\":" << jsonNumber(r.wallS)
                << ",\"strategy\":" << jsonString(r.strategy) << ",\"recovery\":" << jsonString(r.recovery)
                << ",\"workers\":" << r.workers << ",\"shards\":" << line.shards() << ",\"seed\":" << r.seed << ",\"status\":" << jsonString(r.status)
                << ",\"stop_reason\":" << jsonString(r.stopReason)
                << ",\"time_to_target_s\":" << (r.timeToTargetS ? jsonNumber(*r.timeToTargetS) : "null")
                << ",\"final_accuracy\":" << jsonNumber(r.finalAccuracy) << ",\"final_loss\":" << jsonNumber(r.finalLoss)
                << ",\"seconds\":" << jsonNumber(r.seconds) << ",\"updates\":" << r.updates
                << ",\"gradients\":" << r.gradients << ",\"dropped\":" << r.dropped
                << ",\"mean_wait_s\":" << jsonNumber(r.meanWaitS) << ",\"wait_fraction\":" << jsonNumber(r.waitFraction)
                << ",\"mean_staleness\":" << jsonNumber(r.meanStaleness) << ",\"max_staleness\":" << r.maxStaleness
                << ",\"epochs\":" << jsonNumber(r.epochs) << ",\"lr\":" << jsonNumber(line.lr())
                << ",\"target\":" << jsonNumber(line.target()) << ",\"spec_name\":" << jsonString(line.spec_name())
                << ",\"heterogeneity_cost\":"
                << (line.has_heterogeneity_cost() ? jsonNumber(line.heterogeneity_cost()) : "null")
                << ",\"speed_change_dip\":" << (r.speedChangeDip ? jsonNumber(*r.speedChangeDip) : "null")
                << ",\"divergence_cause\":" << jsonString(line.divergence_cause())
                << ",\"diverged_version\":" << (line.has_diverged_version() ? std::to_string(line.diverged_version()) : "null")
                << ",\"diverged_t_s\":" << (line.has_diverged_t_s() ? jsonNumber(line.diverged_t_s()) : "null")
                << ",\"faults\":" << faultsJson(r.faults)
                << (flags.predictedFrom > 0 ? ",\"predicted_from\":" + std::to_string(flags.predictedFrom) : std::string())
                << "}\n";
    }
    std::cout.flush();
  }
  if (stopRequested()->load()) return 130;
  return failures > 0 ? 1 : 0;
}

Result<RunSummary> runOnSimulator(const ExperimentSpec& spec, const net::RunnerOptions& options) {
  auto bundle = ml::makeSimCompute(spec);
  if (!bundle) return bundle.status();
  SimOptions sim;
  sim.dbPath = options.dbPath;
  sim.tags = options.tags;
  sim.cancel = options.cancel;
  sim.log = options.log;
  sim.onRunCreated = options.onRunCreated;
  return runSimulation(spec, bundle.value()->compute, sim);
}

void addRunCommand(CLI::App& dasp, int& exitCode) {
  auto flags = std::make_shared<RunFlags>();
  auto* run = dasp.add_subcommand("run", "run a distributed experiment or a suite (server, workers, evaluator)");
  run->footer(
      "A suite is strategies x seeds x grid values, run in turn; the table reports each strategy at its best\n"
      "learning rate of the spec's lr_grid.");
  run->add_option("spec", flags->specPath, "the experiment spec (JSON)")->required();
  addSpecFlags(*run, flags->spec);
  run->add_option("--grid", flags->grid, "a grid axis, e.g. --grid optimizer.lr=0.01,0.02 (repeatable)")
      ->type_name("PATH=V1,V2,...")
      ->allow_extra_args(false);
  run->add_option("--seeds", flags->seeds, "the seeds to run, e.g. 1,2,3 (replaces the spec's)")
      ->delimiter(',')
      ->type_name("S1,S2,...")
      ->check(integerIn(0, INT64_MAX));
  run->add_option("--engine", flags->engine, "processes over gRPC (real) or the virtual-cluster engine (sim)")
      ->check(CLI::IsMember({"real", "sim"}));
  run->add_option("--only", flags->only,
                  "only the runs with this label, as the table and --json name them: bsp, dssp(3,15), dasp,\n"
                  "reference ... (repeatable), e.g. to re-run one strategy of a suite")
      ->type_name("LABEL");
  run->add_flag("--reference", flags->reference,
                "also run the homogeneous-equivalent reference (same N and total gradient rate, BSP, same seeds\n"
                "and rates), labelled `reference`; each run's heterogeneity_cost = its time to target / the\n"
                "reference's mean (the spec's with_reference)");
  run->add_option("--lr-from", flags->lrFrom,
                  "each strategy (and the reference) at its best learning rate in this results file (JSON lines\n"
                  "of an earlier --json run, e.g. the engine's) instead of the spec's lr_grid")
      ->check(CLI::ExistingFile);
  run->add_option("--db", flags->db, "the run store (SQLite)")->capture_default_str();
  run->add_option("--tags", flags->tags, "tags recorded with each run");
  run->add_option("--record", flags->recordDir,
                  "real engine: every server and worker writes an update record (states held, updates\n"
                  "applied, pushes acknowledged) into DIR/run-ID/NODE.N.record, for audits and replays")
      ->type_name("DIR");
  run->add_flag("--json", flags->json, "print one JSON object per run, after all other output");
  run->add_flag("--quiet", flags->quiet, "no progress on stderr");
  run->callback([flags, &exitCode] { exitCode = runCommand(*flags); });
}

}  // namespace dasp::cli
