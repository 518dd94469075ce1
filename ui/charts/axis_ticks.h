// SPDX-License-Identifier: MIT
#pragma once
// The tick spacing the charts' time and value axes share.
// Threading: a pure function; any thread.

#include <algorithm>
#include <cmath>

namespace dasp::ui {

// 1, 2 or 5 times a power of ten, so that about `ticks` intervals span `span`.
inline double niceStep(double span, int ticks) {
  const double raw = span / std::max(ticks, 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

}  // namespace dasp::ui
