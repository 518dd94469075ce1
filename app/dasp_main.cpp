// SPDX-License-Identifier: MIT
// `dasp`: the Qt-free command line and every node role. Thin: it sets up the process
// (allocator, OpenMP policy), declares the subcommands of app/cli and runs the one given.
#include "app/cli/run_dasp.h"

#include <malloc.h>

#include <cstdlib>

namespace {

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
  return dasp::cli::runDasp(argc, argv);
}
