#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sanitizer job of CI: the core and net tests (and the `dasp` binary their node
# processes run) built with AddressSanitizer and UBSan, warnings as errors (the
# asan-ubsan preset of CMakePresets.json, Qt-free), then run under ctest.
# usage: tools/sanitizer-check.sh   (after tools/setup.sh has installed the packages)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
start=$(date +%s)
cmake --preset asan-ubsan -DDASP_BUILD_GUI=OFF >/dev/null
# Only what the core and net tests need: not the ml/cli tests or the GUI.
targets=$(cmake --build build-asan --target help | sed -nE 's/^\.\.\. (tst_(core|net)_[a-z_]+)$/\1/p')
# shellcheck disable=SC2086
cmake --build build-asan -j2 --target dasp $targets
built=$(date +%s)
echo "sanitizer build: $((built - start)) s"
status=0
ctest --preset asan-ubsan || status=$?
echo "sanitizer tests: $(( $(date +%s) - built )) s"
exit $status
