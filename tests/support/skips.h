// SPDX-License-Identifier: MIT
#pragma once
// The skips CI allows. A test function that cannot run on the CI machine for a reason CI
// accepts (no GPU there) skips through one of these macros: its QSKIP message starts with
// a fixed tag, "[allowed-skip:NAME] ", that ./test.sh recognises. With
// DASP_FAIL_ON_SKIP=1 (set by .ci/run) ./test.sh fails on every other skip and names it,
// so a test that could run on CI (root, network namespaces, sshd, tmpfs) never passes
// there by skipping. The tags test.sh accepts are listed in its `allowed_skips`.
// Threading: the test's thread (QSKIP returns from the test function).

#include <QtTest>

// No CUDA device (a CPU-only LibTorch, or no GPU visible).
#define DASP_SKIP_TAG_NO_GPU "[allowed-skip:no-gpu] "
// A CUDA device is present, so a check of the CPU-only behaviour does not apply.
#define DASP_SKIP_TAG_HAS_GPU "[allowed-skip:has-gpu] "

// Not root: a test that starts system daemons (the Slurm test cluster: slurmd starts the
// tasks as their users) cannot run. CI runs as root, where these tests run.
#define DASP_SKIP_TAG_NOT_ROOT "[allowed-skip:not-root] "

// QSKIP with a literal reason, tagged.
#define DASP_SKIP_NEEDS_GPU(reason) QSKIP(DASP_SKIP_TAG_NO_GPU reason)
#define DASP_SKIP_NEEDS_NO_GPU(reason) QSKIP(DASP_SKIP_TAG_HAS_GPU reason)
#define DASP_SKIP_NEEDS_ROOT(reason) QSKIP(DASP_SKIP_TAG_NOT_ROOT reason)
// The same with a reason built at run time (std::string).
#define DASP_SKIP_NEEDS_GPU_BECAUSE(reason) QSKIP((std::string(DASP_SKIP_TAG_NO_GPU) + (reason)).c_str())
