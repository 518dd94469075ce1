// SPDX-License-Identifier: MIT
#include "ml/trainer.h"

#include <chrono>
#include <cmath>
#include <random>

namespace dasp::ml {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

ModelOptions modelOptionsFor(const ExperimentSpec& spec, const Dataset& train) {
  ModelOptions o;
  o.name = spec.model().name();
  o.hidden = spec.model().has_hidden() ? spec.model().hidden() : 128;
  o.channels = train.channels;
  o.height = train.height;
  o.width = train.width;
  o.classes = train.classes;
  o.seed = spec.seed();
  o.device = spec.device();
  o.threads = spec.threads();
  return o;
}

Result<std::unique_ptr<SingleNodeTrainer>> SingleNodeTrainer::create(const ExperimentSpec& spec,
                                                                     const TrainTest& data) {
  if (data.train.count <= 0) return Status::error("training set is empty");
  configureThreads(spec.threads());
  auto model = Model::create(modelOptionsFor(spec, data.train));
  if (!model) return model.status();
  return std::unique_ptr<SingleNodeTrainer>(
      new SingleNodeTrainer(spec, data, std::move(model).value()));
}

SingleNodeTrainer::SingleNodeTrainer(ExperimentSpec spec, const TrainTest& data,
                                     std::unique_ptr<Model> model)
    : m_spec(std::move(spec)), m_data(data), m_model(std::move(model)) {
  m_order.resize(static_cast<std::size_t>(m_data.train.count));
  reshuffle();
}

void SingleNodeTrainer::reshuffle() {
  // Fisher-Yates with our own draw, so the order is the same on every platform.
  std::mt19937_64 rng(m_spec.seed() * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(m_epoch));
  for (std::size_t i = 0; i < m_order.size(); ++i) m_order[i] = static_cast<std::int64_t>(i);
  for (std::size_t i = m_order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng() % i);
    std::swap(m_order[i - 1], m_order[j]);
  }
  m_cursor = 0;
}

Result<double> SingleNodeTrainer::step() {
  const std::int64_t batch = m_spec.batch_size();
  if (m_cursor + batch > m_data.train.count) {
    // Drop the last partial batch, as a DataLoader with drop_last does.
    ++m_epoch;
    reshuffle();
  }
  const std::int64_t count = std::min(batch, m_data.train.count);
  BatchRef ref;
  ref.data = &m_data.train;
  ref.indices = m_order.data() + m_cursor;
  ref.count = count;
  auto loss = m_model->forwardBackward(ref);
  if (!loss) return loss;
  if (!std::isfinite(loss.value())) {
    return Status::error("training loss is " + std::to_string(loss.value()) + " at step " +
                         std::to_string(m_step) + " (diverged: lower optimizer.lr)");
  }
  const auto& opt = m_spec.optimizer();
  m_model->sgdStep(learningRateAt(opt, m_step), opt.momentum(), opt.weight_decay());
  m_cursor += count;
  ++m_step;
  m_samples += count;
  return loss;
}

Result<TrainResult> SingleNodeTrainer::run(TrainObserver* observer,
                                           const std::atomic<bool>* cancel) {
  const auto& stop = m_spec.stop();
  const auto& evalSpec = m_spec.evaluation();
  const double trainCount = static_cast<double>(m_data.train.count);
  const auto start = Clock::now();
  TrainResult result;
  double trainSeconds = 0;
  double lastEvalT = 0;
  std::int64_t lastEvalStep = 0;
  double lossSum = 0;
  std::int64_t lossCount = 0;
  const std::int64_t progressEvery = 50;

  auto evaluateNow = [&](double t) -> bool {
    EvalPoint p;
    p.tS = t;
    p.step = m_step;
    p.samples = m_samples;
    p.eval = m_model->evaluate(m_data.test, evalSpec.test_subset());
    if (observer) observer->onEvaluation(p);
    lastEvalT = since(start);
    lastEvalStep = m_step;
    if (stop.target_accuracy() > 0 && p.eval.accuracy >= stop.target_accuracy()) {
      if (!result.timeToTargetS) result.timeToTargetS = t;
      return stop.stop_at_target();
    }
    return false;
  };

  while (true) {
    const double epochs = static_cast<double>(m_samples) / trainCount;
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      result.stopReason = "cancelled";
      break;
    }
    if (stop.epochs() > 0 && epochs >= stop.epochs()) {
      result.stopReason = "epochs";
      break;
    }
    if (stop.max_updates() > 0 && m_step >= stop.max_updates()) {
      result.stopReason = "max_updates";
      break;
    }
    if (stop.max_seconds() > 0 && since(start) >= stop.max_seconds()) {
      result.stopReason = "max_seconds";
      break;
    }
    const auto t0 = Clock::now();
    auto loss = step();
    trainSeconds += since(t0);
    if (!loss) return loss.status();
    lossSum += loss.value();
    ++lossCount;
    if (m_step % progressEvery == 0 && observer) {
      TrainPoint p;
      p.tS = since(start);
      p.step = m_step;
      p.samples = m_samples;
      p.epoch = static_cast<double>(m_samples) / trainCount;
      p.loss = lossSum / static_cast<double>(lossCount);
      p.lr = learningRateAt(m_spec.optimizer(), m_step);
      observer->onProgress(p);
      lossSum = 0;
      lossCount = 0;
    }
    const bool dueBySteps = evalSpec.every_steps() > 0 && m_step - lastEvalStep >= evalSpec.every_steps();
    const bool dueByTime = evalSpec.every_s() > 0 && since(start) - lastEvalT >= evalSpec.every_s();
    if ((dueBySteps || dueByTime) && evaluateNow(since(start))) {
      result.stopReason = "target";
      break;
    }
  }
  // Final figures on the whole test set.
  result.final = m_model->evaluate(m_data.test, 0);
  if (observer) {
    EvalPoint p;
    p.tS = since(start);
    p.step = m_step;
    p.samples = m_samples;
    p.eval = result.final;
    observer->onEvaluation(p);
  }
  if (stop.target_accuracy() > 0 && !result.timeToTargetS &&
      result.final.accuracy >= stop.target_accuracy()) {
    result.timeToTargetS = since(start);
  }
  result.seconds = since(start);
  result.trainSeconds = trainSeconds;
  result.steps = m_step;
  result.samples = m_samples;
  result.samplesPerS = trainSeconds > 0 ? static_cast<double>(m_samples) / trainSeconds : 0;
  result.epochs = static_cast<double>(m_samples) / trainCount;
  return result;
}

}  // namespace dasp::ml
