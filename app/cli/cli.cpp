// SPDX-License-Identifier: MIT
#include "app/cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace dasp::cli {

Args::Args(int argc, char** argv, int first, const std::vector<std::string>& switches) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      m_positional.push_back(a);
      continue;
    }
    const auto eq = a.find('=');
    if (eq != std::string::npos) {
      m_values.emplace(a.substr(0, eq), a.substr(eq + 1));
    } else if (std::find(switches.begin(), switches.end(), a) != switches.end()) {
      m_values.emplace(a, "");
    } else if (i + 1 < argc) {
      m_values.emplace(a, argv[++i]);
    } else {
      m_missingValue = a;
    }
  }
}

std::optional<std::string> Args::value(const std::string& flag) const {
  auto range = m_values.equal_range(flag);
  if (range.first == range.second) return std::nullopt;
  return std::prev(range.second)->second;  // the last one wins
}

std::vector<std::string> Args::values(const std::string& flag) const {
  std::vector<std::string> out;
  auto range = m_values.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

bool Args::has(const std::string& flag) const { return m_values.count(flag) > 0; }

std::vector<std::string> Args::unknown(const std::vector<std::string>& known) const {
  std::vector<std::string> out;
  for (const auto& [flag, value] : m_values) {
    if (std::find(known.begin(), known.end(), flag) == known.end()) out.push_back(flag);
  }
  return out;
}

int fail(const std::string& message, int code) {
  std::cerr << "dasp: " << message << std::endl;
  return code;
}

}  // namespace dasp::cli

namespace dasp::cli {

const std::vector<std::string>& specFlags() {
  static const std::vector<std::string> flags{"--model",  "--dataset", "--dataset-path",
                                              "--epochs", "--batch",   "--lr",
                                              "--seed",   "--device",  "--threads",
                                              "--set"};
  return flags;
}

Result<ExperimentSpec> specFromArgs(const Args& args, const std::string& specPath) {
  ExperimentSpec spec;
  if (!specPath.empty()) {
    auto loaded = loadSpecFile(specPath);
    if (!loaded) return loaded.status();
    spec = std::move(loaded).value();
  }
  static const std::vector<std::pair<std::string, std::string>> shorthands{
      {"--model", "model.name"},     {"--dataset", "dataset.name"},
      {"--dataset-path", "dataset.path"}, {"--epochs", "stop.epochs"},
      {"--batch", "batch_size"},     {"--lr", "optimizer.lr"},
      {"--seed", "seed"},            {"--device", "device"},
      {"--threads", "threads"}};
  for (const auto& [flag, path] : shorthands) {
    if (auto v = args.value(flag)) {
      if (auto st = applyOverride(spec, path + "=" + *v); !st) {
        return Status::error(flag + " " + *v + ": " + st.message());
      }
    }
  }
  for (const auto& assignment : args.values("--set")) {
    if (auto st = applyOverride(spec, assignment); !st) return st;
  }
  // A dataset switched on the command line should not keep another dataset's path.
  if (args.value("--dataset") && !args.value("--dataset-path") && !specPath.empty()) {
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

}  // namespace dasp::cli
