// SPDX-License-Identifier: MIT
#include "core/results/mean_std.h"

#include <cmath>

namespace dasp {

MeanStd meanStd(const std::vector<double>& values) {
  MeanStd s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(sq / static_cast<double>(values.size() - 1));
  }
  return s;
}

}  // namespace dasp
