// SPDX-License-Identifier: MIT
#include "ml/node_compute.h"

#include "core/data/dataset_loader.h"
#include "ml/trainer.h"

namespace dasp::ml {

std::string workerDevice(const ExperimentSpec& spec, int rank) {
  // As expandWorkers(spec)[rank].device(), without copying every NodeSpec (the engine
  // builds thousands of sources): only an explicit `cluster.workers` list has devices.
  const auto& cluster = spec.cluster();
  if (rank >= 0 && rank < cluster.workers_size() && !cluster.workers(rank).device().empty()) {
    return cluster.workers(rank).device();
  }
  return spec.device().empty() ? std::string("auto") : spec.device();
}

Result<std::unique_ptr<ShardGradientSource>> ShardGradientSource::create(const ExperimentSpec& spec,
                                                                         const Dataset& train, int rank,
                                                                         int worldSize,
                                                                         const std::vector<std::int64_t>* shard) {
  if (rank < 0 || rank >= worldSize) {
    return Status::error("rank " + std::to_string(rank) + " out of range for " + std::to_string(worldSize) +
                         " workers");
  }
  configureThreads(spec.threads());
  auto options = modelOptionsFor(spec, train);
  options.device = workerDevice(spec, rank);
  auto model = Model::create(options);
  if (!model) {
    const bool own = rank < spec.cluster().workers_size() && !spec.cluster().workers(rank).device().empty();
    const std::string field = own ? "cluster.workers[" + std::to_string(rank) + "].device" : std::string("device");
    const std::string name = rank < spec.cluster().workers_size() && !spec.cluster().workers(rank).name().empty()
                                 ? spec.cluster().workers(rank).name()
                                 : "worker-" + std::to_string(rank);
    return Status::error(field + " (" + name + "): " + model.message());
  }
  std::unique_ptr<ShardGradientSource> s(new ShardGradientSource());
  s->m_train = &train;
  s->m_model = std::move(model).value();
  s->m_batch = spec.batch_size();
  auto order = workerBatchOrder(spec, train, rank, worldSize, shard);
  if (!order) return order.status();
  s->m_order = std::move(order).value();
  return s;
}

Result<double> ShardGradientSource::computeGradient(const float* params, float* gradient) {
  const auto batch = std::min<std::size_t>(static_cast<std::size_t>(m_batch), m_order.size());
  // In the caller's buffers where the model can be (a shared-memory region's slots are):
  // the same bits without the two copies.
  const bool inPlace = m_model->bindBuffers(params, gradient);
  if (!inPlace) {
    m_model->unbindBuffers();
    m_model->copyParametersFrom(params);
  }
  BatchRef ref;
  ref.data = m_train;
  ref.indices = m_order.next(batch);
  ref.count = static_cast<std::int64_t>(batch);
  auto loss = m_model->forwardBackward(ref);
  if (!loss) return loss;
  if (!inPlace) m_model->copyGradientsTo(gradient);
  return loss;
}

Result<std::unique_ptr<TestSetEvaluator>> TestSetEvaluator::create(const ExperimentSpec& spec,
                                                                   const Dataset& train, const Dataset& test,
                                                                   std::int64_t limit) {
  configureThreads(spec.threads());
  auto model = Model::create(modelOptionsFor(spec, train));
  if (!model) return model.status();
  std::unique_ptr<TestSetEvaluator> e(new TestSetEvaluator());
  e->m_test = &test;
  e->m_model = std::move(model).value();
  e->m_limit = limit;
  return e;
}

Evaluation TestSetEvaluator::evaluate(const float* params) {
  m_model->copyParametersFrom(params);
  return m_model->evaluate(*m_test, m_limit);
}

Result<std::vector<float>> initialParameters(const ExperimentSpec& spec, const Dataset& train) {
  // On the CPU whatever the spec's device: the values are the same (the zoo initialises on
  // the CPU before moving a network), and the server process never needs a GPU.
  auto options = modelOptionsFor(spec, train);
  options.device = "cpu";
  auto model = Model::create(options);
  if (!model) return model.status();
  std::vector<float> params(static_cast<std::size_t>(model.value()->parameterCount()));
  model.value()->copyParametersTo(params.data());
  return params;
}

}  // namespace dasp::ml
