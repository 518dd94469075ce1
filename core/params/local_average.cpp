// SPDX-License-Identifier: MIT
#include "core/params/local_average.h"

#include <algorithm>
#include <cmath>

namespace dasp {

void LocalModelAverage::reset(std::size_t parameters) {
  m_sum.assign(parameters, 0.0);
  m_squares = 0;
  m_steps = 0;
  m_copies = 0;
}

bool LocalModelAverage::add(const float* copy, std::int64_t steps) {
  if (steps < 1) return false;
  const double w = static_cast<double>(steps);
  double squares = 0;
  for (std::size_t i = 0; i < m_sum.size(); ++i) {
    const double v = copy[i];
    m_sum[i] += w * v;
    squares += v * v;
  }
  m_squares += w * squares;
  m_steps += steps;
  ++m_copies;
  return true;
}

void LocalModelAverage::average(float* out) const {
  const double total = static_cast<double>(m_steps);
  for (std::size_t i = 0; i < m_sum.size(); ++i) out[i] = static_cast<float>(m_sum[i] / total);
}

double LocalModelAverage::spread() const {
  if (m_steps < 1 || m_copies < 2) return 0.0;
  // Σ s_i |c_i − a|² = Σ s_i |c_i|² − S |a|², with a = Σ s_i c_i / S.
  const double total = static_cast<double>(m_steps);
  double meanSquares = 0;
  for (const double s : m_sum) meanSquares += s * s;
  return std::sqrt(std::max(0.0, m_squares - meanSquares / total) / total);
}

std::int64_t mergeLocalCopy(float* current, std::int64_t merged, const float* copy, std::int64_t steps,
                            std::size_t n) {
  if (steps < 1) return merged;
  const double a = static_cast<double>(std::max<std::int64_t>(0, merged));
  const double b = static_cast<double>(steps);
  for (std::size_t i = 0; i < n; ++i) {
    current[i] = static_cast<float>((a * current[i] + b * copy[i]) / (a + b));
  }
  return std::max<std::int64_t>(0, merged) + steps;
}

}  // namespace dasp
