// SPDX-License-Identifier: MIT
#include "ml/bench/train_bench.h"

#include "core/bench/median.h"

#include "ml/trainer.h"
#include "ml/zoo.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>

namespace dasp::ml {
namespace {

using Clock = std::chrono::steady_clock;

// The reference: how one writes a training loop with LibTorch's own API.
class PlainLoop {
 public:
  // `net` must already be on `device`.
  PlainLoop(std::shared_ptr<zoo::Net> net, const Dataset& train, int batch, std::uint64_t seed,
            torch::Device device)
      : m_net(std::move(net)),
        m_optimizer(m_net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)),
        m_batch(batch),
        m_device(device) {
    m_features = torch::from_blob(const_cast<float*>(train.features.data()),
                                  {train.count, train.channels, train.height, train.width});
    m_labels = torch::from_blob(const_cast<std::int64_t*>(train.labels.data()), {train.count},
                                torch::kInt64);
    m_generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    m_perm = torch::randperm(train.count, m_generator, torch::kInt64);
  }
  double step() {
    if (m_cursor + m_batch > m_perm.size(0)) {
      m_perm = torch::randperm(m_perm.size(0), m_generator, torch::kInt64);
      m_cursor = 0;
    }
    auto idx = m_perm.narrow(0, m_cursor, m_batch);
    m_cursor += m_batch;
    auto x = m_features.index_select(0, idx);
    auto y = m_labels.index_select(0, idx);
    if (m_device.is_cuda()) {
      x = x.to(m_device);
      y = y.to(m_device);
    }
    m_optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(m_net->forward(x), y);
    loss.backward();
    m_optimizer.step();
    return loss.item<double>();
  }

 private:
  std::shared_ptr<zoo::Net> m_net;
  torch::optim::SGD m_optimizer;
  int m_batch;
  torch::Device m_device;
  torch::Tensor m_features, m_labels, m_perm;
  at::Generator m_generator;
  std::int64_t m_cursor = 0;
};

}  // namespace

Result<TrainBenchCase> benchTrain(const std::string& model, int batch, const TrainTest& data,
                                  double secondsPerRound, int rounds, std::uint64_t seed,
                                  const std::string& device) {
  if (data.train.count < batch) return Status::error("bench: training set smaller than a batch");
  const auto targetName = resolveDeviceName(device);
  if (!targetName) return Status::error("bench: " + targetName.message());
  const torch::Device target(targetName.value());
  ExperimentSpec spec;
  spec.mutable_model()->set_name(model);
  spec.set_batch_size(batch);
  spec.set_seed(seed);
  spec.set_device(targetName.value());
  spec = withDefaults(spec);
  auto trainer = SingleNodeTrainer::create(spec, data);
  if (!trainer) return trainer.status();
  auto options = modelOptionsFor(spec, data.train);
  auto net = zoo::makeNet(options);
  if (!net) return net.status();
  net.value()->train();
  if (target.is_cuda()) net.value()->to(target);
  PlainLoop plain(net.value(), data.train, batch, seed, target);

  // Calibrate steps per round from a short warm-up of each (also warms caches/allocator).
  auto timeSteps = [](auto&& fn, int n) {
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) fn();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto trainerStep = [&] { (void)trainer.value()->step(); };
  auto plainStep = [&] { (void)plain.step(); };
  const double warm = timeSteps(trainerStep, 20) + timeSteps(plainStep, 20);
  const int steps = std::max(20, static_cast<int>(secondsPerRound / std::max(1e-6, warm / 40.0)));

  std::vector<double> ours, theirs;
  for (int r = 0; r < rounds; ++r) {
    // Alternate the order so drift on a noisy machine hits both sides alike.
    if (r % 2 == 0) {
      ours.push_back(steps * batch / timeSteps(trainerStep, steps));
      theirs.push_back(steps * batch / timeSteps(plainStep, steps));
    } else {
      theirs.push_back(steps * batch / timeSteps(plainStep, steps));
      ours.push_back(steps * batch / timeSteps(trainerStep, steps));
    }
  }
  TrainBenchCase c;
  c.model = model;
  c.device = target.str();
  c.batch = batch;
  c.rounds = rounds;
  c.trainerSamplesPerS = median(ours);
  c.baselineSamplesPerS = median(theirs);
  c.ratio = c.baselineSamplesPerS > 0 ? c.trainerSamplesPerS / c.baselineSamplesPerS : 0;
  c.parameters = trainer.value()->model().parameterCount();
  return c;
}

}  // namespace dasp::ml
