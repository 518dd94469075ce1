#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sanitizer job of CI: the core and net tests (and the `dasp` binary their node
# processes run) built with AddressSanitizer and UBSan, warnings as errors (the
# asan-ubsan preset of CMakePresets.json, Qt-free), then run under ctest.
# usage: tools/sanitizer-check.sh [--core]   (after tools/setup.sh has installed the packages)
#   --core  only the core tests (no LibTorch, gRPC or node processes to build): what CI runs,
#           as the whole job takes about 30 min on 2 cores (measured: build 1,512 s, the 20
#           core and net tests 267 s), which with ./test.sh would exceed CI's 30-minute budget
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
start=$(date +%s)
cmake --preset asan-ubsan -DDASP_BUILD_GUI=OFF >/dev/null
# Only what the core and net tests need: not the ml/cli tests or the GUI.
layers='core|net' binaries=dasp labels='^(core|net)$'
if [ "${1:-}" = "--core" ]; then layers='core' binaries='' labels='^core$'; fi
targets=$(cmake --build build-asan --target help | sed -nE "s/^\.\.\. (tst_($layers)_[a-z_]+)\$/\1/p")
# shellcheck disable=SC2086
cmake --build build-asan -j2 --target $binaries $targets
built=$(date +%s)
echo "sanitizer build: $((built - start)) s"
status=0
ctest --preset asan-ubsan -L "$labels" || status=$?
echo "sanitizer tests: $(( $(date +%s) - built )) s"
exit $status
