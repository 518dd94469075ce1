// SPDX-License-Identifier: MIT
#pragma once
// Softmax (multinomial logistic) regression in plain C++, for the simulator's policy-only
// mode: thousands of simulated workers need real gradients, and a LibTorch model per worker
// (hundreds of MB, a dispatcher round trip per op) would cost far more than the model.
// This one keeps a few small buffers per worker and computes a batch in tens of
// microseconds, so a sync policy is exercised on gradients whose noise, staleness effects
// and convergence are real, without core depending on LibTorch.
//
// Model: logits = W x + b, with W classes x features row-major, then b (the same flat layout
// as the LibTorch `logreg` model: Linear weight [out, in], then bias). The loss is the mean
// cross-entropy of the batch.
// Determinism: every sum runs in a fixed order, so the same inputs give bitwise the same
// gradient and loss within one build.
// Threading: each object is used by one thread at a time; the Dataset it points to must
// outlive it and stay unchanged.

#include "core/data/dataset.h"
#include "core/common/gradient_source.h"
#include "core/spec/spec.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace dasp {

// classes * features + classes.
std::int64_t softmaxParameterCount(const Dataset& data);

// W ~ N(0, 0.01^2) drawn from a std::mt19937_64 seeded with a mix of `seed` (our own
// Box-Muller, so every standard library gives the same draws), b = 0. The mix keeps W
// independent of a synthetic dataset made from the same seed.
std::vector<float> softmaxInitialParameters(const Dataset& train, std::uint64_t seed);

// Gradients of worker `rank` of `worldSize` on its shard of the training set, batches in
// the same seeded per-epoch shuffle as ml::ShardGradientSource, so a simulated worker sees
// the batches a real `dasp` worker with the same spec would. computeGradient() allocates
// nothing: the batch buffers are sized at construction.
class SoftmaxGradientSource final : public GradientSource {
 public:
  // The shard follows spec.dataset().partition() (IID or DIRICHLET with
  // dataset.dirichlet_alpha) and spec.seed(); the batch is spec.batch_size(), capped at the
  // shard size. Errors name the problem: a bad rank, batch_size <= 0, an empty shard, a
  // dataset whose sizes disagree or whose labels fall outside [0, classes).
  // `shard`, when given, is this rank's allShards() entry (the simulator computes every
  // shard in one pass instead of once per rank).
  static Result<std::unique_ptr<SoftmaxGradientSource>> create(const ExperimentSpec& spec,
                                                               const Dataset& train, int rank,
                                                               int worldSize,
                                                               const std::vector<std::int64_t>* shard = nullptr);

  std::int64_t parameterCount() const override { return m_parameterCount; }
  int batchSize() const override { return m_batch; }
  // Gradient of the mean cross-entropy of the next batch into `gradient`; returns that loss.
  Result<double> computeGradient(const float* params, float* gradient) override;
  // Resizes the work buffers only when the batch grows beyond the largest so far.
  bool setBatchSize(int batch) override;

  std::int64_t shardSize() const { return static_cast<std::int64_t>(m_order.size()); }

 private:
  SoftmaxGradientSource() = default;

  const Dataset* m_train = nullptr;
  ShardBatchOrder m_order;
  int m_batch = 0;                     // as the spec says
  std::size_t m_rows = 0;              // samples per computed batch: min(batch, shard)
  std::size_t m_features = 0;
  std::size_t m_classes = 0;
  std::int64_t m_parameterCount = 0;
  // Work buffers, sized once (see the .cpp for the layouts).
  std::vector<float> m_xT;       // features x rows: the batch, transposed
  std::vector<float> m_z;        // classes x rows: logits, then probabilities, then dL/dz
  std::vector<float> m_max;      // rows
  std::vector<float> m_sum;      // rows
  std::vector<float> m_target;   // rows: the label's logit minus the max
  std::vector<std::size_t> m_labels;  // rows
};

// Loss (mean cross-entropy) and accuracy of parameters on the first `limit` test samples
// (0 = all), computed in fixed-size chunks so memory does not grow with the test set.
// evaluate() allocates nothing.
class SoftmaxEvaluator final : public ParameterEvaluator {
 public:
  // Errors name the problem: an empty test set, sizes that disagree, labels out of range.
  static Result<std::unique_ptr<SoftmaxEvaluator>> create(const Dataset& test, std::int64_t limit);

  std::int64_t parameterCount() const override { return m_parameterCount; }
  Evaluation evaluate(const float* params) override;

 private:
  SoftmaxEvaluator() = default;

  const Dataset* m_test = nullptr;
  std::size_t m_samples = 0;  // how many test samples evaluate() uses
  std::size_t m_features = 0;
  std::size_t m_classes = 0;
  std::int64_t m_parameterCount = 0;
  std::vector<float> m_xT;  // features x chunk
  std::vector<float> m_z;   // classes x chunk
  std::vector<float> m_max;
  std::vector<float> m_sum;
  std::vector<float> m_target;
  std::vector<std::size_t> m_labels;
  std::vector<std::size_t> m_argmax;
};

}  // namespace dasp
