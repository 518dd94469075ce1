// SPDX-License-Identifier: MIT
#pragma once
// Internal to the policies' files (core/*policy*.cpp, core/policy/sync_policies.cpp): constants
// they share.

#include <cstddef>
#include <limits>

namespace dasp::policy_internal {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Static reasons: a decision allocates nothing.
inline constexpr const char* kReasonReportedDown = "reported down by the server";
inline constexpr const char* kReasonReportedUp = "reported up by the server";
inline constexpr const char* kReasonPushedWhileDown = "pushed while Down: back up";
inline constexpr const char* kReasonSilent = "no push for barrier_timeout_s after its pull";
inline constexpr const char* kReasonMissedBarrier = "missed the barrier timeout";

inline std::size_t ix(int rank) { return static_cast<std::size_t>(rank); }

}  // namespace dasp::policy_internal
