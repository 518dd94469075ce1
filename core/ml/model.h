// SPDX-License-Identifier: MIT
#pragma once
// Model: a network from the model zoo (logreg, mlp, lenet, ttf-cnn, resnet8) whose
// parameters and gradients live in ONE contiguous float buffer each, so the parameter
// server, workers and checkpoints move flat buffers with one memcpy and no per-step
// allocation. Every parameter tensor is a view into the flat buffer.
//
// This header includes no LibTorch: callers outside core/ml never compile its headers.
// Threading: a Model is used by one thread at a time.

#include "core/dataset.h"
#include "core/gradient_source.h"
#include "core/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dasp::ml {

struct ModelOptions {
  std::string name = "mlp";
  int hidden = 128;      // mlp hidden width
  int channels = 1, height = 28, width = 28;  // input shape
  int classes = 10;
  std::uint64_t seed = 1;  // parameter initialisation
  std::string device = "auto";  // auto | cpu | cuda:N
  int threads = 1;       // intra-op threads for this process
};

using Evaluation = ::dasp::Evaluation;

// A batch for forwardBackward: either indices into a dataset, or a contiguous range.
struct BatchRef {
  const Dataset* data = nullptr;
  const std::int64_t* indices = nullptr;  // when null, samples [first, first+count)
  std::int64_t first = 0;
  std::int64_t count = 0;
};

class Model {
 public:
  // Builds the named model; fails with a message for an unknown name, a shape the model
  // cannot take, or an unavailable device.
  static Result<std::unique_ptr<Model>> create(const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelOptions& options() const;
  std::string deviceName() const;
  std::int64_t parameterCount() const;

  // Flat views. The pointers stay valid for the model's lifetime (host memory; on a CUDA
  // device these are host mirrors updated by the copy functions below).
  void copyParametersTo(float* out) const;
  void copyParametersFrom(const float* in);
  void copyGradientsTo(float* out) const;

  // One forward + backward pass on a batch; gradients (of the mean loss) replace the
  // previous ones. Returns the batch's mean loss. Training mode (dropout on).
  Result<double> forwardBackward(const BatchRef& batch);

  // Plain SGD step on the model's own parameters: momentum buffer kept here, the same
  // update rule the parameter server applies (v = μv + g + λw; w -= η v).
  void sgdStep(double lr, double momentum, double weightDecay);

  // Loss and accuracy on the first `limit` samples of `data` (0 = all), eval mode.
  Evaluation evaluate(const Dataset& data, std::int64_t limit = 0, std::int64_t batch = 1000);

  // Saves / loads the flat parameters with the model name and size (a small binary file
  // with a checksum). Loading a file of another model or size fails with both named.
  Status save(const std::string& path) const;
  Status load(const std::string& path);

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// LibTorch build facts for `dasp info` and run records.
struct TorchInfo {
  std::string version;
  bool cudaAvailable = false;
  int cudaDevices = 0;
  std::vector<std::string> deviceNames;
  std::vector<std::int64_t> deviceMemoryBytes;
  std::string parallelInfo;  // at::get_parallel_info()
};
TorchInfo torchInfo();

// Sets process-wide LibTorch threading (call once, early): intra-op threads, one
// inter-op thread.
void configureThreads(int intraOpThreads);

}  // namespace dasp::ml
