// SPDX-License-Identifier: MIT
#pragma once
// What build this is, recorded with every run so a stored figure can be traced to code.
// Threading: pure functions.
#include <string>

namespace dasp {
// "0.1.0 (git abc1234)" when built from a git checkout, else the project version.
std::string codeVersion();
// This host's name.
std::string hostName();
}  // namespace dasp
