// SPDX-License-Identifier: MIT
#pragma once
// SingleNodeTrainer: trains one model on one process, the baseline every distributed run
// is compared against (`dasp train`). It draws batches from a seeded per-epoch shuffle,
// takes SGD steps with the spec's momentum, weight decay and learning-rate decay, and
// evaluates on the test set on the spec's schedule.
//
// Threading: a trainer is driven by one thread. run() may be cancelled from another
// thread through the atomic flag it is given.

#include "core/data/dataset.h"
#include "ml/model.h"
#include "core/spec/spec.h"

#include <atomic>
#include <memory>
#include <optional>

namespace dasp::ml {

using ::dasp::learningRateAt;

struct TrainPoint {
  double tS = 0;  // seconds since run() started
  std::int64_t step = 0;
  std::int64_t samples = 0;
  double epoch = 0;  // passes over the training set, fractional
  double loss = 0;   // mean training loss since the previous point
  double lr = 0;
};

struct EvalPoint {
  double tS = 0;
  std::int64_t step = 0;
  std::int64_t samples = 0;
  Evaluation eval;
};

// Receives progress; called on the training thread.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void onProgress(const TrainPoint&) {}
  virtual void onEvaluation(const EvalPoint&) {}
};

struct TrainResult {
  Evaluation final;             // on the whole test set, at the end
  double seconds = 0;           // wall time of run()
  double trainSeconds = 0;      // wall time spent in steps (evaluations excluded)
  std::int64_t steps = 0;
  std::int64_t samples = 0;
  double samplesPerS = 0;       // samples / trainSeconds
  double epochs = 0;
  std::optional<double> timeToTargetS;  // first evaluation at or above the target
  std::string stopReason;       // "epochs", "max_seconds", "max_updates", "target", "cancelled"
};

// Model options for a resolved spec and its data (shape, classes, seed, device, threads).
ModelOptions modelOptionsFor(const ExperimentSpec& spec, const Dataset& train);

class SingleNodeTrainer {
 public:
  // `spec` must be resolved (withDefaults) and valid; `data` must outlive the trainer.
  static Result<std::unique_ptr<SingleNodeTrainer>> create(const ExperimentSpec& spec,
                                                           const TrainTest& data);
  Model& model() { return *m_model; }

  // Trains until the stop condition; the observer (may be null) sees progress and
  // evaluations. A non-finite loss stops the run with an error naming the step.
  Result<TrainResult> run(TrainObserver* observer, const std::atomic<bool>* cancel = nullptr);

  // One SGD step on the next batch of the shuffled epoch order; returns the batch loss.
  Result<double> step();
  std::int64_t steps() const { return m_step; }

 private:
  SingleNodeTrainer(ExperimentSpec spec, const TrainTest& data, std::unique_ptr<Model> model);
  void reshuffle();

  ExperimentSpec m_spec;
  const TrainTest& m_data;
  std::unique_ptr<Model> m_model;
  std::vector<std::int64_t> m_order;
  std::int64_t m_cursor = 0;
  std::int64_t m_epoch = 0;
  std::int64_t m_step = 0;
  std::int64_t m_samples = 0;
};

}  // namespace dasp::ml
