// SPDX-License-Identifier: MIT
#pragma once
// Ctrl-C and SIGTERM ask the running command to stop cleanly (finish the run as
// `stopped`, flush the store) instead of killing the process mid-write.
// Threading: install once from the main thread; the flag may be read anywhere.
#include <atomic>

namespace dasp::cli {
void installStopSignals();
const std::atomic<bool>* stopRequested();
}  // namespace dasp::cli
