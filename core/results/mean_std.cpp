// SPDX-License-Identifier: MIT
#include "core/results/mean_std.h"

#include <cmath>
#include <iomanip>
#include <locale>
#include <sstream>

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

std::string fixedText(double v, int decimals) {
  std::ostringstream s;
  s.imbue(std::locale::classic());
  s << std::fixed << std::setprecision(decimals) << v;
  std::string text = s.str();
  if (!text.empty() && text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

std::string meanStdCell(const MeanStd& s, int meanDecimals, int sdDecimals) {
  std::string text = fixedText(s.mean, meanDecimals);
  if (s.n > 1) text += " \u00b1 " + fixedText(s.sd, sdDecimals);
  return text;
}

}  // namespace dasp
