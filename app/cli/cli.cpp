// SPDX-License-Identifier: MIT
#include "app/cli/cli.h"
#include "app/cli/run_dasp.h"
#include "core/common/run_lines.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <tuple>

#include <unistd.h>

namespace dasp::cli {

int fail(const std::string& message, int code) {
  std::cerr << kErrorPrefix << message << std::endl;
  return code;
}

std::string selfPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "dasp";
  buf[n] = '\0';
  return buf;
}

// --- option checks ---

namespace {

// The whole text as a finite double, or nullopt.
std::optional<double> wholeNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// 1e+09, 3600, 0.5: a bound as a person writes it.
std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::optional<long long> wholeInteger(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

const CLI::Validator& positiveNumber() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string {
        const auto v = wholeNumber(text);
        return v && *v > 0 ? std::string() : "'" + text + "' is not a number > 0";
      },
      "", "positive");
  return check;
}

CLI::Validator positiveUpTo(double hi) {
  return CLI::Validator(
      [hi](std::string& text) -> std::string {
        const auto v = wholeNumber(text);
        if (v && *v > 0 && *v <= hi) return {};
        return "'" + text + "' is not a number in (0, " + shortNumber(hi) + "]";
      },
      "", "positive-range");
}

CLI::Validator numberIn(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto v = wholeNumber(text);
        if (v && *v >= lo && *v <= hi) return {};
        return "'" + text + "' is not a number in [" + shortNumber(lo) + ", " + shortNumber(hi) + "]";
      },
      "", "range");
}

CLI::Validator integerIn(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto v = wholeInteger(text);
        if (v && *v >= lo && *v <= hi) return {};
        return "'" + text + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      },
      "", "integer-range");
}

// --- the spec shorthands ---

void addSpecFlags(CLI::App& command, SpecFlags& f) {
  command.add_option("--model", f.model, "model.name (logreg, mlp, lenet, resnet8)");
  command.add_option("--dataset", f.dataset, "dataset.name (fashion-mnist, synthetic)");
  command.add_option("--dataset-path", f.datasetPath, "dataset.path: the folder of the IDX files");
  command.add_option("--epochs", f.epochs, "stop.epochs")->type_name("FLOAT")->check(positiveNumber());
  command.add_option("--batch", f.batch, "batch_size")->type_name("INT")->check(integerIn(1, 1 << 20));
  command.add_option("--lr", f.lr, "optimizer.lr")->type_name("FLOAT")->check(positiveNumber());
  command.add_option("--seed", f.seed, "seed")->type_name("INT")->check(integerIn(0, INT64_MAX));
  command.add_option("--device", f.device, "device: cpu, cuda:N or auto");
  command.add_option("--threads", f.threads, "threads: LibTorch intra-op threads per process")
      ->type_name("INT")
      ->check(integerIn(1, 1024));
  command.add_option("--set", f.set, "a spec field, e.g. --set strategy.name=ssp (repeatable)")
      ->type_name("PATH=VALUE")
      ->allow_extra_args(false);
}

Result<ExperimentSpec> specFromFlags(const SpecFlags& flags, const std::string& specPath) {
  ExperimentSpec spec;
  if (!specPath.empty()) {
    auto loaded = loadSpecFile(specPath);
    if (!loaded) return loaded.status();
    spec = std::move(loaded).value();
  }
  const std::vector<std::tuple<const char*, const char*, const std::optional<std::string>*>> shorthands{
      {"--model", "model.name", &flags.model},       {"--dataset", "dataset.name", &flags.dataset},
      {"--dataset-path", "dataset.path", &flags.datasetPath}, {"--epochs", "stop.epochs", &flags.epochs},
      {"--batch", "batch_size", &flags.batch},       {"--lr", "optimizer.lr", &flags.lr},
      {"--seed", "seed", &flags.seed},               {"--device", "device", &flags.device},
      {"--threads", "threads", &flags.threads}};
  for (const auto& [flag, path, value] : shorthands) {
    if (!*value) continue;
    if (auto st = applyOverride(spec, std::string(path) + "=" + **value); !st) {
      return Status::error(std::string(flag) + " " + **value + ": " + st.message());
    }
  }
  for (const auto& assignment : flags.set) {
    if (auto st = applyOverride(spec, assignment); !st) return st;
  }
  // A dataset switched on the command line should not keep another dataset's path.
  if (flags.dataset && !flags.datasetPath && !specPath.empty()) {
    auto original = loadSpecFile(specPath);
    if (original && original->dataset().name() != spec.dataset().name()) {
      spec.mutable_dataset()->clear_path();
    }
  }
  if (auto st = validateSpec(spec); !st) {
    return Status::error((specPath.empty() ? std::string("spec") : specPath) + ": " + st.message());
  }
  return withDefaults(spec);
}

// --- parsing ---

namespace {

// "dasp bench train": the deepest subcommand the parser selected.
std::string commandPath(const CLI::App& dasp) {
  const CLI::App* at = &dasp;
  std::string path = dasp.get_name();
  while (!at->get_subcommands().empty()) {
    at = at->get_subcommands().back();
    path += " " + at->get_name();
  }
  return path;
}

bool isSubcommand(const CLI::App& dasp, const std::string& word) {
  for (const CLI::App* sub : dasp.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(word)) return true;
  }
  return false;
}

}  // namespace

void addCommands(CLI::App& dasp, int& exitCode) {
  addRunCommand(dasp, exitCode);
  addTrainCommand(dasp, exitCode);
  addRunsCommand(dasp, exitCode);
  addProfileCommands(dasp, exitCode);
  addTablesCommand(dasp, exitCode);
  addValidateCommand(dasp, exitCode);
  addBenchCommand(dasp, exitCode);
  addInfoCommand(dasp, exitCode);
  addSlurmScriptCommand(dasp, exitCode);
  addNodeCommands(dasp, exitCode);
}

int parseAndRun(CLI::App& dasp, int argc, char** argv, const int& exitCode) {
  if (argc < 2) {
    std::cout << dasp.help();
    return 2;
  }
  const std::string first = argv[1];
  if (first == "help") {
    std::cout << dasp.help();
    return 0;
  }
  if (first.rfind('-', 0) != 0 && !isSubcommand(dasp, first)) {
    return fail("unknown command '" + first + "' (see 'dasp --help')");
  }
  try {
    dasp.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return dasp.exit(e);  // the help of the subcommand given, on stdout
  } catch (const CLI::CallForAllHelp& e) {
    return dasp.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see '" + commandPath(dasp) + " --help')");
  }
  return exitCode;
}

int runDasp(int argc, char** argv) {
  CLI::App dasp("dasp: distributed training over heterogeneous clusters: a parameter server, its workers and "
                "evaluator, the virtual-cluster engine, the run store and the results tables.",
                "dasp");
  dasp.require_subcommand(1);
  dasp.footer("Run 'dasp <command> --help' for the options of a command.");
  int exitCode = 0;
  addCommands(dasp, exitCode);
  return parseAndRun(dasp, argc, argv, exitCode);
}

}  // namespace dasp::cli
