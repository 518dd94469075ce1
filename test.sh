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
# Four at a time on two cores: the tests that start node processes mostly wait on their
# runs' timers, and at most three of them run at once (tests/resources.json).
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j4 --resource-spec-file "$root/tests/resources.json" "$@" || status=$?
# ctest counts a skipped Qt Test function as passed: list the skips, and under
# DASP_FAIL_ON_SKIP=1 (.ci/run) fail on any that is not an allowed one (tools/check-skips.sh).
"$root/tools/check-skips.sh" Testing/Temporary/LastTest.log || { [ "$status" -ne 0 ] || status=1; }
echo "tests: $(( $(date +%s) - built )) s"
exit $status
