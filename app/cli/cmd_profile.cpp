// SPDX-License-Identifier: MIT
// The cluster a stored run measured (core/results/cluster_profile.h), and what it predicts:
//   dasp profile RUN_ID [--db FILE] [--json] [--spec-out FILE]
//     each worker's compute time per sample, with the speed changes found in its recorded
//     iterations, and its pull and push times; --spec-out writes the run's spec on that
//     measured cluster for the virtual-cluster engine;
//   dasp predict RUN_ID [--db FILE] [--strategies LIST] [--seeds LIST] [--grid PATH=V1,V2]
//                [--reference] [--json]
//     runs the engine on the measured cluster for each strategy (`dasp run`'s table and
//     --json lines, each with "predicted_from"), after the measured run's own result.
#include "app/cli/cli.h"

#include "core/data/dataset_loader.h"
#include "core/results/cluster_profile.h"
#include "ml/model.h"
#include "ml/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace dasp::cli {
namespace {

Result<MeasuredRun> measureRun(const std::string& db, std::int64_t runId) {
  auto store = RunStore::open(db);
  if (!store) return store.status();
  return measureStoredRun(*store.value(), runId);
}

void printProfile(const ClusterProfile& profile, bool stored, const ExperimentSpec& spec) {
  std::printf("run %lld: the cluster as measured (compute per sample, between the speed changes found; %s)\n",
              static_cast<long long>(profile.runId),
              stored ? "stored with the run when it ended" : "measured now from its records");
  for (const NodeProfile& n : profile.workers) {
    std::printf("%-12s %6lld iterations, pull %.2f ms, push %.2f ms\n", n.name.c_str(),
                static_cast<long long>(n.iterations), 1000 * n.pullS, 1000 * n.pushS);
    const double first = n.segments.front().secondsPerSample;
    for (const SpeedSegment& s : n.segments) {
      std::printf("  %8.2f - %8.2f s  %.4f ms/sample (x%.2f)  %lld iterations\n", s.fromS, s.toS,
                  1000 * s.secondsPerSample, first > 0 ? s.secondsPerSample / first : 1.0,
                  static_cast<long long>(s.iterations));
    }
  }
  const ServerLoad& l = profile.server;
  if (l.coveredS > 0) {
    std::printf("%-12s apply %.3f ms per gradient, serve %.3f ms per push (over %.1f s: %lld gradients, %lld pushes)\n",
                "server", 1000 * l.applySPerGradient, 1000 * l.serveSPerPush, l.coveredS,
                static_cast<long long>(l.gradients), static_cast<long long>(l.pushes));
  }
  const EvaluationCost& e = profile.evaluation;
  if (e.evaluations > 0) {
    std::printf("%-12s %.2f CPU-s per evaluation (%lld evaluations, %.1f CPU-s; the engine charges none: it is in "
                "the workers' compute times above)\n",
                "evaluator", e.cpuSPerEvaluation, static_cast<long long>(e.evaluations), e.cpuS);
  }
  for (const HostLinkProfile& h : profile.hostLinks) {
    const auto& hosts = spec.launch().hosts();
    if (std::none_of(hosts.begin(), hosts.end(), [&](const v1::HostSpec& s) { return s.name() == h.host; })) {
      std::printf("host %-7s not one of the spec's launch.hosts: its link is shown, not modelled\n", h.host.c_str());
    }
    for (const auto& [what, way] : {std::pair{"pulls in", &h.down}, std::pair{"pushes out", &h.up}}) {
      std::printf("host %-7s %-10s %lld transfers, %lld queues: ", h.host.c_str(), what,
                  static_cast<long long>(way->transfers), static_cast<long long>(way->queues));
      if (way->shared()) {
        std::printf("shared, %.2f ms a transfer on the link (the first of a queue %.2f ms)\n", 1000 * way->linkS,
                    1000 * way->firstS);
      } else {
        std::printf("not shared (%s)\n", way->queues < kMinHostLinkQueues ? "too few transfers at once to tell"
                                                                            : "transfers at once ended together");
      }
    }
  }
}

// The measured model's parameter count, which turns the server's measured apply time per
// gradient into the engine's time per parameter; 0 (the engine's default server model,
// said on stderr) when the model cannot be built here.
std::int64_t parameterCountOf(const ExperimentSpec& spec) {
  auto unknown = [](const std::string& why) {
    std::fprintf(stderr, "dasp: the engine keeps its default server cost (the model's size is unknown: %s)\n",
                 why.c_str());
    return std::int64_t{0};
  };
  auto data = loadDataset(spec.dataset(), spec.seed());
  if (!data) return unknown(data.message());
  ml::ModelOptions options = ml::modelOptionsFor(spec, data->train);
  options.device = "cpu";
  auto model = ml::Model::create(options);
  if (!model) return unknown(model.message());
  return model.value()->parameterCount();
}

Status writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return Status::error("cannot write " + path);
  return Status::ok();
}

struct ProfileFlags {
  std::int64_t runId = 0;
  std::string db = defaultStorePath();
  bool json = false;
  std::string specOut;
};

int profileCommand(const ProfileFlags& flags) {
  auto m = measureRun(flags.db, flags.runId);
  if (!m) return fail(m.message());
  if (flags.json) {
    std::cout << profileJson(m->profile) << "\n";
  } else {
    printProfile(m->profile, m->stored, m->spec);
  }
  if (flags.specOut.empty()) return 0;
  const ExperimentSpec measured = measuredSpec(m->profile, m->spec, parameterCountOf(m->spec));
  if (auto st = writeText(flags.specOut, specToJson(measured)); !st) return fail(st.message(), 1);
  std::fprintf(stderr, "dasp: wrote %s (run %lld's spec on its measured cluster, engine sim)\n", flags.specOut.c_str(),
               static_cast<long long>(flags.runId));
  return 0;
}

struct PredictFlags {
  std::int64_t runId = 0;
  std::string db = defaultStorePath();
  std::vector<std::string> strategies = knownStrategies();
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> grid;  // a sweep of knobs, as dasp run's --grid
  bool reference = false;
  bool json = false;
  bool quiet = false;
};

// The measured run's own result, for the prediction of its strategy to be read against.
void printMeasured(const MeasuredRun& m) {
  std::string ttt = "never", accuracy = "-", updates = "-";
  for (const auto& s : m.summary) {
    if (!s.value) continue;
    if (s.key == "time_to_target_s") ttt = jsonNumber(*s.value) + " s";
    if (s.key == "final_accuracy") accuracy = jsonNumber(*s.value);
    if (s.key == "updates") updates = jsonNumber(*s.value);
  }
  std::printf("measured: run %lld, %s on %zu workers (%s): time to target %s, final accuracy %s, %s updates\n",
              static_cast<long long>(m.row.id), strategyLabel(m.spec.strategy()).c_str(), m.profile.workers.size(),
              m.row.engine.c_str(), ttt.c_str(), accuracy.c_str(), updates.c_str());
  std::fflush(stdout);
}

int predictCommand(const PredictFlags& flags) {
  auto m = measureRun(flags.db, flags.runId);
  if (!m) return fail(m.message());
  ExperimentSpec predicted = measuredSpec(m->profile, m->spec, parameterCountOf(m->spec));
  predicted.clear_suite();
  for (const std::string& name : flags.strategies) {
    if (std::find(knownStrategies().begin(), knownStrategies().end(), name) == knownStrategies().end()) {
      return fail("--strategies: '" + name + "' is not a strategy");
    }
    predicted.add_suite()->mutable_strategy()->set_name(name);
  }
  predicted.clear_seeds();
  for (auto seed : flags.seeds.empty() ? std::vector<std::uint64_t>{predicted.seed()} : flags.seeds) predicted.add_seeds(seed);
  predicted.set_with_reference(flags.reference);
  std::error_code ec;
  std::string path = (std::filesystem::temp_directory_path(ec) / "dasp-predict-XXXXXX.json").string();
  const int fd = mkstemps(path.data(), 5);
  if (fd < 0) return fail("cannot create a temporary spec file " + path, 1);
  ::close(fd);
  if (auto st = writeText(path, specToJson(predicted)); !st) return fail(st.message(), 1);
  if (!flags.json) printMeasured(m.value());
  RunFlags run;
  run.specPath = path;
  run.db = flags.db;
  run.tags = "predicted-from-" + std::to_string(flags.runId);
  run.json = flags.json;
  run.quiet = flags.quiet;
  run.predictedFrom = flags.runId;
  run.grid = flags.grid;
  const int code = runCommand(run);
  std::filesystem::remove(path, ec);
  return code;
}

}  // namespace

void addProfileCommands(CLI::App& dasp, int& exitCode) {
  auto flags = std::make_shared<ProfileFlags>();
  auto* profile = dasp.add_subcommand("profile", "the cluster a stored run measured: speeds, their changes, transfers");
  profile->add_option("run", flags->runId, "the run's id (dasp runs)")->required()->check(CLI::PositiveNumber);
  profile->add_option("--db", flags->db, "the run store (SQLite)")->capture_default_str();
  profile->add_flag("--json", flags->json, "the profile as one JSON document");
  profile->add_option("--spec-out", flags->specOut,
                      "write the run's spec on the measured cluster, for the engine (dasp run FILE)");
  profile->callback([flags, &exitCode] { exitCode = profileCommand(*flags); });

  auto predict = std::make_shared<PredictFlags>();
  auto* command = dasp.add_subcommand("predict", "run the engine on a stored run's measured cluster, for each strategy");
  command->footer(
      "The strategies run with their default knobs at the measured run's learning rate; each prediction is\n"
      "stored as an engine run tagged predicted-from-RUN_ID.");
  command->add_option("run", predict->runId, "the measured run's id (dasp runs)")->required()->check(CLI::PositiveNumber);
  command->add_option("--db", predict->db, "the run store (SQLite)")->capture_default_str();
  command->add_option("--strategies", predict->strategies, "the strategies to predict")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--seeds", predict->seeds, "the seeds (default: the measured run's)")->delimiter(',');
  command->add_option("--grid", predict->grid,
                      "a sweep axis of the predicted runs, e.g. --grid strategy.dasp.kappa=1.1,1.5 (repeatable)")
      ->type_name("PATH=V1,V2,...")
      ->allow_extra_args(false);
  command->add_flag("--reference", predict->reference, "also the homogeneous-equivalent reference");
  command->add_flag("--json", predict->json, "one JSON line per predicted run (dasp run --json, with predicted_from)");
  command->add_flag("--quiet", predict->quiet, "no progress lines");
  command->callback([predict, &exitCode] { exitCode = predictCommand(*predict); });
}

}  // namespace dasp::cli
