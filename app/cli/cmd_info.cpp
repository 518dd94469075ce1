// SPDX-License-Identifier: MIT
// `dasp info [--json]`: the build, LibTorch and its devices, the default store.
#include "app/cli/cli.h"

#include "core/build_info.h"
#include "core/ml/model.h"
#include "core/run_store.h"

#include <iostream>

namespace dasp::cli {

int cmdInfo(int argc, char** argv) {
  Args args(argc, argv, 2, {"--json"});
  const auto info = ml::torchInfo();
  if (args.has("--json")) {
    std::cout << "{\"version\":" << jsonString(codeVersion()) << ",\"host\":" << jsonString(hostName())
              << ",\"torch_version\":" << jsonString(info.version)
              << ",\"cuda_available\":" << (info.cudaAvailable ? "true" : "false")
              << ",\"cuda_devices\":" << info.cudaDevices
              << ",\"default_db\":" << jsonString(defaultStorePath()) << "}\n";
    return 0;
  }
  std::cout << "dasp " << codeVersion() << " on " << hostName() << "\n"
            << "LibTorch " << info.version << ", CUDA " << (info.cudaAvailable ? "available" : "not available")
            << " (" << info.cudaDevices << " device(s))\n"
            << "default run store: " << defaultStorePath() << "\n"
            << info.parallelInfo;
  return 0;
}

}  // namespace dasp::cli
