// SPDX-License-Identifier: MIT
#pragma once
// StalenessHistogram: how stale the applied gradients of one run were, over all nodes —
// one bar per integer staleness 0..max (values beyond kMaxBins-1 share the last bar).
// BSP shows a single bar at 0; ASP/SSP/DASP spread out, and the tail is what hurts
// convergence. Custom painted (a few dozen bars), recomputed on refresh().
// Threading: GUI thread only. The RunData is not owned; it must outlive the widget or be
// replaced with setRun(nullptr) first.

#include "ui/charts/run_data.h"

#include <QWidget>

#include <cstdint>
#include <limits>
#include <vector>

namespace dasp::ui {

class StalenessHistogram : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kMaxBins = 64;

  explicit StalenessHistogram(QWidget* parent = nullptr);
  ~StalenessHistogram() override;

  void setRun(const RunData* run);
  // Only gradients applied at or before run time `t`; NaN or +inf: the whole run (default).
  void setUntil(double t);
  double until() const { return m_until; }
  void refresh();
  // counts()[s] = applied gradients with staleness s (the last bin: s >= kMaxBins - 1).
  const std::vector<std::int64_t>& counts() const { return m_counts; }
  // Staleness values are rounded to integers; negative and non-finite ones are skipped, and
  // so are points after `until`.
  static std::vector<std::int64_t> histogram(const RunData& run,
                                             double until = std::numeric_limits<double>::infinity());

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const RunData* m_run = nullptr;
  double m_until = std::numeric_limits<double>::infinity();
  std::vector<std::int64_t> m_counts;
  std::int64_t m_total = 0;
  double m_mean = 0;
};

}  // namespace dasp::ui
