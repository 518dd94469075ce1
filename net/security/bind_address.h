// SPDX-License-Identifier: MIT
#pragma once
// Where a run's `dasp server` listens (the runner passes it as --bind). A hook for host
// placement: a launcher that places the server on another host passes that host's address
// (HostSpec.address) as `serverHostAddress`; with every node on this machine it is empty.
//
//   spec.security.bind set      -> exactly that (0.0.0.0 or :: only when written there)
//   else a server host address  -> that address (other hosts' nodes must reach it)
//   else                        -> 127.0.0.1 (nothing outside this machine can connect)
//
// Threading: a pure function.

#include "core/spec/spec.h"

#include <string>

namespace dasp::net {

inline std::string serverBindAddress(const ExperimentSpec& spec, const std::string& serverHostAddress = {}) {
  if (!spec.security().bind().empty()) return spec.security().bind();
  if (!serverHostAddress.empty()) return serverHostAddress;
  return "127.0.0.1";
}

}  // namespace dasp::net
