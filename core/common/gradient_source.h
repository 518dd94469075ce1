// SPDX-License-Identifier: MIT
#pragma once
// The seams between the training computation (LibTorch, in ml/) and the code that
// moves parameters (the gRPC worker and evaluator in net/, the simulator in core): net and
// the engine only see these interfaces; `dasp` wires the LibTorch implementations in.
// Threading: an implementation is used by one thread at a time.

#include "core/common/result.h"

#include <cstdint>

namespace dasp {

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
  std::int64_t samples = 0;
};

class GradientSource {
 public:
  virtual ~GradientSource() = default;
  virtual std::int64_t parameterCount() const = 0;
  virtual int batchSize() const = 0;
  // Loads `params` (parameterCount() floats), computes the gradient of the mean loss of
  // the next local batch into `gradient`, returns that loss.
  virtual Result<double> computeGradient(const float* params, float* gradient) = 0;
  // Sets the samples of the next gradients (DASP's ADAPTIVE rule sizes each node's batch;
  // batch >= 1). Returns false when this source's batch is fixed and differs. A source
  // allocates only when the batch grows beyond the largest it has had.
  virtual bool setBatchSize(int batch) { return batch == batchSize(); }
};

class ParameterEvaluator {
 public:
  virtual ~ParameterEvaluator() = default;
  virtual std::int64_t parameterCount() const = 0;
  // Loss and accuracy of the model with `params` on the evaluation set.
  virtual Evaluation evaluate(const float* params) = 0;
};

}  // namespace dasp
