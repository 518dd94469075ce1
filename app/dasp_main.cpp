// SPDX-License-Identifier: MIT
// `dasp`: the Qt-free command line and every node role. Thin: it sets up the process
// (allocator, OpenMP policy) and dispatches to app/cli.
#include "app/cli/cli.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace {

const char* kUsage =
    "usage: dasp <command> [options]\n"
    "  run SPEC.json       run a distributed experiment or suite (server, workers, evaluator)\n"
    "  train [SPEC.json]   train one model on one process (the single-node baseline)\n"
    "  runs                list the runs in the store\n"
    "  tables              regenerate the results tables of README.md and docs/ from results/\n"
    "  validate SPEC.json  check a spec (--print shows it with every default)\n"
    "  bench train         trainer throughput vs a plain LibTorch loop\n"
    "  info                build, LibTorch and device facts\n"
    "  server|worker|evaluator  one node of a run (started by `dasp run`)\n"
    "Run 'dasp <command> --help' for the options of a command.\n";

void tuneProcess() {
  // Page faults cost ~11 µs each here: keep freed memory in the heap instead of returning
  // large blocks to the kernel, so per-step buffers are reused rather than re-faulted.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
  // libgomp spin-waits by default, which starves the other processes of a small machine.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
}

}  // namespace

int main(int argc, char** argv) {
  tuneProcess();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "run") return dasp::cli::cmdRun(argc, argv);
  if (command == "tables") return dasp::cli::cmdTables(argc, argv);
  if (command == "server") return dasp::cli::cmdServer(argc, argv);
  if (command == "worker") return dasp::cli::cmdWorker(argc, argv);
  if (command == "evaluator") return dasp::cli::cmdEvaluator(argc, argv);
  if (command == "train") return dasp::cli::cmdTrain(argc, argv);
  if (command == "runs") return dasp::cli::cmdRuns(argc, argv);
  if (command == "validate") return dasp::cli::cmdValidate(argc, argv);
  if (command == "bench") return dasp::cli::cmdBench(argc, argv);
  if (command == "info") return dasp::cli::cmdInfo(argc, argv);
  std::cerr << "dasp: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
