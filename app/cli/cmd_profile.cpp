// SPDX-License-Identifier: MIT
// `dasp profile RUN_ID [--db FILE] [--json] [--spec-out FILE]`: the cluster a stored run
// measured (core/results/cluster_profile.h): each worker's compute time per sample, with
// the speed changes found in its recorded iterations, and its pull and push times.
// --spec-out writes the run's spec on that measured cluster for the virtual-cluster
// engine, so that `dasp run FILE` (with a suite, --grid or --set strategy.name=...) runs
// other strategies on the cluster as it was measured.
#include "app/cli/cli.h"

#include "core/results/cluster_profile.h"
#include "core/store/run_store.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

namespace dasp::cli {
namespace {

struct ProfileFlags {
  std::int64_t runId = 0;
  std::string db = defaultStorePath();
  bool json = false;
  std::string specOut;
};

void printProfile(const ClusterProfile& profile) {
  std::printf("run %lld: the cluster as measured (compute per sample, between the speed changes found)\n",
              static_cast<long long>(profile.runId));
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
}

int profileCommand(const ProfileFlags& flags) {
  auto store = RunStore::open(flags.db);
  if (!store) return fail(store.message());
  auto run = store.value()->run(flags.runId);
  if (!run) return fail(run.message());
  auto spec = parseSpecJson(run->specJson, "run " + std::to_string(flags.runId) + "'s spec");
  if (!spec) return fail(spec.message());
  auto samples = store.value()->samples(flags.runId);
  if (!samples) return fail(samples.message(), 1);
  auto intervals = store.value()->stateIntervals(flags.runId);
  if (!intervals) return fail(intervals.message(), 1);
  auto profile = measureProfile(flags.runId, samples.value(), intervals.value(), spec->batch_size());
  if (!profile) return fail(profile.message());
  if (flags.json) {
    std::cout << profileJson(profile.value()) << "\n";
  } else {
    printProfile(profile.value());
  }
  if (flags.specOut.empty()) return 0;
  ExperimentSpec measured = spec.value();
  *measured.mutable_cluster() = profileCluster(profile.value(), spec.value());
  measured.set_engine("sim");
  measured.set_name(spec->name() + "-measured-run-" + std::to_string(flags.runId));
  measured.set_description("The cluster of run " + std::to_string(flags.runId) + " (" + spec->name() +
                           ") as it measured it (dasp profile): each worker's compute per sample and the speed "
                           "changes found in its iterations, for the virtual-cluster engine.");
  measured.clear_reference_of();
  std::ofstream out(flags.specOut);
  out << specToJson(measured);
  out.close();
  if (!out) return fail("cannot write " + flags.specOut, 1);
  std::fprintf(stderr, "dasp: wrote %s (run %lld's spec on its measured cluster, engine sim)\n", flags.specOut.c_str(),
               static_cast<long long>(flags.runId));
  return 0;
}

}  // namespace

void addProfileCommand(CLI::App& dasp, int& exitCode) {
  auto flags = std::make_shared<ProfileFlags>();
  auto* profile = dasp.add_subcommand("profile", "the cluster a stored run measured: speeds, their changes, transfers");
  profile->add_option("run", flags->runId, "the run's id (dasp runs)")->required()->check(CLI::PositiveNumber);
  profile->add_option("--db", flags->db, "the run store (SQLite)")->capture_default_str();
  profile->add_flag("--json", flags->json, "the profile as one JSON document");
  profile->add_option("--spec-out", flags->specOut,
                      "write the run's spec on the measured cluster, for the engine (dasp run FILE)");
  profile->callback([flags, &exitCode] { exitCode = profileCommand(*flags); });
}

}  // namespace dasp::cli
