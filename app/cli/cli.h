// SPDX-License-Identifier: MIT
#pragma once
// The `dasp` command line on CLI11: each subcommand is defined in one file by an add*
// function that declares its options (typed, range-checked, with their help) on the root
// app and runs the command when it is the one given. A command returns the process exit
// code: 0 success, 1 a failure at run time, 2 bad usage or bad input, 130 stopped.
// Threading: everything here runs on the main thread.

#include "core/common/json_text.h"
#include "core/common/result.h"
#include "core/spec/spec.h"
#include "core/store/run_store.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dasp {
struct RunSummary;
namespace net {
struct RunnerOptions;
}  // namespace net
}  // namespace dasp

namespace dasp::cli {

using ::dasp::jsonNumber;  // core/common/json_text.h
using ::dasp::jsonString;

// Prints "dasp: <message>" to stderr and returns `code`.
int fail(const std::string& message, int code = 2);
// The path of this `dasp` executable ("dasp" if it cannot be read).
std::string selfPath();

// Each add* function registers one subcommand; its callback, run during parsing when that
// subcommand is given, puts the command's exit code in `exitCode`.
void addRunCommand(CLI::App& dasp, int& exitCode);
void addTrainCommand(CLI::App& dasp, int& exitCode);
void addRunsCommand(CLI::App& dasp, int& exitCode);
void addProfileCommands(CLI::App& dasp, int& exitCode);  // profile, predict
void addTablesCommand(CLI::App& dasp, int& exitCode);
void addValidateCommand(CLI::App& dasp, int& exitCode);
void addBenchCommand(CLI::App& dasp, int& exitCode);
void addInfoCommand(CLI::App& dasp, int& exitCode);
void addSlurmScriptCommand(CLI::App& dasp, int& exitCode);
void addNodeCommands(CLI::App& dasp, int& exitCode);  // server, worker, evaluator
// Every subcommand above: what `dasp` offers.
void addCommands(CLI::App& dasp, int& exitCode);

// `dasp bench sim`'s options and body (bench_sim.cpp), registered by addBenchCommand.
struct BenchSimFlags {
  int workers = 4096;
  double seconds = 5;
  std::string strategy = "dasp";
  bool json = false;
};
int benchSim(const BenchSimFlags& flags);

// `dasp bench ps --shards` (b), bench_shards.cpp: the aggregate push+pull throughput of
// link-bound runs with 1 and 2 shards, each server host's link limited to `mbit`, and of
// the same case on the virtual-cluster engine (each shard's sim.server_link `mbit`).
inline constexpr int kShardBenchWorkers = 4;
struct ShardLinkRates {
  double linkMbit = 0;
  double oneShardMBps = 0, twoShardsMBps = 0;  // every worker's bytes both ways per second
  double ratio = 0;                            // two / one
  double engineOneMBps = 0, engineTwoMBps = 0, engineRatio = 0;  // the same case on the engine
  std::string notMeasured;  // why no host could be made here (not root, no iproute2)
};
Result<ShardLinkRates> benchShardLinks(double mbit);

// One planned run on the virtual-cluster engine, with the spec's computation wired in
// (cmd_run.cpp).
Result<RunSummary> runOnSimulator(const ExperimentSpec& spec, const net::RunnerOptions& options);

// --- option checks: each names the value it refuses (CLI11 prefixes the flag) ---

// A finite number > 0 (FLOAT).
const CLI::Validator& positiveNumber();
// A number in (0, hi] (FLOAT): a duration in seconds, say, whose upper end is where the
// value stops being one that the command can honour.
CLI::Validator positiveUpTo(double hi);
// A number in [lo, hi] (FLOAT).
CLI::Validator numberIn(double lo, double hi);
// An integer in [lo, hi] (INT).
CLI::Validator integerIn(long long lo, long long hi);

// --- the spec shorthands shared by run, train and validate ---

// --model, --dataset, --dataset-path, --epochs, --batch, --lr, --seed, --device, --threads,
// and repeated --set path=value. The text of each is kept as given (it is applied as a
// spec override, parsed once there); the checks here give the type and range.
struct SpecFlags {
  std::optional<std::string> model, dataset, datasetPath, epochs, batch, lr, seed, device, threads;
  std::vector<std::string> set;
};

// The options of `dasp run`, as given (cmd_run.cpp); `dasp predict` runs its measured
// spec through the same command.
struct RunFlags {
  std::string specPath;
  SpecFlags spec;
  std::vector<std::string> grid;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> only;  // run labels to keep (empty: every run of the plan)
  std::optional<std::string> engine;
  std::optional<std::string> lrFrom;
  std::string db = defaultStorePath();
  std::string tags;
  std::string recordDir;
  bool reference = false;
  bool json = false;
  bool quiet = false;
  std::int64_t predictedFrom = 0;  // dasp predict: the measured run (--json's predicted_from)
};
// `dasp run`: plans the spec's runs, runs them in turn, prints the table (and --json).
int runCommand(const RunFlags& flags);
void addSpecFlags(CLI::App& command, SpecFlags& flags);

// The spec a command runs: the file (if any), then the shorthands, then every --set;
// validated and resolved with defaults. Errors name the file or the flag.
Result<ExperimentSpec> specFromFlags(const SpecFlags& flags, const std::string& specPath);

// Parses the command line with `dasp` (every subcommand added) and returns the exit code:
// the subcommand's, 0 after --help, 2 for bad usage (the message names the flag or value).
int parseAndRun(CLI::App& dasp, int argc, char** argv, const int& exitCode);

}  // namespace dasp::cli
