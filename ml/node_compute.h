// SPDX-License-Identifier: MIT
#pragma once
// LibTorch implementations of the compute seams (core/common/gradient_source.h) for the node
// roles: a worker's gradients on its shard, and the evaluator's test-set evaluation.
// Threading: each object is used by one thread.

#include "core/data/dataset.h"
#include "core/common/gradient_source.h"
#include "ml/model.h"
#include "core/spec/spec.h"

#include <memory>
#include <vector>

namespace dasp::ml {

// Gradients of worker `rank` of `worldSize` on its shard of the training set (the spec's
// partition), in a seeded per-epoch shuffle of the shard, on the worker's device
// (workerDevice). On the host, given 64-byte aligned buffers (a shared-memory region's
// slots), the model computes in them in place (Model::bindBuffers): no copy of the
// parameters in or of the gradient out. On a GPU each step moves its batch to the device
// in one copy and the gradient back in one copy (see Model); workers sharing a GPU each
// have their own stream (and, as `dasp worker` processes, their own CUDA context).
class ShardGradientSource final : public GradientSource {
 public:
  // `shard`, when given, is this rank's allShards() entry (the simulator makes every shard
  // in one pass).
  static Result<std::unique_ptr<ShardGradientSource>> create(const ExperimentSpec& spec,
                                                             const Dataset& train, int rank,
                                                             int worldSize,
                                                             const std::vector<std::int64_t>* shard = nullptr);
  std::int64_t parameterCount() const override { return m_model->parameterCount(); }
  int batchSize() const override { return m_batch; }
  Result<double> computeGradient(const float* params, float* gradient) override;
  bool setBatchSize(int batch) override {
    m_batch = batch;
    return batch >= 1;
  }
  std::int64_t shardSize() const { return static_cast<std::int64_t>(m_order.size()); }
  // Its model: after a gradient computed in place it is bound to that call's buffers
  // (Model::bindBuffers), so only what reads it (deviceName) is safe from outside.
  Model& model() { return *m_model; }

 private:
  ShardGradientSource() = default;
  const Dataset* m_train = nullptr;
  std::unique_ptr<Model> m_model;
  ShardBatchOrder m_order;
  int m_batch = 64;
};

// Evaluates parameters on the first `limit` test samples (0 = all).
class TestSetEvaluator final : public ParameterEvaluator {
 public:
  static Result<std::unique_ptr<TestSetEvaluator>> create(const ExperimentSpec& spec,
                                                          const Dataset& train, const Dataset& test,
                                                          std::int64_t limit);
  std::int64_t parameterCount() const override { return m_model->parameterCount(); }
  Evaluation evaluate(const float* params) override;

 private:
  TestSetEvaluator() = default;
  const Dataset* m_test = nullptr;
  std::unique_ptr<Model> m_model;
  std::int64_t m_limit = 0;
};

// The device of worker `rank`: its `cluster.workers[rank].device` when set, else the
// spec's `device` (auto | cpu | cuda:N; "auto" = cuda:0 when available).
std::string workerDevice(const ExperimentSpec& spec, int rank);

// The initial parameters of the spec's model (what the server starts from), computed on
// the CPU.
Result<std::vector<float>> initialParameters(const ExperimentSpec& spec, const Dataset& train);

}  // namespace dasp::ml
