// SPDX-License-Identifier: MIT
#include "core/results/divergence.h"

#include <cmath>
#include <cstdio>

namespace dasp {

const char* toString(DivergenceCause cause) {
  switch (cause) {
    case DivergenceCause::NonFiniteTrainLoss: return "non_finite_train_loss";
    case DivergenceCause::NonFiniteTestLoss: return "non_finite_test_loss";
    case DivergenceCause::LossAboveFactor: return "loss_above_factor";
  }
  return "non_finite_train_loss";
}

std::optional<DivergenceCause> divergenceCauseFromString(const std::string& text) {
  for (auto c : {DivergenceCause::NonFiniteTrainLoss, DivergenceCause::NonFiniteTestLoss,
                 DivergenceCause::LossAboveFactor}) {
    if (text == toString(c)) return c;
  }
  return std::nullopt;
}

std::string Divergence::describe() const {
  char b[256];
  const auto v = static_cast<long long>(version);
  switch (cause) {
    case DivergenceCause::NonFiniteTrainLoss:
      std::snprintf(b, sizeof b, "training loss not finite at version %lld (%.2f s)", v, tS);
      break;
    case DivergenceCause::NonFiniteTestLoss:
      std::snprintf(b, sizeof b, "test loss not finite at version %lld (%.2f s)", v, tS);
      break;
    case DivergenceCause::LossAboveFactor:
      std::snprintf(b, sizeof b, "loss above stop.divergence.loss_factor x its initial value from version %lld (%.2f s) on",
                    v, tS);
      break;
  }
  return b;
}

std::string Divergence::describeWithLoss() const {
  char b[128];
  if (cause == DivergenceCause::LossAboveFactor) {
    std::snprintf(b, sizeof b, ": %g against an initial %.3g", loss, initialLoss);
  } else {
    std::snprintf(b, sizeof b, ": %g", loss);
  }
  return describe() + b;
}

DivergenceMonitor::DivergenceMonitor(const v1::DivergenceRule& rule)
    : m_factor(rule.loss_factor()), m_windowS(rule.window_s()) {}

void DivergenceMonitor::onTrainLoss(double tS, std::int64_t version, double loss) {
  // The initial loss: every gradient computed on version 0 (each worker's first, at least).
  if (!m_divergence && std::isfinite(loss) && version == 0) {
    m_initialSum += loss;
    ++m_initialCount;
  }
  onRefusedTrainLoss(tS, version, loss);
}

void DivergenceMonitor::onRefusedTrainLoss(double tS, std::int64_t version, double loss) {
  if (m_divergence) return;
  if (!std::isfinite(loss)) {
    m_divergence = Divergence{DivergenceCause::NonFiniteTrainLoss, version, tS, loss, 0};
    return;
  }
  check(m_train, tS, version, loss);
}

void DivergenceMonitor::onTestLoss(double tS, std::int64_t version, double loss) {
  if (m_divergence) return;
  if (!std::isfinite(loss)) {
    m_divergence = Divergence{DivergenceCause::NonFiniteTestLoss, version, tS, loss, 0};
    return;
  }
  check(m_test, tS, version, loss);
}

// A loss above the threshold starts (or continues) its series' streak; one below ends it.
// The streak that lasts window_s is a divergence dated from its start.
void DivergenceMonitor::check(Streak& streak, double tS, std::int64_t version, double loss) {
  if (m_factor <= 0 || m_initialCount == 0) return;
  const double initial = m_initialSum / static_cast<double>(m_initialCount);
  if (loss <= m_factor * initial) {
    streak.sinceS.reset();
    return;
  }
  if (!streak.sinceS) {
    streak = Streak{tS, version, loss};
  }
  if (tS - *streak.sinceS >= m_windowS) {
    m_divergence = Divergence{DivergenceCause::LossAboveFactor, streak.version, *streak.sinceS, loss, initial};
  }
}

}  // namespace dasp
