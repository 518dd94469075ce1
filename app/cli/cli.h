// SPDX-License-Identifier: MIT
#pragma once
// The `dasp` command line: argument scanning shared by the subcommands, and the
// subcommands themselves (one file each). Each returns the process exit code: 0 success,
// 1 a failure at run time, 2 bad usage or bad input.
// Threading: run on the main thread.

#include "core/json_text.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dasp::cli {

// Scans `--flag value`, `--flag=value` and bare `--switch` arguments; anything else is
// positional. Repeated flags (--set) keep every value.
class Args {
 public:
  Args(int argc, char** argv, int first, const std::vector<std::string>& switches);
  std::optional<std::string> value(const std::string& flag) const;
  std::vector<std::string> values(const std::string& flag) const;
  bool has(const std::string& flag) const;
  const std::vector<std::string>& positional() const { return m_positional; }
  // Flags given that are not in `known`: for an "unknown option" error.
  std::vector<std::string> unknown(const std::vector<std::string>& known) const;
  // A flag given without its value.
  const std::string& missingValue() const { return m_missingValue; }

 private:
  std::multimap<std::string, std::string> m_values;
  std::vector<std::string> m_positional;
  std::string m_missingValue;
};

using ::dasp::jsonNumber;  // core/json_text.h
using ::dasp::jsonString;

// Prints "dasp: <message>" to stderr and returns `code`.
int fail(const std::string& message, int code = 2);

int cmdTrain(int argc, char** argv);
int cmdRuns(int argc, char** argv);
int cmdBench(int argc, char** argv);
// `dasp bench sim` (bench_sim.cpp), called by cmdBench.
int benchSim(const Args& args);
int cmdInfo(int argc, char** argv);
int cmdValidate(int argc, char** argv);
int cmdRun(int argc, char** argv);
int cmdTables(int argc, char** argv);
int cmdServer(int argc, char** argv);
int cmdWorker(int argc, char** argv);
int cmdEvaluator(int argc, char** argv);

}  // namespace dasp::cli

#include "core/result.h"
#include "core/spec.h"

namespace dasp::cli {

// The spec a command runs: the file (if any), then flag shorthands (--model, --dataset,
// --epochs, --batch, --lr, --seed, --device, --threads), then every --set; validated and
// resolved with defaults. Errors name the file or the flag.
Result<ExperimentSpec> specFromArgs(const Args& args, const std::string& specPath);

// Flags specFromArgs understands, for unknown-option checks.
const std::vector<std::string>& specFlags();

}  // namespace dasp::cli
