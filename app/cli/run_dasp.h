// SPDX-License-Identifier: MIT
#pragma once
// The whole `dasp` command line behind one function, so that the thin main compiles
// without CLI11's headers (they took seconds of every build).
// Threading: the main thread.

namespace dasp::cli {

// Declares every subcommand (cli.h's addCommands), parses argv and runs the one given;
// returns the process exit code.
int runDasp(int argc, char** argv);

}  // namespace dasp::cli
