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
echo "tests: $(( $(date +%s) - built )) s"
exit $status
