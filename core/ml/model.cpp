// SPDX-License-Identifier: MIT
// The model zoo and the flat parameter/gradient views. One of the few files that include
// LibTorch (each costs ~25 s and 1.2 GB to compile).
#include "core/ml/model.h"
#include "core/ml/zoo.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

namespace dasp::ml {
namespace {

Result<torch::Device> resolveDevice(const std::string& name) {
  if (name.empty() || name == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  }
  if (name == "cpu") return torch::Device(torch::kCPU);
  static const std::regex cudaPattern(R"(^cuda(:(\d+))?$)");
  std::smatch m;
  if (std::regex_match(name, m, cudaPattern)) {
    const int index = m[2].matched ? std::stoi(m[2].str()) : 0;
    if (!torch::cuda::is_available()) {
      return Status::error("device " + name +
                           ": this LibTorch build has no CUDA or no GPU is visible "
                           "(Debian's libtorch is CPU-only; use device cpu or auto)");
    }
    if (index >= static_cast<int>(torch::cuda::device_count())) {
      return Status::error("device " + name + ": only " +
                           std::to_string(torch::cuda::device_count()) + " CUDA device(s)");
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return Status::error("device '" + name + "': expected auto, cpu or cuda:N");
}

constexpr char kMagic[8] = {'D', 'A', 'S', 'P', 'M', 'D', 'L', '1'};

}  // namespace

namespace zoo {
Result<std::shared_ptr<Net>> makeNet(const ModelOptions& options) {
  torch::manual_seed(options.seed);
  const std::int64_t in =
      static_cast<std::int64_t>(options.channels) * options.height * options.width;
  const std::int64_t c = options.channels, h = options.height, w = options.width;
  const auto& n = options.name;
  if (n == "logreg") return std::shared_ptr<Net>(std::make_shared<LogReg>(in, options.classes));
  if (n == "mlp") {
    return std::shared_ptr<Net>(std::make_shared<Mlp>(in, options.hidden, options.classes));
  }
  if (n == "lenet" || n == "ttf-cnn" || n == "resnet8") {
    const std::int64_t minSide = n == "lenet" ? 16 : 8;
    if (h < minSide || w < minSide) {
      return Status::error("model " + n + ": needs image input of at least " +
                           std::to_string(minSide) + "x" + std::to_string(minSide) + " (got " +
                           std::to_string(c) + "x" + std::to_string(h) + "x" +
                           std::to_string(w) + "); use logreg or mlp");
    }
    if (n == "lenet") return std::shared_ptr<Net>(std::make_shared<LeNet>(c, h, w, options.classes));
    if (n == "ttf-cnn") {
      return std::shared_ptr<Net>(std::make_shared<TtfCnn>(c, h, w, options.classes));
    }
    return std::shared_ptr<Net>(std::make_shared<ResNet8>(c, options.classes));
  }
  return Status::error("model.name: unknown model '" + n +
                       "' (known: logreg, mlp, lenet, ttf-cnn, resnet8)");
}
}  // namespace zoo

struct Model::Impl {
  ModelOptions options;
  torch::Device device{torch::kCPU};
  std::shared_ptr<zoo::Net> net;
  torch::Tensor flat;      // all parameters, contiguous
  torch::Tensor gradFlat;  // all gradients, contiguous, same layout
  torch::Tensor momentum;  // SGD momentum buffer (lazily allocated)
  torch::Tensor batchInput, batchLabels;  // reused batch buffers (no per-step allocation)
  std::int64_t count = 0;

  torch::Tensor wrapFeatures(const Dataset& data) const {
    // No copy: the dataset outlives the call.
    return torch::from_blob(const_cast<float*>(data.features.data()),
                            {data.count, data.channels, data.height, data.width},
                            torch::TensorOptions().dtype(torch::kFloat32));
  }
  torch::Tensor wrapLabels(const Dataset& data) const {
    return torch::from_blob(const_cast<std::int64_t*>(data.labels.data()), {data.count},
                            torch::TensorOptions().dtype(torch::kInt64));
  }
};

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::create(const ModelOptions& options) {
  try {
    auto device = resolveDevice(options.device);
    if (!device) return device.status();
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->device = device.value();
    auto net = zoo::makeNet(options);
    if (!net) return net.status();
    impl->net = net.value();
    impl->net->to(impl->device);

    // Move every parameter into one flat buffer and make it a view of it; the same for
    // gradients, so autograd accumulates straight into the flat gradient buffer.
    auto params = impl->net->parameters();
    std::int64_t total = 0;
    for (const auto& p : params) total += p.numel();
    const auto fopts = torch::TensorOptions().dtype(torch::kFloat32).device(impl->device);
    impl->flat = torch::empty({total}, fopts);
    impl->gradFlat = torch::zeros({total}, fopts);
    std::int64_t offset = 0;
    for (auto& p : params) {
      const auto numel = p.numel();
      auto view = impl->flat.narrow(0, offset, numel);
      view.copy_(p.detach().reshape({numel}));
      p.set_data(view.view(p.sizes()));
      p.mutable_grad() = impl->gradFlat.narrow(0, offset, numel).view(p.sizes());
      offset += numel;
    }
    impl->count = total;
    impl->net->train();
    return std::unique_ptr<Model>(new Model(std::move(impl)));
  } catch (const c10::Error& e) {
    return Status::error("model " + options.name + ": " + e.what_without_backtrace());
  }
}

const ModelOptions& Model::options() const { return m_impl->options; }
std::string Model::deviceName() const { return m_impl->device.str(); }
std::int64_t Model::parameterCount() const { return m_impl->count; }

void Model::copyParametersTo(float* out) const {
  torch::from_blob(out, {m_impl->count}, torch::kFloat32).copy_(m_impl->flat);
}
void Model::copyParametersFrom(const float* in) {
  torch::NoGradGuard noGrad;
  m_impl->flat.copy_(torch::from_blob(const_cast<float*>(in), {m_impl->count}, torch::kFloat32));
}
void Model::copyGradientsTo(float* out) const {
  torch::from_blob(out, {m_impl->count}, torch::kFloat32).copy_(m_impl->gradFlat);
}

Result<double> Model::forwardBackward(const BatchRef& batch) {
  auto& d = *m_impl;
  if (batch.data == nullptr || batch.count <= 0) return Status::error("empty batch");
  const Dataset& data = *batch.data;
  if (data.channels != d.options.channels || data.height != d.options.height ||
      data.width != d.options.width) {
    return Status::error("batch shape does not match model " + d.options.name);
  }
  try {
    auto features = d.wrapFeatures(data);
    auto labels = d.wrapLabels(data);
    torch::Tensor input, target;
    if (batch.indices != nullptr) {
      auto idx = torch::from_blob(const_cast<std::int64_t*>(batch.indices), {batch.count},
                                  torch::kInt64);
      if (!d.batchInput.defined() || d.batchInput.size(0) != batch.count) {
        d.batchInput = torch::empty({batch.count, data.channels, data.height, data.width});
        d.batchLabels = torch::empty({batch.count}, torch::kInt64);
      }
      torch::index_select_out(d.batchInput, features, 0, idx);
      torch::index_select_out(d.batchLabels, labels, 0, idx);
      input = d.batchInput;
      target = d.batchLabels;
    } else {
      if (batch.first < 0 || batch.first + batch.count > data.count) {
        return Status::error("batch range out of the dataset");
      }
      input = features.narrow(0, batch.first, batch.count);
      target = labels.narrow(0, batch.first, batch.count);
    }
    if (d.device.is_cuda()) {
      input = input.to(d.device, /*non_blocking=*/true);
      target = target.to(d.device, /*non_blocking=*/true);
    }
    d.gradFlat.zero_();
    auto loss = torch::nn::functional::cross_entropy(d.net->forward(input), target);
    loss.backward();
    return loss.item<double>();
  } catch (const c10::Error& e) {
    return Status::error("forward/backward: " + std::string(e.what_without_backtrace()));
  }
}

void Model::sgdStep(double lr, double momentum, double weightDecay) {
  auto& d = *m_impl;
  torch::NoGradGuard noGrad;
  if (momentum > 0) {
    if (!d.momentum.defined()) d.momentum = torch::zeros_like(d.flat);
    d.momentum.mul_(momentum).add_(d.gradFlat);
    if (weightDecay > 0) d.momentum.add_(d.flat, weightDecay);
    d.flat.add_(d.momentum, -lr);
  } else {
    if (weightDecay > 0) d.flat.mul_(1.0 - lr * weightDecay);
    d.flat.add_(d.gradFlat, -lr);
  }
}

Evaluation Model::evaluate(const Dataset& data, std::int64_t limit, std::int64_t batch) {
  auto& d = *m_impl;
  torch::NoGradGuard noGrad;
  d.net->eval();
  const std::int64_t n = (limit > 0 && limit < data.count) ? limit : data.count;
  auto features = d.wrapFeatures(data);
  auto labels = d.wrapLabels(data);
  double lossSum = 0;
  std::int64_t correct = 0;
  for (std::int64_t first = 0; first < n; first += batch) {
    const auto count = std::min(batch, n - first);
    auto input = features.narrow(0, first, count);
    auto target = labels.narrow(0, first, count);
    if (d.device.is_cuda()) {
      input = input.to(d.device);
      target = target.to(d.device);
    }
    auto logits = d.net->forward(input);
    lossSum += torch::nn::functional::cross_entropy(
                   logits, target,
                   torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                   .item<double>();
    correct += logits.argmax(1).eq(target).sum().item<std::int64_t>();
  }
  d.net->train();
  Evaluation e;
  e.samples = n;
  if (n > 0) {
    e.loss = lossSum / static_cast<double>(n);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  }
  return e;
}

Status Model::save(const std::string& path) const {
  std::vector<float> host(static_cast<std::size_t>(m_impl->count));
  copyParametersTo(host.data());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::error(path + ": cannot write (" + std::strerror(errno) + ")");
    const auto& name = m_impl->options.name;
    const std::uint32_t nameLen = static_cast<std::uint32_t>(name.size());
    const std::int64_t count = m_impl->count;
    const auto bytes = static_cast<uInt>(host.size() * sizeof(float));
    const std::uint32_t crc = static_cast<std::uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(host.data()), bytes));
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(&nameLen), sizeof nameLen);
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    out.write(reinterpret_cast<const char*>(&count), sizeof count);
    out.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(bytes));
    out.write(reinterpret_cast<const char*>(&crc), sizeof crc);
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp);
      return Status::error(path + ": write failed (" + std::strerror(errno) + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::error(path + ": cannot rename into place (" + ec.message() + ")");
  return Status::ok();
}

Status Model::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open (" + std::strerror(errno) + ")");
  char magic[sizeof kMagic] = {};
  std::uint32_t nameLen = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&nameLen), sizeof nameLen);
  if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0 || nameLen > 256) {
    return Status::error(path + ": not a dasp model file");
  }
  std::string name(nameLen, '\0');
  std::int64_t count = 0;
  in.read(name.data(), nameLen);
  in.read(reinterpret_cast<char*>(&count), sizeof count);
  if (!in) return Status::error(path + ": truncated model file");
  if (name != m_impl->options.name || count != m_impl->count) {
    return Status::error(path + ": holds model " + name + " with " + std::to_string(count) +
                         " parameters, expected " + m_impl->options.name + " with " +
                         std::to_string(m_impl->count));
  }
  std::vector<float> host(static_cast<std::size_t>(count));
  std::uint32_t crc = 0;
  in.read(reinterpret_cast<char*>(host.data()), static_cast<std::streamsize>(host.size() * sizeof(float)));
  in.read(reinterpret_cast<char*>(&crc), sizeof crc);
  if (!in) return Status::error(path + ": truncated model file");
  const auto actual = static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(host.data()), static_cast<uInt>(host.size() * sizeof(float))));
  if (actual != crc) return Status::error(path + ": checksum mismatch (corrupt model file)");
  copyParametersFrom(host.data());
  return Status::ok();
}

TorchInfo torchInfo() {
  TorchInfo info;
  info.version = TORCH_VERSION;
  info.cudaAvailable = torch::cuda::is_available();
  info.cudaDevices = static_cast<int>(torch::cuda::device_count());
  info.parallelInfo = at::get_parallel_info();
  return info;
}

void configureThreads(int intraOpThreads) {
  torch::set_num_threads(std::max(1, intraOpThreads));
  // Debian's LibTorch computes through OpenBLAS, whose pthread build keeps its own pool
  // (one thread per core) that spin-waits between calls; LibTorch does not size it. Limit
  // it too, or every trainer process burns part of another core idling (measured: ~0.2
  // core per worker at 10 iterations/s).
  using SetThreads = void (*)(int);
  if (auto* setBlasThreads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    setBlasThreads(std::max(1, intraOpThreads));
  }
  static bool interopSet = false;
  if (!interopSet) {
    interopSet = true;
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
      // Already started by an earlier parallel region; one more thread is harmless.
    }
  }
}

}  // namespace dasp::ml
