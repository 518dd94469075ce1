// SPDX-License-Identifier: MIT
#include "core/common/durations.h"

#include <cmath>
#include <cstdint>

namespace dasp {

std::chrono::nanoseconds durationFromSeconds(double seconds) {
  if (!(seconds > 0)) return std::chrono::nanoseconds(0);  // NaN too
  const double clamped = std::fmin(seconds, kMaxDurationS);
  // 1e9 s is 1e18 ns, inside int64's 9.2e18: the cast cannot overflow.
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(clamped * 1e9)));
}

std::chrono::nanoseconds durationFromMs(double ms) { return durationFromSeconds(ms / 1000); }

double wallClockSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace dasp
