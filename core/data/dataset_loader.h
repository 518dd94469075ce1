// SPDX-License-Identifier: MIT
#pragma once
// Loads the train and test sets an ExperimentSpec names (resolved with withDefaults),
// applies its limits and normalisation. The one place that maps dataset names to readers.
// Threading: free function; safe from any thread.

#include "core/data/dataset.h"
#include "core/spec/spec.h"

namespace dasp {

Result<TrainTest> loadDataset(const v1::DatasetSpec& spec, std::uint64_t seed);

// Worker `rank` of `worldSize`'s batch order over its shard of `train` as the spec says
// (partition, Dirichlet alpha, seed): `shard` when given (the simulator makes every shard
// in one pass, allShards), else shardIndices(). An empty shard is an error that says why.
Result<ShardBatchOrder> workerBatchOrder(const ExperimentSpec& spec, const Dataset& train, int rank, int worldSize,
                                         const std::vector<std::int64_t>* shard = nullptr);

// The partition the spec asks for.
ShardMode shardModeOf(const v1::DatasetSpec& dataset);

}  // namespace dasp
