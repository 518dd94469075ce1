// SPDX-License-Identifier: MIT
#include "core/bench/median.h"

#include <algorithm>

namespace dasp {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : (values[m - 1] + values[m]) / 2;
}

}  // namespace dasp
