// SPDX-License-Identifier: MIT
#include "tests/ml/gpu_checks.h"

#include "core/data/dataset.h"
#include "ml/model.h"
#include "ml/node_compute.h"
#include "ml/trainer.h"
#include "core/spec/spec.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>

namespace dasp::gputest {
namespace {

using ml::Model;
using ml::ModelOptions;

Outcome pass() { return {}; }
Outcome skip(std::string why) { return {Outcome::Skip, std::move(why)}; }
Outcome fail(std::string what) { return {Outcome::Fail, std::move(what)}; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Images with a learnable signal: each class brightens its own band of rows.
Dataset imageData(int count, int side, std::uint64_t seed) {
  Dataset d;
  d.name = "bands";
  d.count = count;
  d.channels = 1;
  d.height = d.width = side;
  d.classes = 10;
  d.features.resize(static_cast<std::size_t>(count) * side * side);
  d.labels.resize(static_cast<std::size_t>(count));
  std::uint64_t x = seed * 2654435761ULL + 1;
  for (auto& f : d.features) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    f = static_cast<float>((x >> 40) % 1000) / 1000.0f - 0.5f;
  }
  const std::size_t per = static_cast<std::size_t>(side) * side;
  for (int i = 0; i < count; ++i) {
    const int label = (i * 7) % 10;
    d.labels[static_cast<std::size_t>(i)] = label;
    for (int r = label * side / 10; r < (label + 1) * side / 10; ++r) {
      for (int c = 0; c < side; ++c) {
        d.features[static_cast<std::size_t>(i) * per + static_cast<std::size_t>(r * side + c)] += 1.0f;
      }
    }
  }
  return d;
}

Result<std::unique_ptr<Model>> makeModel(const std::string& name, const std::string& device, bool staged = false) {
  ModelOptions o;
  o.name = name;
  o.device = device;
  o.staged = staged;
  o.seed = 7;
  return Model::create(o);
}

// ||a - b|| / max(||b||, tiny): relative L2 error of a against the reference b.
double relativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    diff += d * d;
    ref += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-12);
}

bool allFinite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float f) { return std::isfinite(f); });
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// TF32 convolutions (on by default in cuDNN for Ampere and later) keep ~10 mantissa bits,
// and cuDNN picks other summation orders: a relative gradient error of a few 1e-3 is
// normal. 2e-2 still catches a wrong batch, wrong labels or a stale gradient (those are
// O(1)).
constexpr double kGradientTolerance = 2e-2;
constexpr double kLossTolerance = 5e-3;

// A resolved spec for `workers` workers on the image data, each on `devices[i]`.
ExperimentSpec workerSpec(const std::string& model, const std::vector<std::string>& devices) {
  ExperimentSpec spec;
  spec.mutable_model()->set_name(model);
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_batch_size(32);
  spec.set_seed(3);
  spec.set_device("cpu");
  for (const auto& device : devices) spec.mutable_cluster()->add_workers()->set_device(device);
  return withDefaults(spec);
}

// Runs `steps` gradients of worker `rank` on both sources from the same parameters and
// compares them.
Outcome compareSources(ml::ShardGradientSource& gpu, ml::ShardGradientSource& cpu, const std::vector<float>& params,
                       const std::string& what) {
  std::vector<float> g(params.size()), c(params.size());
  auto lg = gpu.computeGradient(params.data(), g.data());
  auto lc = cpu.computeGradient(params.data(), c.data());
  if (!lg) return fail(what + ": " + lg.message());
  if (!lc) return fail(what + " (cpu): " + lc.message());
  if (!allFinite(g)) return fail(what + ": non-finite gradient");
  const double err = relativeError(g, c);
  if (err > kGradientTolerance) return fail(what + ": gradient differs from the CPU's by " + num(err) + " (relative)");
  if (std::abs(lg.value() - lc.value()) > kLossTolerance * std::max(1.0, std::abs(lc.value()))) {
    return fail(what + ": loss " + num(lg.value()) + " vs " + num(lc.value()) + " on the CPU");
  }
  return pass();
}

}  // namespace

std::string cudaSkipReason() {
  const auto info = ml::torchInfo();
  if (info.cudaAvailable) return "";
  if (!info.builtWithCuda) {
    return "no GPU: this build uses a CPU-only LibTorch (" + info.version +
           "); tools/gpu-check.sh builds against a CUDA LibTorch";
  }
  return "no GPU: LibTorch " + info.version + " has CUDA but no device is visible (nvidia-smi, CUDA_VISIBLE_DEVICES)";
}

Outcome deviceErrorsAreClear() {
  const auto info = ml::torchInfo();
  const std::string bad = info.cudaAvailable ? "cuda:" + std::to_string(info.cudaDevices) : "cuda:0";
  const std::string expect = info.cudaAvailable ? "only " + std::to_string(info.cudaDevices) + " CUDA device(s)"
                                                : std::string("no CUDA");
  auto model = makeModel("mlp", bad);
  if (model) return fail("Model on " + bad + " was created");
  if (!contains(model.message(), bad) || !contains(model.message(), expect)) {
    return fail("Model on " + bad + ": unclear message '" + model.message() + "' (expected it to say '" + expect + "')");
  }
  auto data = imageData(64, 28, 1);
  auto spec = workerSpec("mlp", {"cpu", bad});
  auto source = ml::ShardGradientSource::create(spec, data, 1, 2);
  if (source) return fail("worker 1 on " + bad + " was created");
  if (!contains(source.message(), "cluster.workers[1].device") || !contains(source.message(), "worker-1") ||
      !contains(source.message(), expect)) {
    return fail("worker on " + bad + ": unclear message '" + source.message() + "'");
  }
  auto named = ml::resolveDeviceName("gpu0");
  if (named || !contains(named.message(), "expected auto, cpu or cuda:N")) {
    return fail("device gpu0: unclear message '" + named.message() + "'");
  }
  auto automatic = makeModel("mlp", "auto");
  if (!automatic) return fail("device auto: " + automatic.message());
  if (automatic.value()->deviceName() != info.defaultDevice) {
    return fail("device auto became " + automatic.value()->deviceName() + ", torchInfo says " + info.defaultDevice);
  }
  return pass();
}

Outcome stagedPathMatchesDirect(const std::string& name) {
  auto data = imageData(200, 28, 2);
  auto direct = makeModel(name, "cpu");
  auto staged = makeModel(name, "cpu", /*staged=*/true);
  if (!direct) return fail(direct.message());
  if (!staged) return fail(staged.message());
  auto& a = *direct.value();
  auto& b = *staged.value();
  const auto n = static_cast<std::size_t>(a.parameterCount());
  std::vector<float> pa(n), pb(n), ga(n), gb(n);
  a.copyParametersTo(pa.data());
  b.copyParametersTo(pb.data());
  if (pa != pb) return fail("staged copyParametersTo differs");
  for (auto& p : pa) p *= 0.5f;  // new parameters through copyParametersFrom
  a.copyParametersFrom(pa.data());
  b.copyParametersFrom(pa.data());
  std::vector<std::int64_t> indices(48);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::int64_t>((i * 37) % 200);
  const ml::BatchRef byIndex{&data, indices.data(), 0, 48};
  const ml::BatchRef byRange{&data, nullptr, 150, 50};  // larger than the first: the buffer grows
  // Not bitwise: the staging buffer is aligned differently from the dataset, which may
  // change a kernel's vectorisation; a wrong batch or a stale buffer is an O(1) error.
  constexpr double kSame = 1e-5;
  for (const auto& batch : {byIndex, byRange, byIndex}) {
    auto la = a.forwardBackward(batch);
    auto lb = b.forwardBackward(batch);
    if (!la || !lb) return fail("forwardBackward: " + la.message() + lb.message());
    if (std::abs(la.value() - lb.value()) > kSame * std::max(1.0, std::abs(la.value()))) {
      return fail("loss " + num(lb.value()) + " staged vs " + num(la.value()));
    }
    a.copyGradientsTo(ga.data());
    b.copyGradientsTo(gb.data());
    if (relativeError(gb, ga) > kSame) return fail("staged gradient differs (relative " + num(relativeError(gb, ga)) + ")");
    a.sgdStep(0.05, 0.9, 1e-4);
    b.sgdStep(0.05, 0.9, 1e-4);
  }
  a.copyParametersTo(pa.data());
  b.copyParametersTo(pb.data());
  if (relativeError(pb, pa) > kSame) return fail("parameters differ after staged SGD steps");
  const auto ea = a.evaluate(data, 130, 60);  // 60, 60, 10: the last batch is partial
  const auto eb = b.evaluate(data, 130, 60);
  if (ea.samples != eb.samples || std::abs(ea.loss - eb.loss) > kSame * std::max(1.0, ea.loss) ||
      std::abs(ea.accuracy - eb.accuracy) > 1.5 / 130) {
    return fail("staged evaluation " + num(eb.loss) + "/" + num(eb.accuracy) + " vs " + num(ea.loss) + "/" +
                num(ea.accuracy));
  }
  return pass();
}

Outcome gradientsMatchCpu(const std::string& name) {
  if (auto why = cudaSkipReason(); !why.empty()) return skip(why);
  auto data = imageData(256, 28, 3);
  auto cpu = makeModel(name, "cpu");
  auto gpu = makeModel(name, "cuda:0");
  if (!cpu) return fail(cpu.message());
  if (!gpu) return fail(gpu.message());
  if (gpu.value()->deviceName() != "cuda:0") return fail("model is on " + gpu.value()->deviceName());
  const auto n = static_cast<std::size_t>(cpu.value()->parameterCount());
  std::vector<float> pc(n), pg(n), gc(n), gg(n);
  cpu.value()->copyParametersTo(pc.data());
  gpu.value()->copyParametersTo(pg.data());
  if (pc != pg) return fail("initial parameters on cuda:0 differ from the CPU's");
  std::vector<std::int64_t> indices(64);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::int64_t>((i * 11) % 256);
  for (int step = 0; step < 3; ++step) {
    const ml::BatchRef batch{&data, indices.data(), 0, 64};
    auto lc = cpu.value()->forwardBackward(batch);
    auto lg = gpu.value()->forwardBackward(batch);
    if (!lc) return fail("cpu: " + lc.message());
    if (!lg) return fail("cuda:0: " + lg.message());
    cpu.value()->copyGradientsTo(gc.data());
    gpu.value()->copyGradientsTo(gg.data());
    const double err = relativeError(gg, gc);
    if (!allFinite(gg) || err > kGradientTolerance) {
      return fail("step " + std::to_string(step) + ": gradient on cuda:0 differs from the CPU's by " + num(err));
    }
    if (std::abs(lg.value() - lc.value()) > kLossTolerance * std::max(1.0, std::abs(lc.value()))) {
      return fail("step " + std::to_string(step) + ": loss " + num(lg.value()) + " on cuda:0, " + num(lc.value()) +
                  " on the CPU");
    }
    // The same parameters for the next step: the CPU's, through the host mirror.
    cpu.value()->sgdStep(0.05, 0.9, 0.0);
    cpu.value()->copyParametersTo(pc.data());
    gpu.value()->copyParametersFrom(pc.data());
    gpu.value()->copyParametersTo(pg.data());
    if (pc != pg) return fail("parameters do not round-trip through cuda:0 exactly");
  }
  const auto ec = cpu.value()->evaluate(data, 0, 100);
  const auto eg = gpu.value()->evaluate(data, 0, 100);
  if (eg.samples != ec.samples || std::abs(eg.accuracy - ec.accuracy) > 0.02 ||
      std::abs(eg.loss - ec.loss) > 0.01 * std::max(1.0, ec.loss)) {
    return fail("evaluation on cuda:0 " + num(eg.loss) + "/" + num(eg.accuracy) + " vs CPU " + num(ec.loss) + "/" +
                num(ec.accuracy));
  }
  return pass();
}

Outcome shardSourceOnCuda() {
  if (auto why = cudaSkipReason(); !why.empty()) return skip(why);
  auto data = imageData(512, 28, 4);
  auto gpuSpec = workerSpec("lenet", {"cuda:0"});
  auto cpuSpec = workerSpec("lenet", {"cpu"});
  auto gpu = ml::ShardGradientSource::create(gpuSpec, data, 0, 1);
  auto cpu = ml::ShardGradientSource::create(cpuSpec, data, 0, 1);
  if (!gpu) return fail(gpu.message());
  if (!cpu) return fail(cpu.message());
  if (gpu.value()->model().deviceName() != "cuda:0") {
    return fail("worker 0 is on " + gpu.value()->model().deviceName() + ", not cuda:0");
  }
  auto params = ml::initialParameters(gpuSpec, data);
  if (!params) return fail(params.message());
  for (int step = 0; step < 3; ++step) {
    if (auto o = compareSources(*gpu.value(), *cpu.value(), params.value(), "step " + std::to_string(step));
        o.kind != Outcome::Pass) {
      return o;
    }
  }
  return pass();
}

Outcome twoSourcesShareOneGpu() {
  if (auto why = cudaSkipReason(); !why.empty()) return skip(why);
  auto data = imageData(512, 28, 5);
  auto gpuSpec = workerSpec("lenet", {"cuda:0", "cuda:0"});
  auto cpuSpec = workerSpec("lenet", {"cpu", "cpu"});
  std::vector<std::unique_ptr<ml::ShardGradientSource>> gpu, cpu;
  for (int rank = 0; rank < 2; ++rank) {
    auto g = ml::ShardGradientSource::create(gpuSpec, data, rank, 2);
    auto c = ml::ShardGradientSource::create(cpuSpec, data, rank, 2);
    if (!g) return fail("worker " + std::to_string(rank) + ": " + g.message());
    if (!c) return fail("worker " + std::to_string(rank) + " (cpu): " + c.message());
    gpu.push_back(std::move(g).value());
    cpu.push_back(std::move(c).value());
  }
  auto params = ml::initialParameters(gpuSpec, data);
  if (!params) return fail(params.message());
  for (int step = 0; step < 3; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const auto what = "worker " + std::to_string(rank) + " step " + std::to_string(step);
      if (auto o = compareSources(*gpu[static_cast<std::size_t>(rank)], *cpu[static_cast<std::size_t>(rank)],
                                  params.value(), what);
          o.kind != Outcome::Pass) {
        return o;
      }
    }
  }
  return pass();
}

Outcome trainerLearnsOnCuda() {
  if (auto why = cudaSkipReason(); !why.empty()) return skip(why);
  TrainTest data{imageData(1024, 28, 6), imageData(256, 28, 7)};
  ExperimentSpec spec;
  spec.mutable_model()->set_name("lenet");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_stop()->set_epochs(3);
  spec.mutable_evaluation()->set_every_steps(1000000);
  spec.mutable_optimizer()->set_lr(0.05);
  spec.set_device("cuda:0");
  spec = withDefaults(spec);
  auto trainer = ml::SingleNodeTrainer::create(spec, data);
  if (!trainer) return fail(trainer.message());
  if (trainer.value()->model().deviceName() != "cuda:0") return fail("trainer on " + trainer.value()->model().deviceName());
  auto result = trainer.value()->run(nullptr);
  if (!result) return fail(result.message());
  if (result.value().final.accuracy < 0.5) {
    return fail("accuracy " + num(result.value().final.accuracy) + " after 3 epochs on cuda:0 (expected > 0.5)");
  }
  return pass();
}

std::vector<Check> allChecks() {
  std::vector<Check> checks{{"deviceErrorsAreClear", deviceErrorsAreClear}};
  for (const std::string model : {"mlp", "lenet", "resnet8"}) {
    checks.push_back({"stagedPathMatchesDirect(" + model + ")", [model] { return stagedPathMatchesDirect(model); }});
  }
  for (const std::string model : {"mlp", "lenet", "resnet8"}) {
    checks.push_back({"gradientsMatchCpu(" + model + ")", [model] { return gradientsMatchCpu(model); }});
  }
  checks.push_back({"shardSourceOnCuda", shardSourceOnCuda});
  checks.push_back({"twoSourcesShareOneGpu", twoSourcesShareOneGpu});
  checks.push_back({"trainerLearnsOnCuda", trainerLearnsOnCuda});
  return checks;
}

}  // namespace dasp::gputest
