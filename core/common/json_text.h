// SPDX-License-Identifier: MIT
#pragma once
// Writing JSON by hand in the few places that print it (the CLI's --json lines, the
// Chrome trace export): a string literal with escapes, and a number (non-finite → null).
// Threading: pure functions.
#include <string>

namespace dasp {
std::string jsonString(const std::string& text);
std::string jsonNumber(double value);
}  // namespace dasp
