// SPDX-License-Identifier: MIT
// `dasp bench train [--models mlp,lenet] [--batch 64] [--rounds 7] [--seconds 1]
//                   [--dataset-path DIR] [--json]`
// Benchmarks report ratios against a baseline measured in the same run.
#include "app/cli/cli.h"

#include "core/dataset_loader.h"
#include "core/ml/model.h"
#include "core/ml/train_bench.h"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace dasp::cli {
namespace {

int benchTrain(const Args& args) {
  std::vector<std::string> models;
  std::stringstream list(args.value("--models").value_or("mlp,lenet"));
  for (std::string m; std::getline(list, m, ',');) {
    if (!m.empty()) models.push_back(m);
  }
  int batch = 64, rounds = 7;
  double seconds = 1.0;
  try {
    batch = std::stoi(args.value("--batch").value_or("64"));
    rounds = std::stoi(args.value("--rounds").value_or("7"));
    seconds = std::stod(args.value("--seconds").value_or("1"));
  } catch (const std::exception&) {
    return fail("bench train: --batch, --rounds and --seconds take numbers");
  }
  if (batch <= 0 || rounds <= 0 || !(seconds > 0)) return fail("bench train: values must be positive");
  v1::DatasetSpec dataSpec;
  dataSpec.set_name("fashion-mnist");
  dataSpec.set_path(args.value("--dataset-path").value_or("/usr/share/datasets/fashion-mnist"));
  dataSpec.set_normalize(true);
  auto data = loadDataset(dataSpec, 1);
  if (!data) return fail(data.message());
  ml::configureThreads(1);

  const bool json = args.has("--json");
  std::vector<ml::TrainBenchCase> cases;
  for (const auto& model : models) {
    if (!json) std::fprintf(stderr, "bench train: %s, batch %d, %d rounds ...\n", model.c_str(), batch, rounds);
    auto c = ml::benchTrain(model, batch, data.value(), seconds, rounds, 1);
    if (!c) return fail(c.message(), 1);
    cases.push_back(c.value());
  }
  double minRatio = cases.empty() ? 0 : cases.front().ratio;
  for (const auto& c : cases) minRatio = std::min(minRatio, c.ratio);
  if (json) {
    std::cout << "{\"bench\":\"train\",\"batch\":" << batch << ",\"threads\":1,\"cases\":[";
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      std::cout << (i ? "," : "") << "{\"model\":" << jsonString(c.model) << ",\"parameters\":" << c.parameters
                << ",\"trainer_samples_per_s\":" << jsonNumber(c.trainerSamplesPerS)
                << ",\"baseline_samples_per_s\":" << jsonNumber(c.baselineSamplesPerS)
                << ",\"ratio\":" << jsonNumber(c.ratio) << ",\"rounds\":" << c.rounds << "}";
    }
    std::cout << "],\"min_ratio\":" << jsonNumber(minRatio) << "}" << std::endl;
  } else {
    std::printf("%-10s %12s %14s %14s %7s\n", "model", "parameters", "trainer s/s", "plain s/s", "ratio");
    for (const auto& c : cases) {
      std::printf("%-10s %12lld %14.0f %14.0f %7.3f\n", c.model.c_str(), static_cast<long long>(c.parameters),
                  c.trainerSamplesPerS, c.baselineSamplesPerS, c.ratio);
    }
  }
  return 0;
}

}  // namespace

int cmdBench(int argc, char** argv) {
  Args args(argc, argv, 3, {"--json"});
  const std::string which = argc > 2 ? argv[2] : "";
  if (which == "train") {
    if (auto u = args.unknown({"--models", "--batch", "--rounds", "--seconds", "--dataset-path", "--json"});
        !u.empty()) {
      return fail("unknown option " + u.front());
    }
    return benchTrain(args);
  }
  return fail("usage: dasp bench train [--models mlp,lenet] [--batch 64] [--rounds 7] [--seconds 1] [--json]");
}

}  // namespace dasp::cli
