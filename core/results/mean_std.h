// SPDX-License-Identifier: MIT
#pragma once
// Mean and sample standard deviation over seeds: the one implementation the results
// tables, the recovery tables and the GUI's reports and sweeps share; and the one
// fixed-point text their figures are printed with. Pure; any thread.

#include <string>
#include <vector>

namespace dasp {

struct MeanStd {
  double mean = 0;
  double sd = 0;  // sample std (n - 1); 0 for fewer than two values
  int n = 0;      // values; mean and sd mean nothing when 0
};
MeanStd meanStd(const std::vector<double>& values);

// `v` with `decimals` decimals in the C locale whatever the process's locale (a GUI sets
// the user's), and "0.0" rather than "-0.0" for a negative value that rounds to zero.
std::string fixedText(double v, int decimals);
// "mean ± sd" by fixedText, the sd left out for fewer than two values.
std::string meanStdCell(const MeanStd& s, int meanDecimals, int sdDecimals);

}  // namespace dasp
