// SPDX-License-Identifier: MIT
// `dasp info [--json]`: the build, LibTorch and its devices, the default store.
#include "app/cli/cli.h"

#include "core/common/build_info.h"
#include "ml/model.h"
#include "core/store/run_store.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace dasp::cli {
namespace {

std::string gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

std::string driverVersion(int v) {
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) : std::string("unknown");
}

int infoCommand(bool json) {
  const auto info = ml::torchInfo();
  const std::size_t named = info.deviceNames.size();
  if (json) {
    std::cout << "{\"version\":" << jsonString(codeVersion()) << ",\"host\":" << jsonString(hostName())
              << ",\"torch_version\":" << jsonString(info.version)
              << ",\"built_with_cuda\":" << (info.builtWithCuda ? "true" : "false")
              << ",\"cuda_available\":" << (info.cudaAvailable ? "true" : "false")
              << ",\"cuda_devices\":" << info.cudaDevices
              << ",\"cuda_driver_version\":" << jsonString(info.cudaDriverVersion > 0 ? driverVersion(info.cudaDriverVersion) : "")
              << ",\"devices\":[";
    for (std::size_t i = 0; i < named; ++i) {
      std::cout << (i ? "," : "") << "{\"device\":" << jsonString("cuda:" + std::to_string(i))
                << ",\"name\":" << jsonString(info.deviceNames[i])
                << ",\"memory_bytes\":" << info.deviceMemoryBytes[i]
                << ",\"capability\":" << jsonString(info.deviceCapabilities[i]) << "}";
    }
    std::cout << "],\"default_device\":" << jsonString(info.defaultDevice)
              << ",\"default_db\":" << jsonString(defaultStorePath()) << "}\n";
    return 0;
  }
  std::cout << "dasp " << codeVersion() << " on " << hostName() << "\n"
            << "LibTorch " << info.version << (info.builtWithCuda ? " (CUDA build" : " (CPU-only build")
            << (info.builtWithCuda ? ", driver " + driverVersion(info.cudaDriverVersion) + ")" : std::string(")"))
            << ", CUDA " << (info.cudaAvailable ? "available" : "not available") << " (" << info.cudaDevices
            << " device(s))\n";
  for (std::size_t i = 0; i < named; ++i) {
    std::cout << "  cuda:" << i << "  " << info.deviceNames[i] << ", " << gib(info.deviceMemoryBytes[i])
              << ", compute capability " << info.deviceCapabilities[i] << "\n";
  }
  std::cout << "default device: " << info.defaultDevice << " (device auto)\n"
            << "default run store: " << defaultStorePath() << "\n"
            << info.parallelInfo;
  return 0;
}

}  // namespace

void addInfoCommand(CLI::App& dasp, int& exitCode) {
  auto json = std::make_shared<bool>(false);
  auto* info = dasp.add_subcommand("info", "build, LibTorch and device facts, and the default run store");
  info->add_flag("--json", *json, "one JSON object");
  info->callback([json, &exitCode] { exitCode = infoCommand(*json); });
}

}  // namespace dasp::cli
