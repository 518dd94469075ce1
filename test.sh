#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ./test.sh  set up and build as ./run.sh does, then run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
start=$(date +%s)
"$root/tools/setup.sh"
built=$(date +%s)
echo "build: $((built - start)) s"
cd "${DASP_BUILD_DIR:-$root/build}"
status=0
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j2 "$@" || status=$?
# ctest counts a Qt Test function that skipped (QSKIP) as passed: list every skip, with its
# reason, from the full output ctest keeps of this run.
log=Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  skips=$(grep -E '^SKIP +: ' "$log" | sed -E 's/^SKIP +: //' || true)
  if [ -n "$skips" ]; then
    echo "skipped test functions ($(printf '%s\n' "$skips" | wc -l)):"
    printf '%s\n' "$skips" | sed 's/^/  /'
  else
    echo "skipped test functions: none"
  fi
fi
echo "tests: $(( $(date +%s) - built )) s"
exit $status
