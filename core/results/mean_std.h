// SPDX-License-Identifier: MIT
#pragma once
// Mean and sample standard deviation over seeds: the one implementation the results
// tables, the recovery tables and the GUI's reports and sweeps share. Pure; any thread.

#include <vector>

namespace dasp {

struct MeanStd {
  double mean = 0;
  double sd = 0;  // sample std (n - 1); 0 for fewer than two values
  int n = 0;      // values; mean and sd mean nothing when 0
};
MeanStd meanStd(const std::vector<double>& values);

}  // namespace dasp
