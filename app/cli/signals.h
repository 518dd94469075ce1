// SPDX-License-Identifier: MIT
#pragma once
// Ctrl-C and SIGTERM ask the running command to stop cleanly (finish the run as
// `stopped`, flush the store) instead of killing the process mid-write. Whichever thread
// the kernel hands the signal to runs the handler, so a thread that some library started
// before the command could block the signals never lets one kill the process.
// Threading: install once from the main thread, before waiting; the flag may be read
// anywhere.
#include <atomic>

namespace dasp::cli {
void installStopSignals();
const std::atomic<bool>* stopRequested();
// Blocks the calling thread until a stop signal has arrived (at once if one already did).
void waitForStopSignal();
}  // namespace dasp::cli
