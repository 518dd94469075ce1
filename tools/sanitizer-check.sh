#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sanitizer jobs of CI (after tools/setup.sh has installed the packages), each a
# preset of CMakePresets.json, Qt-free, warnings as errors:
#   tools/sanitizer-check.sh [--address]  AddressSanitizer, LeakSanitizer and UBSan: the core
#                                         tests and the units labelled `server`, which run the
#                                         parameter server in their own process and, most of
#                                         them, a `dasp run` whose nodes are this build's
#                                         `dasp` (a worker, the runner, a recovery under
#                                         each mode, TLS, two shards)
#   tools/sanitizer-check.sh --address-all  the same over every core and net unit: the drills
#                                         (every strategy, every recovery mode on one shard of
#                                         several, chain head kills, a full disk) and the
#                                         ssh, Slurm and network-namespace launchers (about
#                                         25 min of tests): before a stop, not in CI
#   tools/sanitizer-check.sh --core       the core tests alone (a quick loop)
#   tools/sanitizer-check.sh --thread     ThreadSanitizer: the units labelled `server` (their
#                                         handlers, ticker, doorbell and socket threads, the
#                                         store's apply threads). Their node processes, where
#                                         they start any, are the release build's `dasp`
#                                         ($DASP_BIN, default build/bin/dasp): LibTorch is not
#                                         built with TSan, and only our threads are under test.
# CI has 45 minutes on 2 cores for the release build and suite and both sanitizer builds:
# each sanitizer job builds and runs the same few units (CI's log ends with each job's time,
# .ci/run). Under a sanitizer every node process is several times slower, and a drill's
# recovery must still fit in its run: the tests that start node processes run one at a time
# here (each takes all three slots of tests/resources.json: cmake/DaspTesting.cmake).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
mode=${1:---address}
case "$mode" in
  --address) preset=asan-ubsan dir=build-asan labels='^(core|server)$' binaries=dasp ;;
  --address-all) preset=asan-ubsan dir=build-asan labels='^(core|net)$' binaries=dasp ;;
  --core) preset=asan-ubsan dir=build-asan labels='^core$' binaries='' ;;
  --thread) preset=tsan dir=build-tsan labels='^server$' binaries='' ;;
  *) echo "usage: $0 [--address|--address-all|--core|--thread]" >&2; exit 2 ;;
esac
start=$(date +%s)
cmake --preset "$preset" -DDASP_BUILD_GUI=OFF >/dev/null
# The test executables of the labels' tests ("net.transports" is tst_net_transports; a
# unit run in parts, "net.fault_drills.server_kill", is still tst_net_fault_drills).
tests=$(ctest --test-dir "$dir" -N -L "$labels" | sed -nE 's/^ *Test +#[0-9]+: ([a-z]+)\.([a-z_]+).*$/tst_\1_\2/p' | sort -u)
if [ -z "$tests" ]; then echo "sanitizer-check: no test has a label matching $labels" >&2; exit 1; fi
# shellcheck disable=SC2086
cmake --build "$dir" -j2 --target $binaries $tests
built=$(date +%s)
echo "sanitizer build ($preset): $((built - start)) s"
status=0
if [ "$mode" = --thread ]; then
  export DASP_BIN=${DASP_BIN:-$root/build/bin/dasp}
  [ -x "$DASP_BIN" ] || { echo "sanitizer-check --thread: $DASP_BIN is not built (run ./test.sh first)" >&2; exit 1; }
fi
ctest --preset "$preset" -L "$labels" || status=$?
echo "sanitizer tests ($preset): $(( $(date +%s) - built )) s"
exit $status
