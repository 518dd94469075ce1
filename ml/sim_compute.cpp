// SPDX-License-Identifier: MIT
#include "ml/sim_compute.h"

#include "core/data/dataset_loader.h"
#include "ml/model.h"
#include "ml/node_compute.h"
#include "core/sim/softmax_model.h"

namespace dasp::ml {

Result<std::unique_ptr<SimComputeBundle>> makeSimCompute(const ExperimentSpec& spec) {
  auto bundle = std::make_unique<SimComputeBundle>();
  auto data = loadDataset(spec.dataset(), spec.seed());
  if (!data) return data.status();
  bundle->data = std::move(data).value();
  const Dataset& train = bundle->data.train;
  const Dataset& test = bundle->data.test;
  const std::int64_t subset = spec.evaluation().test_subset();
  SimCompute& c = bundle->compute;
  c.trainCount = train.count;
  const bool policyOnly = spec.sim().gradients() == v1::SimSpec::POLICY_ONLY;
  if (policyOnly) {
    c.initialParameters = softmaxInitialParameters(train, spec.seed());
    auto periodic = SoftmaxEvaluator::create(test, subset);
    if (!periodic) return periodic.status();
    auto final = SoftmaxEvaluator::create(test, 0);
    if (!final) return final.status();
    bundle->periodic = std::move(periodic).value();
    bundle->final = std::move(final).value();
  } else {
    configureThreads(spec.threads());
    auto initial = initialParameters(spec, train);
    if (!initial) return initial.status();
    c.initialParameters = std::move(initial).value();
    auto periodic = TestSetEvaluator::create(spec, train, test, subset);
    if (!periodic) return periodic.status();
    auto final = TestSetEvaluator::create(spec, train, test, 0);
    if (!final) return final.status();
    bundle->periodic = std::move(periodic).value();
    bundle->final = std::move(final).value();
  }
  // Every rank's shard is made once, on the first source of a cluster size.
  SimComputeBundle* b = bundle.get();
  c.makeSource = [b, &train, spec, policyOnly](int rank, int workers) -> Result<std::unique_ptr<GradientSource>> {
    if (b->shards.size() != static_cast<std::size_t>(workers)) {
      b->shards = allShards(train, workers, shardModeOf(spec.dataset()), spec.dataset().dirichlet_alpha(), spec.seed());
    }
    const auto* shard = &b->shards[static_cast<std::size_t>(rank)];
    if (policyOnly) {
      auto s = SoftmaxGradientSource::create(spec, train, rank, workers, shard);
      if (!s) return s.status();
      return std::unique_ptr<GradientSource>(std::move(s).value());
    }
    auto s = ShardGradientSource::create(spec, train, rank, workers, shard);
    if (!s) return s.status();
    return std::unique_ptr<GradientSource>(std::move(s).value());
  };
  c.evaluator = bundle->periodic.get();
  c.finalEvaluator = bundle->final.get();
  return bundle;
}

}  // namespace dasp::ml
