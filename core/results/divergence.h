// SPDX-License-Identifier: MIT
#pragma once
// Divergence: when a run's model has left training (stop.divergence in the spec). Both
// engines feed a DivergenceMonitor the losses they see; the first divergence it finds ends
// the run with status "diverged", its cause, version and run time recorded.
//
// Threading: a DivergenceMonitor is not synchronized; its owner calls it from one thread
// (or under its own lock).

#include "dasp/v1/experiment.pb.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dasp {

enum class DivergenceCause {
  NonFiniteTrainLoss,  // a pushed gradient's training loss was NaN or Inf
  NonFiniteTestLoss,   // the evaluator's loss was NaN or Inf
  LossAboveFactor,     // the loss stayed above loss_factor × the initial loss for window_s
};

// "non_finite_train_loss", "non_finite_test_loss", "loss_above_factor": the stored words.
const char* toString(DivergenceCause cause);
std::optional<DivergenceCause> divergenceCauseFromString(const std::string& text);

struct Divergence {
  DivergenceCause cause = DivergenceCause::NonFiniteTrainLoss;
  std::int64_t version = 0;  // the version whose loss showed it (the first of the window)
  double tS = 0;             // run time (server time) when it began
  double loss = 0;           // the loss seen then (not stored: NaN when read back)
  double initialLoss = 0;    // LossAboveFactor: the reference it was compared with (not stored)
  // For people, from what the store keeps: "training loss not finite at version 32 (0.29 s)".
  std::string describe() const;
  // describe() with the losses seen, when they are known: "...: inf".
  std::string describeWithLoss() const;
};

class DivergenceMonitor {
 public:
  // `rule` with its defaults filled in (withDefaults).
  explicit DivergenceMonitor(const v1::DivergenceRule& rule);

  // The training loss of a gradient computed on `version`, pushed at server time `tS`.
  void onTrainLoss(double tS, std::int64_t version, double loss);
  // The training loss of a push the server refused: it counts as onTrainLoss() does, but
  // never toward the initial loss (a refused push is no evidence of where training began).
  void onRefusedTrainLoss(double tS, std::int64_t version, double loss);
  // The evaluator's test loss of `version`, made at server time `tS`.
  void onTestLoss(double tS, std::int64_t version, double loss);

  // The first divergence seen, if any (it never changes once set).
  const std::optional<Divergence>& divergence() const { return m_divergence; }

 private:
  // One loss series' run above the threshold: when it began, at which version and loss.
  struct Streak {
    std::optional<double> sinceS;
    std::int64_t version = 0;
    double loss = 0;
  };
  void check(Streak& streak, double tS, std::int64_t version, double loss);

  double m_factor;
  double m_windowS;
  double m_initialSum = 0;
  std::int64_t m_initialCount = 0;
  Streak m_train, m_test;
  std::optional<Divergence> m_divergence;
};

}  // namespace dasp
