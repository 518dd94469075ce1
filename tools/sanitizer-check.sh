#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sanitizer jobs of CI (after tools/setup.sh has installed the packages), each a
# preset of CMakePresets.json, Qt-free, warnings as errors:
#   tools/sanitizer-check.sh [--address]  AddressSanitizer and UBSan: the core and net tests
#                                         and the `dasp` binary their node processes run
#                                         but the units that repeat, with more rows, seeds
#                                         or launchers, node code the others already run
#                                         under it (below): CI's time (45 min on 2 cores)
#                                         leaves them to the release run of ./test.sh
#   tools/sanitizer-check.sh --address-all  the same with those units too (before a stop)
#   tools/sanitizer-check.sh --core       the same, the core tests only (a quick loop)
#   tools/sanitizer-check.sh --thread     ThreadSanitizer: the tests labelled `server`, which
#                                         run the parameter server in their own process
#                                         (its handlers, ticker, doorbell and socket threads,
#                                         the store's apply threads). Their node processes,
#                                         where they start any, are the release build's
#                                         `dasp` ($DASP_BIN, default build/bin/dasp): LibTorch
#                                         is not built with TSan, and only our threads are
#                                         under test here.
# Under a sanitizer every node process is several times slower, and a drill's recovery must
# still fit in its run: the tests that start node processes run one at a time here (each
# takes all three slots of tests/resources.json: cmake/DaspTesting.cmake), beside the others.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
mode=${1:---address}
# The repeats: the Slurm, ssh and network-namespace launchers (a node's code is the same
# under each; the runner's launcher code runs in net.ssh_launch.others and net.runner), a
# worker kill under each of the seven strategies (net.fault_drills.server_kill and .pauses
# run the same recovery code, core.* every policy in process) and ten chain head kills over
# three seeds (net.chain_acks.others and the chain row of server_kill promote a replica).
# Together about 550 s of serial sanitizer time on a slow CI machine.
repeats='^net\.(slurm\..*|netns|ssh_launch\.runs|fault_drills\.worker_kill|chain_acks\.head_kills)$'
exclude=()
case "$mode" in
  --address) preset=asan-ubsan dir=build-asan labels='^(core|net)$' binaries=dasp exclude=(-E "$repeats") ;;
  --address-all) preset=asan-ubsan dir=build-asan labels='^(core|net)$' binaries=dasp ;;
  --core) preset=asan-ubsan dir=build-asan labels='^core$' binaries='' ;;
  --thread) preset=tsan dir=build-tsan labels='^server$' binaries='' ;;
  *) echo "usage: $0 [--address|--address-all|--core|--thread]" >&2; exit 2 ;;
esac
start=$(date +%s)
cmake --preset "$preset" -DDASP_BUILD_GUI=OFF >/dev/null
# The test executables of the labels' tests ("net.transports" is tst_net_transports; a
# unit run in parts, "net.fault_drills.server_kill", is still tst_net_fault_drills).
tests=$(ctest --test-dir "$dir" -N -L "$labels" "${exclude[@]}" | sed -nE 's/^ *Test +#[0-9]+: ([a-z]+)\.([a-z_]+).*$/tst_\1_\2/p' | sort -u)
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
ctest --preset "$preset" -L "$labels" "${exclude[@]}" || status=$?
echo "sanitizer tests ($preset): $(( $(date +%s) - built )) s"
exit $status
