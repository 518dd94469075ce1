// SPDX-License-Identifier: MIT
#include "core/common/build_info.h"

#include <unistd.h>

#ifndef DASP_GIT_DESCRIBE
#define DASP_GIT_DESCRIBE ""
#endif

namespace dasp {

std::string codeVersion() {
  std::string v = DASP_VERSION;
  const std::string git = DASP_GIT_DESCRIBE;
  if (!git.empty()) v += " (git " + git + ")";
  return v;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace dasp
