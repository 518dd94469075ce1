// SPDX-License-Identifier: MIT
#include "core/ml/node_compute.h"

#include "core/ml/trainer.h"

#include <random>

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
                                                                         int worldSize) {
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
  s->m_seed = spec.seed() * 1000003ULL + static_cast<std::uint64_t>(rank);
  const auto mode = spec.dataset().partition() == v1::DatasetSpec::DIRICHLET ? ShardMode::Dirichlet
                                                                              : ShardMode::Iid;
  s->m_shard = shardIndices(train, rank, worldSize, mode, spec.dataset().dirichlet_alpha(), spec.seed());
  if (s->m_shard.empty()) {
    return Status::error("worker " + std::to_string(rank) + " of " + std::to_string(worldSize) +
                         " has an empty shard (too many workers for " + std::to_string(train.count) +
                         " samples, or a very skewed dataset.dirichlet_alpha)");
  }
  s->m_order = s->m_shard;
  s->reshuffle();
  return s;
}

void ShardGradientSource::reshuffle() {
  std::mt19937_64 rng(m_seed * 0x9E3779B97F4A7C15ULL + m_epoch);
  for (std::size_t i = m_order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng() % i);
    std::swap(m_order[i - 1], m_order[j]);
  }
  m_cursor = 0;
}

Result<double> ShardGradientSource::computeGradient(const float* params, float* gradient) {
  const auto batch = std::min<std::size_t>(static_cast<std::size_t>(m_batch), m_order.size());
  if (m_cursor + batch > m_order.size()) {
    ++m_epoch;
    reshuffle();
  }
  m_model->copyParametersFrom(params);
  BatchRef ref;
  ref.data = m_train;
  ref.indices = m_order.data() + m_cursor;
  ref.count = static_cast<std::int64_t>(batch);
  auto loss = m_model->forwardBackward(ref);
  if (!loss) return loss;
  m_cursor += batch;
  m_model->copyGradientsTo(gradient);
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
