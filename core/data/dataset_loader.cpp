// SPDX-License-Identifier: MIT
#include "core/data/dataset_loader.h"

namespace dasp {
namespace {

// Channel statistics of the training sets, the usual published values.
struct Stats {
  std::vector<float> mean, stddev;
};
Stats statsFor(const std::string& name) {
  if (name == "fashion-mnist") return {{0.2860f}, {0.3530f}};
  if (name == "mnist") return {{0.1307f}, {0.3081f}};
  if (name == "cifar10") return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  return {};
}

}  // namespace

Result<TrainTest> loadDataset(const v1::DatasetSpec& spec, std::uint64_t seed) {
  const std::string& name = spec.name();
  Result<TrainTest> loaded = Status::error("dataset.name: unknown dataset '" + name + "'");
  if (name == "fashion-mnist" || name == "mnist") {
    loaded = loadIdxDirectory(spec.path(), name, spec.train_limit(), spec.test_limit());
  } else if (name == "cifar10") {
    loaded = loadCifar10(spec.path(), spec.train_limit(), spec.test_limit());
  } else if (name == "synthetic") {
    SyntheticOptions options;
    const auto& s = spec.synthetic();
    if (s.has_classes()) options.classes = s.classes();
    if (s.has_dimension()) options.dimension = s.dimension();
    if (s.has_train_count()) options.trainCount = s.train_count();
    if (s.has_test_count()) options.testCount = s.test_count();
    if (s.has_separation()) options.separation = s.separation();
    // The data depends on the experiment's seed so that seeds vary the whole run.
    loaded = makeSynthetic(options, seed);
    if (loaded && spec.train_limit() > 0 && spec.train_limit() < loaded->train.count) {
      loaded->train.count = spec.train_limit();
      loaded->train.features.resize(static_cast<std::size_t>(loaded->train.count * loaded->train.sampleSize()));
      loaded->train.labels.resize(static_cast<std::size_t>(loaded->train.count));
    }
    if (loaded && spec.test_limit() > 0 && spec.test_limit() < loaded->test.count) {
      loaded->test.count = spec.test_limit();
      loaded->test.features.resize(static_cast<std::size_t>(loaded->test.count * loaded->test.sampleSize()));
      loaded->test.labels.resize(static_cast<std::size_t>(loaded->test.count));
    }
  }
  if (!loaded) return loaded;
  const bool normalizeInputs = !spec.has_normalize() || spec.normalize();
  const auto stats = statsFor(name);
  if (normalizeInputs && !stats.mean.empty()) {
    normalize(loaded->train, stats.mean, stats.stddev);
    normalize(loaded->test, stats.mean, stats.stddev);
  }
  return loaded;
}

ShardMode shardModeOf(const v1::DatasetSpec& dataset) {
  return dataset.partition() == v1::DatasetSpec::DIRICHLET ? ShardMode::Dirichlet : ShardMode::Iid;
}

Result<ShardBatchOrder> workerBatchOrder(const ExperimentSpec& spec, const Dataset& train, int rank, int worldSize,
                                         const std::vector<std::int64_t>* shard) {
  std::vector<std::int64_t> mine =
      shard != nullptr ? *shard
                       : shardIndices(train, rank, worldSize, shardModeOf(spec.dataset()), spec.dataset().dirichlet_alpha(),
                                      spec.seed());
  if (mine.empty()) {
    return Status::error("worker " + std::to_string(rank) + " of " + std::to_string(worldSize) +
                         " has an empty shard (too many workers for " + std::to_string(train.count) +
                         " samples, or a very skewed dataset.dirichlet_alpha)");
  }
  return ShardBatchOrder(std::move(mine), spec.seed() * 1000003ULL + static_cast<std::uint64_t>(rank));
}

}  // namespace dasp

