// SPDX-License-Identifier: MIT
#pragma once
// Model: a network from the model zoo (logreg, mlp, lenet, ttf-cnn, resnet8) whose
// parameters and gradients live in ONE contiguous float buffer each, so the parameter
// server, workers and checkpoints move flat buffers with one memcpy and no per-step
// allocation. Every parameter tensor is a view into the flat buffer.
//
// Devices: "cpu", "cuda:N" or "auto" (cuda:0 when this LibTorch has CUDA and a GPU is
// visible, else the CPU). On a CUDA device the model works on its own CUDA stream (so
// several models, or several worker processes, can share one GPU), a batch reaches the
// device in ONE host-to-device copy per step (features and labels gathered into one
// pinned staging buffer), and parameters and gradients cross in one copy each through
// pinned host mirrors. Every call returns with the device idle, so the staging buffers are
// free again and the caller's host buffers hold the results.
//
// This header includes no LibTorch: callers outside ml/ never compile its headers.
// Threading: a Model is used by one thread at a time.

#include "core/data/dataset.h"
#include "core/common/gradient_source.h"
#include "core/common/result.h"

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
  // Route batches, parameters and gradients through the staging buffers of the CUDA path
  // even on the CPU. Always on for a CUDA device; on the CPU only for tests, which check
  // the transfer path on machines without a GPU (it is slower than the direct CPU path).
  bool staged = false;
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

  // Computing in the caller's buffers, without the copies in and out: the model's
  // parameters become views of `params` and its gradients accumulate into `gradients`
  // (both parameterCount() floats), until it is bound to others or detached. The caller
  // keeps both alive and `params` unchanged while the model computes, and nothing but
  // forwardBackward() may use the model while it is bound (copyParametersFrom would write
  // into `params`). Only host models, and buffers 64-byte aligned as LibTorch's own are:
  // every parameter then sits where it sits in the model's own buffer, so the kernels take
  // the same paths and give the same bits. False, and nothing changed, otherwise.
  bool bindBuffers(const float* params, float* gradients);
  // Back to the model's own buffers (their values are not kept: copy parameters in).
  void unbindBuffers();
  bool bound() const;

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
  bool builtWithCuda = false;  // compiled against a CUDA LibTorch (DASP_WITH_CUDA)
  bool cudaAvailable = false;  // torch::cuda::is_available(): CUDA LibTorch and a usable GPU
  int cudaDevices = 0;
  int cudaDriverVersion = 0;   // e.g. 12040 for 12.4; 0 when unknown
  // Per device (CUDA builds only; read from the driver, so they do not depend on the
  // LibTorch version): name, total memory, compute capability "major.minor".
  std::vector<std::string> deviceNames;
  std::vector<std::int64_t> deviceMemoryBytes;
  std::vector<std::string> deviceCapabilities;
  std::string defaultDevice;   // what device "auto" resolves to here
  std::string parallelInfo;    // at::get_parallel_info()
};
TorchInfo torchInfo();

// Checks a device name (auto | cpu | cuda[:N]) against this build and machine and returns
// the device it means ("cpu", "cuda:0", ...), or an error that says why it cannot be used.
Result<std::string> resolveDeviceName(const std::string& device);

// Sets process-wide LibTorch threading (call once, early): intra-op threads, one
// inter-op thread.
void configureThreads(int intraOpThreads);

}  // namespace dasp::ml
