// SPDX-License-Identifier: MIT
#pragma once
// The one conversion of a time given as a number — seconds or milliseconds from a spec,
// an option or a measurement — into a std::chrono duration, for every sleep, wait and
// deadline. A plain std::chrono::duration<double> cast overflows the clock's 64-bit tick
// count beyond about 292 years, and the result is undefined (in practice a negative
// duration): a worker told to iterate in 1e300 ms then did not wait at all and ran at full
// speed. Here NaN and values ≤ 0 give zero, and values beyond kMaxDurationS give
// kMaxDurationS: longer than any run, so a clamped wait is, for the run, for ever, and
// short enough that now() plus it stays far inside every clock's range.
// Threading: pure functions, safe from any thread.

#include <chrono>

namespace dasp {

// The longest duration any conversion gives: about 31.7 years.
inline constexpr double kMaxDurationS = 1e9;

// `seconds` as a duration: 0 for NaN or ≤ 0, at most kMaxDurationS.
std::chrono::nanoseconds durationFromSeconds(double seconds);
// `ms` milliseconds as a duration, by the same rule.
std::chrono::nanoseconds durationFromMs(double ms);

// The time point `seconds` after `from` on `Clock` (a deadline), by the same rule.
template <class Clock>
typename Clock::time_point after(typename Clock::time_point from, double seconds) {
  return from + std::chrono::duration_cast<typename Clock::duration>(durationFromSeconds(seconds));
}
// The time point `seconds` from now on `Clock`.
template <class Clock>
typename Clock::time_point deadlineIn(double seconds) {
  return after<Clock>(Clock::now(), seconds);
}

// The wall clock: seconds since the Unix epoch, for times that are stored or passed to
// another process (which has its own steady clock).
double wallClockSeconds();

}  // namespace dasp
