#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One part of a Qt Test unit that CTest runs in parts (dasp_add_test PARTS, in
# cmake/DaspTesting.cmake), so that parts that mostly wait on timers run beside each other.
#   run_test_part.sh EXE FUNCTION...        runs those test functions
#   run_test_part.sh EXE --rest FUNCTION... runs every test function of EXE but those: the
#                                           unit's last part, so that a function added
#                                           later runs without anyone naming it
# A name that is not a test function of EXE, or a --rest with nothing left, is an error.
set -euo pipefail
exe=$1
shift
rest=0
if [ "${1:-}" = "--rest" ]; then
  rest=1
  shift
fi
functions=$("$exe" -functions | sed -nE 's/^([A-Za-z_][A-Za-z0-9_]*)\(\)$/\1/p')
for name in "$@"; do
  if ! grep -qx "$name" <<<"$functions"; then
    echo "run_test_part: $name is not a test function of $(basename "$exe")" >&2
    exit 1
  fi
done
if [ "$rest" = 0 ]; then
  exec "$exe" "$@"
fi
left=()
while IFS= read -r f; do
  named=0
  for name in "$@"; do [ "$f" = "$name" ] && named=1; done
  [ "$named" = 1 ] || left+=("$f")
done <<<"$functions"
if [ ${#left[@]} -eq 0 ]; then
  echo "run_test_part: every test function of $(basename "$exe") is in a named part: the last part would run nothing" >&2
  exit 1
fi
exec "$exe" "${left[@]}"
