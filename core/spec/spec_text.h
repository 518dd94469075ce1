// SPDX-License-Identifier: MIT
#pragma once
// Internal to the spec's files (core/spec*.cpp): the small text helpers they share.

#include "core/common/result.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace dasp::spec_text {

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

inline bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A field's problem: "field: problem".
inline Status bad(const std::string& field, const std::string& problem) { return Status::error(field + ": " + problem); }

inline std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace dasp::spec_text
