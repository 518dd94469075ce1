#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a newcomer's `./test.sh` costs: clones this repository's HEAD into a temporary
# directory, runs its ./test.sh there with an empty ccache (so every file is compiled), and
# appends one line to results/fresh-clone/timings.jsonl (dasp.v1.SetupTiming) for
# `dasp tables` to put in the README. The set-up includes apt-get only for packages this
# machine lacks; the line says whether they were all there already.
# usage: tools/time-fresh-clone.sh   (after tools/setup.sh; it takes what ./test.sh takes)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/clone"
commit=$(git -C "$work/clone" describe --always)
missing=0
for p in qt6-base-dev libtorch-dev libgrpc++-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=1
done
log="$work/test.log"
status=0
CCACHE_DIR="$work/ccache" "$work/clone/test.sh" > "$log" 2>&1 || status=$?
build_s=$(sed -nE 's/^build: ([0-9]+) s$/\1/p' "$log" | tail -1)
tests_s=$(sed -nE 's/^tests: ([0-9]+) s$/\1/p' "$log" | tail -1)
# "100% tests passed, 0 tests failed out of 66"
summary=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1)
tests=$(sed -nE 's/.* out of ([0-9]+)$/\1/p' <<<"$summary")
failed=$(sed -nE 's/.*passed, ([0-9]+) tests? failed.*/\1/p' <<<"$summary")
if [ -z "$build_s" ] || [ -z "$tests_s" ] || [ -z "$tests" ]; then
  echo "time-fresh-clone: ./test.sh ended (status $status) without its figures; the log's end:" >&2
  tail -30 "$log" >&2
  exit 1
fi
machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
installed=$([ "$missing" = 0 ] && echo true || echo false)
mkdir -p "$root/results/fresh-clone"
printf '{"date":"%s","commit":"%s","machine":"%s","build_s":%s,"cold_cache":true,"packages_installed":%s,"tests_s":%s,"tests":%s,"failed":%s}\n' \
  "$(date -u +%F)" "$commit" "$machine" "$build_s" "$installed" "$tests_s" "$tests" "${failed:-0}" \
  >> "$root/results/fresh-clone/timings.jsonl"
tail -1 "$root/results/fresh-clone/timings.jsonl"
exit $status
