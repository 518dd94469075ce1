// SPDX-License-Identifier: MIT
// The model zoo and the flat parameter/gradient views. One of the few files that include
// LibTorch (each costs ~25 s and 1.2 GB to compile).
//
// Only device-generic LibTorch calls are used here (torch::Device, pinned host tensors,
// c10::Stream through the device-guard registry), so this file compiles against Debian's
// CPU-only LibTorch 1.13 and against a CUDA LibTorch 2.x alike; the CUDA paths are taken
// at run time only for a CUDA device. The one CUDA-only piece, reading device names and
// memory for `dasp info`, sits behind DASP_WITH_CUDA and asks the driver (libcuda.so.1)
// directly, so it needs no CUDA toolkit headers and no version-specific c10::cuda API.
#include "ml/model.h"
#include "ml/zoo.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/Parallel.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <dlfcn.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

namespace dasp::ml {

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
#ifdef DASP_WITH_CUDA
      return Status::error("device " + name +
                           ": no CUDA device visible (this LibTorch has CUDA, but the driver "
                           "reports no GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES; or use "
                           "device cpu or auto)");
#else
      return Status::error("device " + name +
                           ": this LibTorch build has no CUDA or no GPU is visible "
                           "(Debian's libtorch is CPU-only; build against a CUDA LibTorch, "
                           "see README \"GPUs\", or use device cpu or auto)");
#endif
    }
    if (index >= static_cast<int>(torch::cuda::device_count())) {
      return Status::error("device " + name + ": only " +
                           std::to_string(torch::cuda::device_count()) +
                           " CUDA device(s) visible (cuda:0 .. cuda:" +
                           std::to_string(static_cast<int>(torch::cuda::device_count()) - 1) + ")");
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return Status::error("device '" + name + "': expected auto, cpu or cuda:N");
}

Result<std::string> resolveDeviceName(const std::string& device) {
  try {
    auto d = resolveDevice(device);
    if (!d) return d.status();
    return d.value().str();
  } catch (const c10::Error& e) {
    return Status::error("device " + device + ": " + e.what_without_backtrace());
  }
}

namespace {

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

// One batch on its way to the device: features then labels packed into ONE host buffer
// (pinned on CUDA; the labels start 8-byte aligned) and its device twin, so a step moves
// its batch with one host-to-device copy. Sized for `capacity` samples; smaller batches use
// the front of each part.
struct BatchStage {
  std::int64_t capacity = 0;
  torch::Tensor host, device;           // uint8, the packed bytes
  torch::Tensor hostInput, hostLabels;  // views of host: [capacity, C, H, W] float, [capacity] int64
  torch::Tensor input, labels;          // the same views of device

  void prepare(const Dataset& data, std::int64_t count, const torch::Device& target) {
    if (capacity >= count && host.defined()) return;
    const std::int64_t perSample = static_cast<std::int64_t>(data.channels) * data.height * data.width;
    const std::int64_t featureBytes = count * perSample * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t labelOffset = (featureBytes + 7) / 8 * 8;
    const std::int64_t bytes = labelOffset + count * static_cast<std::int64_t>(sizeof(std::int64_t));
    const auto bytesOpts = torch::TensorOptions().dtype(torch::kUInt8);
    host = torch::empty({bytes}, bytesOpts.pinned_memory(target.is_cuda()));
    device = target.is_cuda() ? torch::empty({bytes}, bytesOpts.device(target)) : torch::empty({bytes}, bytesOpts);
    auto views = [&](const torch::Tensor& buffer, torch::Tensor& featureView, torch::Tensor& labelView) {
      featureView = buffer.narrow(0, 0, featureBytes).view(torch::kFloat32)
                        .view({count, data.channels, data.height, data.width});
      labelView = buffer.narrow(0, labelOffset, count * static_cast<std::int64_t>(sizeof(std::int64_t)))
                      .view(torch::kInt64);
    };
    views(host, hostInput, hostLabels);
    views(device, input, labels);
    capacity = count;
  }
};

struct Model::Impl {
  ModelOptions options;
  torch::Device device{torch::kCPU};
  std::shared_ptr<zoo::Net> net;
  torch::Tensor flat;      // all parameters, contiguous
  torch::Tensor gradFlat;  // all gradients, contiguous, same layout
  torch::Tensor momentum;  // SGD momentum buffer (lazily allocated)
  torch::Tensor batchInput, batchLabels;  // reused batch buffers (no per-step allocation)
  std::int64_t count = 0;

  // The transfer path (CUDA, or options.staged on the CPU for tests).
  bool staged = false;
  std::optional<c10::Stream> stream;  // CUDA: this model's stream, from LibTorch's pool
  BatchStage trainStage, evalStage;
  torch::Tensor paramHost, gradHost;  // host mirrors of flat / gradFlat (pinned on CUDA)
  // The model's own flat buffers while it is bound to a caller's (bindBuffers).
  torch::Tensor ownFlat, ownGradFlat;
  const float* boundParams = nullptr;
  const float* boundGradients = nullptr;

  // Makes every parameter a view of `params` and its gradient a view of `gradients`, in
  // the same layout (offsets in parameters() order).
  void viewInto(const torch::Tensor& params, const torch::Tensor& gradients) {
    std::int64_t offset = 0;
    for (auto& p : net->parameters()) {
      const auto numel = p.numel();
      p.set_data(params.narrow(0, offset, numel).view(p.sizes()));
      p.mutable_grad() = gradients.narrow(0, offset, numel).view(p.sizes());
      offset += numel;
    }
    flat = params;
    gradFlat = gradients;
  }

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
  // Waits for this model's queued device work (after an error, so the staging buffers can
  // be reused). Never throws.
  void drain() noexcept {
    try {
      if (stream) stream->synchronize();
    } catch (const c10::Error&) {
    }
  }
};

namespace {

// Makes the model's own CUDA stream current for the scope (nothing on the CPU), so every
// kernel and copy of the model is ordered on it and independent of other models' streams.
class StreamScope {
 public:
  explicit StreamScope(const std::optional<c10::Stream>& stream) {
    if (stream) m_guard.emplace(*stream);
  }

 private:
  std::optional<c10::StreamGuard> m_guard;
};

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::create(const ModelOptions& options) {
  try {
    auto device = resolveDevice(options.device);
    if (!device) return device.status();
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->device = device.value();
    impl->staged = options.staged || impl->device.is_cuda();
    if (impl->device.is_cuda()) {
      // A stream of its own: models sharing a GPU in one process do not serialise on the
      // default stream. Device-generic call, so it compiles against CPU-only LibTorch.
      impl->stream = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA)
                         .getStreamFromGlobalPool(impl->device, /*isHighPriority=*/false);
    }
    StreamScope onStream(impl->stream);
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
    auto flat = torch::empty({total}, fopts);
    std::int64_t offset = 0;
    for (const auto& p : params) {
      flat.narrow(0, offset, p.numel()).copy_(p.detach().reshape({p.numel()}));
      offset += p.numel();
    }
    impl->viewInto(flat, torch::zeros({total}, fopts));
    impl->count = total;
    impl->ownFlat = impl->flat;
    impl->ownGradFlat = impl->gradFlat;
    if (impl->staged) {
      const auto hopts = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(impl->device.is_cuda());
      impl->paramHost = torch::empty({total}, hopts);
      impl->gradHost = torch::empty({total}, hopts);
    }
    impl->net->train();
    impl->drain();
    return std::unique_ptr<Model>(new Model(std::move(impl)));
  } catch (const c10::Error& e) {
    return Status::error("model " + options.name + " on " + options.device + ": " + e.what_without_backtrace());
  }
}

const ModelOptions& Model::options() const { return m_impl->options; }
std::string Model::deviceName() const { return m_impl->device.str(); }
std::int64_t Model::parameterCount() const { return m_impl->count; }

// Staged copies go through the host mirrors: a device-to-host copy into pinned memory
// (blocking: it waits for the model's stream) and one memcpy, or the reverse.
void Model::copyParametersTo(float* out) const {
  auto& d = *m_impl;
  if (!d.staged) {
    torch::from_blob(out, {d.count}, torch::kFloat32).copy_(d.flat);
    return;
  }
  StreamScope onStream(d.stream);
  d.paramHost.copy_(d.flat);
  std::memcpy(out, d.paramHost.data_ptr<float>(), static_cast<std::size_t>(d.count) * sizeof(float));
}
void Model::copyParametersFrom(const float* in) {
  auto& d = *m_impl;
  torch::NoGradGuard noGrad;
  if (!d.staged) {
    d.flat.copy_(torch::from_blob(const_cast<float*>(in), {d.count}, torch::kFloat32));
    return;
  }
  StreamScope onStream(d.stream);
  std::memcpy(d.paramHost.data_ptr<float>(), in, static_cast<std::size_t>(d.count) * sizeof(float));
  d.flat.copy_(d.paramHost);  // blocking: paramHost is free again on return
}
void Model::copyGradientsTo(float* out) const {
  auto& d = *m_impl;
  if (!d.staged) {
    torch::from_blob(out, {d.count}, torch::kFloat32).copy_(d.gradFlat);
    return;
  }
  StreamScope onStream(d.stream);
  d.gradHost.copy_(d.gradFlat);  // the one device-to-host transfer of the gradient
  std::memcpy(out, d.gradHost.data_ptr<float>(), static_cast<std::size_t>(d.count) * sizeof(float));
}

bool Model::bindBuffers(const float* params, float* gradients) {
  auto& d = *m_impl;
  auto aligned = [](const void* p) { return p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 64 == 0; };
  if (d.staged || !aligned(params) || !aligned(gradients)) return false;
  if (params == d.boundParams && gradients == d.boundGradients) return true;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32);
  // forwardBackward only reads the parameters: the const_cast never leads to a write.
  d.viewInto(torch::from_blob(const_cast<float*>(params), {d.count}, opts), torch::from_blob(gradients, {d.count}, opts));
  d.boundParams = params;
  d.boundGradients = gradients;
  return true;
}

void Model::unbindBuffers() {
  auto& d = *m_impl;
  if (d.boundParams == nullptr) return;
  d.viewInto(d.ownFlat, d.ownGradFlat);
  d.boundParams = nullptr;
  d.boundGradients = nullptr;
}

bool Model::bound() const { return m_impl->boundParams != nullptr; }

Result<double> Model::forwardBackward(const BatchRef& batch) {
  auto& d = *m_impl;
  if (batch.data == nullptr || batch.count <= 0) return Status::error("empty batch");
  const Dataset& data = *batch.data;
  if (data.channels != d.options.channels || data.height != d.options.height ||
      data.width != d.options.width) {
    return Status::error("batch shape does not match model " + d.options.name);
  }
  if (batch.indices == nullptr && (batch.first < 0 || batch.first + batch.count > data.count)) {
    return Status::error("batch range out of the dataset");
  }
  try {
    auto features = d.wrapFeatures(data);
    auto labels = d.wrapLabels(data);
    torch::Tensor input, target;
    if (d.staged) {
      // Gather the batch on the host into the staging buffer, then ONE host-to-device copy
      // (asynchronous on CUDA; the loss read below waits for the stream, after which the
      // staging buffer may be overwritten by the next step).
      StreamScope onStream(d.stream);
      auto& s = d.trainStage;
      s.prepare(data, batch.count, d.device);
      auto hostInput = s.hostInput.narrow(0, 0, batch.count);
      auto hostLabels = s.hostLabels.narrow(0, 0, batch.count);
      if (batch.indices != nullptr) {
        auto idx = torch::from_blob(const_cast<std::int64_t*>(batch.indices), {batch.count}, torch::kInt64);
        torch::index_select_out(hostInput, features, 0, idx);
        torch::index_select_out(hostLabels, labels, 0, idx);
      } else {
        hostInput.copy_(features.narrow(0, batch.first, batch.count));
        hostLabels.copy_(labels.narrow(0, batch.first, batch.count));
      }
      s.device.copy_(s.host, /*non_blocking=*/true);
      input = s.input.narrow(0, 0, batch.count);
      target = s.labels.narrow(0, 0, batch.count);
      d.gradFlat.zero_();
      auto loss = torch::nn::functional::cross_entropy(d.net->forward(input), target);
      loss.backward();
      return loss.item<double>();
    }
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
      input = features.narrow(0, batch.first, batch.count);
      target = labels.narrow(0, batch.first, batch.count);
    }
    d.gradFlat.zero_();
    auto loss = torch::nn::functional::cross_entropy(d.net->forward(input), target);
    loss.backward();
    return loss.item<double>();
  } catch (const c10::Error& e) {
    d.drain();
    return Status::error("forward/backward on " + d.device.str() + ": " +
                         std::string(e.what_without_backtrace()));
  }
}

void Model::sgdStep(double lr, double momentum, double weightDecay) {
  auto& d = *m_impl;
  torch::NoGradGuard noGrad;
  StreamScope onStream(d.stream);
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
  StreamScope onStream(d.stream);
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
    if (d.staged) {
      // One host-to-device copy per evaluation batch through the staging buffer; the
      // reads of the sums below wait for it before the buffer is refilled.
      auto& s = d.evalStage;
      s.prepare(data, std::min(batch, n), d.device);
      s.hostInput.narrow(0, 0, count).copy_(input);
      s.hostLabels.narrow(0, 0, count).copy_(target);
      s.device.copy_(s.host, /*non_blocking=*/true);
      input = s.input.narrow(0, 0, count);
      target = s.labels.narrow(0, 0, count);
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

#ifdef DASP_WITH_CUDA
namespace {

// Names, memory and compute capability of the visible GPUs, from the CUDA driver API
// (libcuda.so.1, loaded by LibTorch's CUDA runtime anyway). Its C ABI has been stable since
// CUDA 4, so this needs no toolkit headers and is the same for LibTorch 1.x and 2.x; the
// driver honours CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER like the runtime, so index i
// here is cuda:i in LibTorch.
void readDriverDevices(TorchInfo& info) {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return;
  using Init = int (*)(unsigned int);
  using GetCount = int (*)(int*);
  using Get = int (*)(int*, int);
  using GetName = int (*)(char*, int, int);
  using TotalMem = int (*)(std::size_t*, int);
  using GetAttribute = int (*)(int*, int, int);
  using DriverVersion = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto getCount = reinterpret_cast<GetCount>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
  auto getName = reinterpret_cast<GetName>(dlsym(lib, "cuDeviceGetName"));
  auto totalMem = reinterpret_cast<TotalMem>(dlsym(lib, "cuDeviceTotalMem_v2"));
  auto getAttribute = reinterpret_cast<GetAttribute>(dlsym(lib, "cuDeviceGetAttribute"));
  auto driverVersion = reinterpret_cast<DriverVersion>(dlsym(lib, "cuDriverGetVersion"));
  if (!init || !getCount || !get || !getName || !totalMem || init(0) != 0) return;  // lib stays loaded
  if (driverVersion) driverVersion(&info.cudaDriverVersion);
  int count = 0;
  if (getCount(&count) != 0) return;
  constexpr int kMajor = 75, kMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    char name[256] = {};
    std::size_t bytes = 0;
    if (get(&dev, i) != 0 || getName(name, sizeof name - 1, dev) != 0) break;
    (void)totalMem(&bytes, dev);
    int major = 0, minor = 0;
    if (getAttribute) {
      (void)getAttribute(&major, kMajor, dev);
      (void)getAttribute(&minor, kMinor, dev);
    }
    info.deviceNames.emplace_back(name);
    info.deviceMemoryBytes.push_back(static_cast<std::int64_t>(bytes));
    info.deviceCapabilities.push_back(std::to_string(major) + "." + std::to_string(minor));
  }
}

}  // namespace
#endif

TorchInfo torchInfo() {
  TorchInfo info;
  info.version = TORCH_VERSION;
#ifdef DASP_WITH_CUDA
  info.builtWithCuda = true;
#endif
  info.cudaAvailable = torch::cuda::is_available();
  info.cudaDevices = static_cast<int>(torch::cuda::device_count());
#ifdef DASP_WITH_CUDA
  readDriverDevices(info);
#endif
  auto device = resolveDeviceName("auto");
  info.defaultDevice = device ? device.value() : "cpu";
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
  // Once per process, whichever thread gets here first (workers of one process may make
  // their sources on several threads: a plain flag here was a data race).
  static std::once_flag interopSet;
  std::call_once(interopSet, [] {
    try {
      torch::set_num_interop_threads(1);
    } catch (const c10::Error&) {
      // Already started by an earlier parallel region; one more thread is harmless.
    }
  });
}

}  // namespace dasp::ml
