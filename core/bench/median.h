// SPDX-License-Identifier: MIT
#pragma once
// The median the benchmarks report over their rounds (the middle value; for an even count,
// the mean of the two middle ones; 0 for none): a round disturbed by the machine moves it
// less than it moves a mean.
// Threading: a pure function.

#include <vector>

namespace dasp {

double median(std::vector<double> values);

}  // namespace dasp
