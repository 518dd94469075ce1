// SPDX-License-Identifier: MIT
#pragma once
// The training benchmark behind `dasp bench train`: our SingleNodeTrainer against a plain
// LibTorch loop written here (torch::optim::SGD, index_select batches, zero_grad, forward,
// cross-entropy, backward, step) on the same model, data and batch, measured in
// alternating rounds in the same process. The ratio says whether the trainer adds overhead.
// On a CUDA device both run there: the plain loop gathers a batch on the host and moves it
// with Tensor::to, the trainer through its staging buffer; both read the loss every step.
// Threading: call from one thread.

#include "core/data/dataset.h"
#include "core/common/result.h"

#include <string>
#include <vector>

namespace dasp::ml {

struct TrainBenchCase {
  std::string model;
  std::string device;              // where both ran ("cpu", "cuda:0")
  int batch = 0;
  double trainerSamplesPerS = 0;   // median over rounds
  double baselineSamplesPerS = 0;  // median over rounds
  double ratio = 0;                // trainer / baseline
  int rounds = 0;
  std::int64_t parameters = 0;
};

Result<TrainBenchCase> benchTrain(const std::string& model, int batch, const TrainTest& data,
                                  double secondsPerRound, int rounds, std::uint64_t seed,
                                  const std::string& device = "cpu");

}  // namespace dasp::ml
