// SPDX-License-Identifier: MIT
#include "core/common/evaluation_schedule.h"

namespace dasp {

double evaluationWaitS(double nowS, double everyS, double evalS, const std::vector<double>& faultTimesS,
                       double beforeS) {
  constexpr double kTooCloseS = 0.05;  // a pull that returned just short of the moment took it
  for (const double faultS : faultTimesS) {
    const double takeAtS = faultS - beforeS;
    if (takeAtS - nowS < kTooCloseS) continue;
    // The regular evaluation would not have ended by then: wait for the moment instead.
    if (nowS + everyS + evalS > takeAtS) return takeAtS - nowS;
    break;
  }
  return everyS;
}

}  // namespace dasp
