// SPDX-License-Identifier: MIT
#pragma once
// Dataset: images or feature vectors with integer labels, held as one contiguous float
// buffer so a trainer can wrap it without copying. Readers for the IDX format
// (Fashion-MNIST/MNIST, gzip or raw), the CIFAR-10 binary format and a synthetic
// Gaussian-clusters generator, plus deterministic sharding by worker rank.
//
// Every reader checks what it reads (magic numbers, sizes, counts, short files) and
// returns an error that names the file and the problem; nothing here throws or aborts.
// Threading: free functions over values; safe from any thread.

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dasp {

struct Dataset {
  std::string name;
  std::int64_t count = 0;  // number of samples
  int channels = 1, height = 1, width = 1;  // shape of one sample (C, H, W)
  int classes = 0;
  std::vector<float> features;        // count * channels * height * width, row-major
  std::vector<std::int64_t> labels;   // count labels in [0, classes)

  std::int64_t sampleSize() const {
    return static_cast<std::int64_t>(channels) * height * width;
  }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Reads an IDX image file (magic 0x00000803) and label file (0x00000801), gzip or raw
// (zlib reads both). Pixels become floats in [0, 1]. `limit` > 0 keeps the first `limit`.
Result<Dataset> readIdx(const std::string& imagesPath, const std::string& labelsPath,
                        std::int64_t limit = 0);

// Fashion-MNIST or MNIST from a directory holding train-images-idx3-ubyte[.gz],
// train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz].
// A missing directory or file gives a message that says how to get the data
// (install `dataset-fashion-mnist`, or pass dataset.path).
Result<TrainTest> loadIdxDirectory(const std::string& directory, const std::string& name,
                                   std::int64_t trainLimit = 0, std::int64_t testLimit = 0);

// CIFAR-10 binary version: data_batch_1..5.bin and test_batch.bin in `directory`
// (3073-byte records: label then 3x32x32 pixels).
Result<TrainTest> loadCifar10(const std::string& directory, std::int64_t trainLimit = 0,
                              std::int64_t testLimit = 0);

struct SyntheticOptions {
  int classes = 10;
  int dimension = 32;           // features per sample (shape 1 x 1 x dimension)
  std::int64_t trainCount = 4096;
  std::int64_t testCount = 1024;
  double separation = 3.0;      // distance scale between class centres, in noise std units
};
// Gaussian clusters: one centre per class drawn from the seed, samples = centre + N(0, 1).
// The same seed gives bitwise the same data.
TrainTest makeSynthetic(const SyntheticOptions& options, std::uint64_t seed);

// Per-channel normalisation in place: x <- (x - mean) / std.
void normalize(Dataset& data, const std::vector<float>& mean, const std::vector<float>& stddev);

enum class ShardMode { Iid, Dirichlet };
// The sample indices worker `rank` of `worldSize` trains on. IID: a seeded permutation cut
// into equal contiguous parts. Dirichlet: per class, proportions ~ Dir(alpha) over workers
// (label skew; small alpha = more skew). Deterministic in (seed, rank, worldSize); the
// shards of all ranks are disjoint and cover the dataset (IID may drop < worldSize samples).
std::vector<std::int64_t> shardIndices(const Dataset& data, int rank, int worldSize,
                                       ShardMode mode, double alpha, std::uint64_t seed);
// The batches one worker draws from its shard: a seeded Fisher–Yates shuffle of the shard
// per epoch, batches taken in order and never wrapping (a new epoch starts when fewer than
// a batch remain). Real workers (ml::ShardGradientSource) and the simulator's policy-only
// workers (SoftmaxGradientSource) both draw through it, so a simulated worker sees the
// batches a real one with the same spec would.
// Threading: owned by one source, used by one thread.
class ShardBatchOrder {
 public:
  ShardBatchOrder() = default;
  // `seed` is the worker's own (workerBatchSeed in core/data/dataset_loader.h).
  ShardBatchOrder(std::vector<std::int64_t> shard, std::uint64_t seed);
  std::size_t size() const { return m_order.size(); }
  // The next `batch` sample indices (batch <= size()).
  const std::int64_t* next(std::size_t batch);

 private:
  void reshuffle();
  std::vector<std::int64_t> m_order;  // the current epoch's order over the shard
  std::size_t m_cursor = 0;
  std::uint64_t m_seed = 0;
  std::uint64_t m_epoch = 0;
};

// Every rank's shard at once (shards[rank] == shardIndices(..., rank, ...)), in one pass:
// for the simulator's thousands of workers.
std::vector<std::vector<std::int64_t>> allShards(const Dataset& data, int worldSize, ShardMode mode, double alpha,
                                                std::uint64_t seed);

}  // namespace dasp
