// SPDX-License-Identifier: MIT
#pragma once
// The computation `dasp` wires into the virtual-cluster engine (core/sim/sim_engine.h): the
// spec's data, the initial parameters, a gradient source per worker and the evaluators —
// the spec's LibTorch model (sim.gradients REAL) or the plain-C++ softmax model
// (POLICY_ONLY). The bundle owns what the engine borrows.
// Threading: built and used on one thread (the engine's).

#include "core/data/dataset.h"
#include "core/sim/sim_engine.h"
#include "core/spec/spec.h"

#include <memory>

namespace dasp::ml {

struct SimComputeBundle {
  TrainTest data;
  std::unique_ptr<ParameterEvaluator> periodic;  // evaluation.test_subset
  std::unique_ptr<ParameterEvaluator> final;     // the whole test set
  std::vector<std::vector<std::int64_t>> shards;  // every rank's shard, made once
  SimCompute compute;                            // points into the members above
};

// Loads the spec's dataset and builds the bundle; errors name the file or the field.
Result<std::unique_ptr<SimComputeBundle>> makeSimCompute(const ExperimentSpec& spec);

}  // namespace dasp::ml
