// SPDX-License-Identifier: MIT
#include "core/sim/softmax_model.h"

#include "core/data/dataset_loader.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

namespace dasp {

namespace {

// Layouts. A batch of n samples is held "class-major": the n logits of class c lie together
// in z[c * n .. c * n + n), and the batch's inputs transposed, xT[f * n + i] = x_i[f]. Then
// every inner loop below runs over the n samples of one row, contiguous and independent,
// so the compiler vectorises it without reassociating a sum (no -ffast-math needed), and
// each output element is still summed in one fixed order: bitwise deterministic.

// The evaluator works in chunks of this many samples, so its buffers stay small (and in
// cache) whatever the test set's size.
constexpr std::size_t kEvalChunk = 256;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);  // 53 bits in [0, 1)
}

std::string describe(const Dataset& data, const char* role) {
  return std::string(role) + " '" + data.name + "'";
}

// The shape checks both classes need before they trust the raw buffers.
Status checkShape(const Dataset& data, const char* role) {
  if (data.classes <= 0) {
    return Status::error(describe(data, role) + ": classes is " + std::to_string(data.classes) +
                         ", need at least 1");
  }
  if (data.sampleSize() <= 0) {
    return Status::error(describe(data, role) + ": sample size is " + std::to_string(data.sampleSize()) +
                         ", need at least 1");
  }
  if (data.count < 0 || data.labels.size() < static_cast<std::size_t>(data.count) ||
      data.features.size() < static_cast<std::size_t>(data.count) * static_cast<std::size_t>(data.sampleSize())) {
    return Status::error(describe(data, role) + ": " + std::to_string(data.count) + " samples but " +
                         std::to_string(data.labels.size()) + " labels and " +
                         std::to_string(data.features.size()) + " feature values");
  }
  return Status::ok();
}

// A label outside [0, classes) would index past the logits, so it is refused up front
// instead of checked on every batch.
Status checkLabel(const Dataset& data, std::int64_t index, const char* role) {
  const std::int64_t label = data.labels[static_cast<std::size_t>(index)];
  if (label < 0 || label >= data.classes) {
    return Status::error(describe(data, role) + ": sample " + std::to_string(index) + " has label " +
                         std::to_string(label) + ", outside [0, " + std::to_string(data.classes) + ")");
  }
  return Status::ok();
}

// Copies samples indexOf(0..n) into xT (features x n) and their labels.
template <typename IndexOf>
void gather(const Dataset& data, IndexOf indexOf, std::size_t n, std::size_t features,
            float* __restrict xT, std::size_t* __restrict labels) {
  const float* base = data.features.data();
  for (std::size_t i = 0; i < n; ++i) {
    const auto index = static_cast<std::size_t>(indexOf(i));
    const float* __restrict x = base + index * features;
    // Strided writes, but the reads are one contiguous row and the whole block (a few KB
    // for the synthetic set) stays in L1.
    for (std::size_t f = 0; f < features; ++f) xT[f * n + i] = x[f];
    labels[i] = static_cast<std::size_t>(data.labels[index]);
  }
}

// z[c][i] = b[c] + sum_f W[c][f] * x_i[f], summed in f order.
void logits(const float* __restrict params, const float* __restrict xT, std::size_t n,
            std::size_t features, std::size_t classes, float* __restrict z) {
  const float* __restrict bias = params + classes * features;
  for (std::size_t c = 0; c < classes; ++c) {
    float* __restrict row = z + c * n;
    const float* __restrict w = params + c * features;
    const float bc = bias[c];
    for (std::size_t i = 0; i < n; ++i) row[i] = bc;
    for (std::size_t f = 0; f < features; ++f) {
      const float wf = w[f];
      const float* __restrict xf = xT + f * n;
      for (std::size_t i = 0; i < n; ++i) row[i] += wf * xf[i];
    }
  }
}

// Per sample: max[i] = the largest logit, target[i] = the label's logit minus it.
void maxAndTarget(const float* __restrict z, const std::size_t* __restrict labels, std::size_t n,
                  std::size_t classes, float* __restrict max, float* __restrict target) {
  for (std::size_t i = 0; i < n; ++i) max[i] = z[i];
  for (std::size_t c = 1; c < classes; ++c) {
    const float* __restrict row = z + c * n;
    for (std::size_t i = 0; i < n; ++i) max[i] = row[i] > max[i] ? row[i] : max[i];
  }
  for (std::size_t i = 0; i < n; ++i) target[i] = z[labels[i] * n + i] - max[i];
}

// Replaces the logits by exp(z - max) (subtracting the max keeps exp in (0, 1], so nothing
// overflows whatever the parameters) and sums them per sample. Returns the summed
// cross-entropy, log(sum) - (z_label - max) per sample, accumulated in double: the float
// per-sample terms are exact enough, but a sum over thousands of samples is not.
double softmaxLoss(float* __restrict z, const float* __restrict max, const float* __restrict target,
                   std::size_t n, std::size_t classes, float* __restrict sum) {
  for (std::size_t i = 0; i < n; ++i) sum[i] = 0.0f;
  for (std::size_t c = 0; c < classes; ++c) {
    float* __restrict row = z + c * n;
    for (std::size_t i = 0; i < n; ++i) {
      const float e = std::exp(row[i] - max[i]);
      row[i] = e;
      sum[i] += e;
    }
  }
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    total += std::log(static_cast<double>(sum[i])) - static_cast<double>(target[i]);
  }
  return total;
}

}  // namespace

std::int64_t softmaxParameterCount(const Dataset& data) {
  const std::int64_t classes = std::max(0, data.classes);
  return classes * std::max<std::int64_t>(0, data.sampleSize()) + classes;
}

std::vector<float> softmaxInitialParameters(const Dataset& train, std::uint64_t seed) {
  std::vector<float> params(static_cast<std::size_t>(softmaxParameterCount(train)), 0.0f);
  const auto weights = static_cast<std::size_t>(std::max(0, train.classes)) *
                       static_cast<std::size_t>(std::max<std::int64_t>(0, train.sampleSize()));
  // Small random weights break the symmetry between classes; b = 0 (the bias tail stays 0).
  // Box-Muller by hand, both values of each pair used: std::normal_distribution's draws
  // differ between standard libraries, and every host must start from the same parameters.
  // The generator's seed is the run seed mixed with a tag: makeSynthetic() draws its class
  // centres from mt19937_64(seed) by the same Box-Muller, so with the raw seed (and runs do
  // pass spec.seed to both) W's rows would be the centres scaled down, a model that starts
  // out ~97 % accurate.
  std::mt19937_64 rng(splitmix64(seed ^ 0x736f66746d6178ULL));  // "softmax"
  constexpr double kStd = 0.01;
  constexpr double kTwoPi = 6.283185307179586476925;
  for (std::size_t k = 0; k < weights; k += 2) {
    const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log(u1) is finite
    const double u2 = uniform01(rng);
    const double radius = std::sqrt(-2.0 * std::log(u1)) * kStd;
    params[k] = static_cast<float>(radius * std::cos(kTwoPi * u2));
    if (k + 1 < weights) params[k + 1] = static_cast<float>(radius * std::sin(kTwoPi * u2));
  }
  return params;
}

Result<std::unique_ptr<SoftmaxGradientSource>> SoftmaxGradientSource::create(const ExperimentSpec& spec,
                                                                            const Dataset& train, int rank,
                                                                            int worldSize,
                                                                            const std::vector<std::int64_t>* shard) {
  if (worldSize <= 0 || rank < 0 || rank >= worldSize) {
    return Status::error("rank " + std::to_string(rank) + " out of range for " + std::to_string(worldSize) +
                         " workers");
  }
  if (spec.batch_size() <= 0) {
    return Status::error("batch_size is " + std::to_string(spec.batch_size()) + ", need at least 1");
  }
  if (auto shape = checkShape(train, "training set"); !shape) return shape;

  std::unique_ptr<SoftmaxGradientSource> s(new SoftmaxGradientSource());
  s->m_train = &train;
  s->m_batch = spec.batch_size();
  // The batch order of ml::ShardGradientSource (core/data/dataset.h: ShardBatchOrder).
  const std::vector<std::int64_t> mine =
      shard != nullptr ? *shard
                       : shardIndices(train, rank, worldSize, shardModeOf(spec.dataset()), spec.dataset().dirichlet_alpha(),
                                      spec.seed());
  for (const std::int64_t index : mine) {
    if (auto label = checkLabel(train, index, "training set"); !label) return label;
  }
  auto order = workerBatchOrder(spec, train, rank, worldSize, &mine);
  if (!order) return order.status();
  s->m_order = std::move(order).value();
  s->m_features = static_cast<std::size_t>(train.sampleSize());
  s->m_classes = static_cast<std::size_t>(train.classes);
  s->m_parameterCount = softmaxParameterCount(train);
  s->setBatchSize(s->m_batch);
  return s;
}

bool SoftmaxGradientSource::setBatchSize(int batch) {
  if (batch < 1) return false;
  m_batch = batch;
  m_rows = std::min(static_cast<std::size_t>(batch), m_order.size());
  if (m_rows > m_max.size()) {
    m_xT.resize(m_features * m_rows);
    m_z.resize(m_classes * m_rows);
    m_max.resize(m_rows);
    m_sum.resize(m_rows);
    m_target.resize(m_rows);
    m_labels.resize(m_rows);
  }
  return true;
}

Result<double> SoftmaxGradientSource::computeGradient(const float* params, float* gradient) {
  const std::size_t n = m_rows;
  const std::size_t features = m_features;
  const std::size_t classes = m_classes;
  const std::int64_t* indices = m_order.next(n);

  float* __restrict xT = m_xT.data();
  float* __restrict z = m_z.data();
  float* __restrict max = m_max.data();
  float* __restrict sum = m_sum.data();
  float* __restrict target = m_target.data();
  std::size_t* __restrict labels = m_labels.data();

  gather(*m_train, [indices](std::size_t i) { return indices[i]; }, n, features, xT, labels);
  logits(params, xT, n, features, classes, z);
  maxAndTarget(z, labels, n, classes, max, target);
  const double loss = softmaxLoss(z, max, target, n, classes, sum) / static_cast<double>(n);

  // dL/dz[c][i] = (p[c][i] - [c == label_i]) / n, with p = exp(z - max) / sum.
  const float invN = 1.0f / static_cast<float>(n);
  for (std::size_t i = 0; i < n; ++i) sum[i] = invN / sum[i];
  for (std::size_t c = 0; c < classes; ++c) {
    float* __restrict row = z + c * n;
    for (std::size_t i = 0; i < n; ++i) row[i] *= sum[i];
  }
  for (std::size_t i = 0; i < n; ++i) z[labels[i] * n + i] -= invN;

  // dL/db[c] = sum_i dz[c][i];  dL/dW[c][:] = sum_i dz[c][i] * x_i, over i in batch order.
  // The W rows take x_i straight from the dataset (one contiguous row per sample), so the
  // inner loop runs over features.
  float* __restrict gw = gradient;
  float* __restrict gb = gradient + classes * features;
  for (std::size_t c = 0; c < classes; ++c) {
    const float* __restrict row = z + c * n;
    float acc = 0.0f;
    for (std::size_t i = 0; i < n; ++i) acc += row[i];
    gb[c] = acc;
  }
  std::fill(gw, gw + classes * features, 0.0f);
  const float* base = m_train->features.data();
  for (std::size_t i = 0; i < n; ++i) {
    const float* __restrict x = base + static_cast<std::size_t>(indices[i]) * features;
    for (std::size_t c = 0; c < classes; ++c) {
      const float d = z[c * n + i];
      float* __restrict g = gw + c * features;
      for (std::size_t f = 0; f < features; ++f) g[f] += d * x[f];
    }
  }
  // A non-finite loss is returned as it is: the caller (trainer, simulator) decides what a
  // diverged run means, as with the LibTorch source.
  return loss;
}

Result<std::unique_ptr<SoftmaxEvaluator>> SoftmaxEvaluator::create(const Dataset& test, std::int64_t limit) {
  if (auto shape = checkShape(test, "test set"); !shape) return shape;
  const std::int64_t samples = (limit > 0 && limit < test.count) ? limit : test.count;
  if (samples <= 0) return Status::error(describe(test, "test set") + " is empty");
  for (std::int64_t k = 0; k < samples; ++k) {
    if (auto label = checkLabel(test, k, "test set"); !label) return label;
  }
  std::unique_ptr<SoftmaxEvaluator> e(new SoftmaxEvaluator());
  e->m_test = &test;
  e->m_samples = static_cast<std::size_t>(samples);
  e->m_features = static_cast<std::size_t>(test.sampleSize());
  e->m_classes = static_cast<std::size_t>(test.classes);
  e->m_parameterCount = softmaxParameterCount(test);
  const std::size_t chunk = std::min(kEvalChunk, e->m_samples);
  e->m_xT.assign(e->m_features * chunk, 0.0f);
  e->m_z.assign(e->m_classes * chunk, 0.0f);
  e->m_max.assign(chunk, 0.0f);
  e->m_sum.assign(chunk, 0.0f);
  e->m_target.assign(chunk, 0.0f);
  e->m_labels.assign(chunk, 0);
  e->m_argmax.assign(chunk, 0);
  return e;
}

Evaluation SoftmaxEvaluator::evaluate(const float* params) {
  const std::size_t features = m_features;
  const std::size_t classes = m_classes;
  double lossSum = 0.0;
  std::int64_t correct = 0;
  for (std::size_t first = 0; first < m_samples; first += kEvalChunk) {
    // The last chunk is shorter; the layouts use the chunk's own n as their stride.
    const std::size_t n = std::min(kEvalChunk, m_samples - first);
    float* __restrict z = m_z.data();
    float* __restrict max = m_max.data();
    std::size_t* __restrict labels = m_labels.data();
    std::size_t* __restrict argmax = m_argmax.data();
    gather(*m_test, [first](std::size_t i) { return first + i; }, n, features, m_xT.data(), labels);
    logits(params, m_xT.data(), n, features, classes, z);
    maxAndTarget(z, labels, n, classes, max, m_target.data());
    // The predicted class is the first one reaching the max (argmax's usual tie rule);
    // with a NaN logit nothing equals the max and the sample counts as wrong.
    for (std::size_t i = 0; i < n; ++i) argmax[i] = classes;
    for (std::size_t c = classes; c-- > 0;) {
      const float* __restrict row = z + c * n;
      for (std::size_t i = 0; i < n; ++i) argmax[i] = row[i] == max[i] ? c : argmax[i];
    }
    for (std::size_t i = 0; i < n; ++i) correct += argmax[i] == labels[i] ? 1 : 0;
    lossSum += softmaxLoss(z, max, m_target.data(), n, classes, m_sum.data());
  }
  Evaluation e;
  e.samples = static_cast<std::int64_t>(m_samples);
  e.loss = lossSum / static_cast<double>(m_samples);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(m_samples);
  return e;
}

}  // namespace dasp
