#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The skip summary of a test run: ctest counts a Qt Test function that skipped (QSKIP) as
# passed, so this lists every skip, with its reason, from the full output ctest keeps
# (Testing/Temporary/LastTest.log). A skip CI accepts carries a tag at the start of its
# reason (tests/support/skips.h: "[allowed-skip:NAME] ", NAME one of allowed_skips below).
# With DASP_FAIL_ON_SKIP=1 (set by .ci/run) any other skip is a failure: a test that can
# run on the CI machine (root, network namespaces, sshd, tmpfs) must not pass by skipping.
# usage: check-skips.sh LOG   exit: 0, or 1 for an untagged skip under DASP_FAIL_ON_SKIP=1
set -u
log=$1
allowed_skips="no-gpu has-gpu not-root"
[ -f "$log" ] || { echo "check-skips: no test log at $log"; exit 0; }
skips=$(grep -E '^SKIP +: ' "$log" | sed -E 's/^SKIP +: //')
if [ -z "$skips" ]; then
  echo "skipped test functions: none"
  exit 0
fi
echo "skipped test functions ($(printf '%s\n' "$skips" | wc -l)):"
printf '%s\n' "$skips" | sed 's/^/  /'
unexpected=""
while IFS= read -r skip; do
  # "Class::function(data tag) [allowed-skip:NAME] reason": the tag follows the name.
  tag=$(printf '%s\n' "$skip" | sed -nE 's/^[A-Za-z0-9_:]+(\([^)]*\))? \[allowed-skip:([a-z0-9-]+)\] .*$/\2/p')
  if [ -n "$tag" ] && [[ " $allowed_skips " == *" $tag "* ]]; then continue; fi
  unexpected+="  $skip"$'\n'
done <<< "$skips"
[ -n "$unexpected" ] || exit 0
count=$(printf '%s' "$unexpected" | grep -c .)
if [ "${DASP_FAIL_ON_SKIP:-0}" = 1 ]; then
  echo "FAILED: $count skipped test function(s) without an allowed-skip tag (DASP_FAIL_ON_SKIP=1; allowed: $allowed_skips):"
  printf '%s' "$unexpected"
  exit 1
fi
echo "skips CI fails on ($count without an allowed-skip tag; DASP_FAIL_ON_SKIP=1 makes them failures here too):"
printf '%s' "$unexpected"
exit 0
