#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The validation of `dasp predict` where transfer time matters (issue 34, docs/SIMULATOR.md
# "Predicting from a measured run"): hetero-4 as real processes on three network-namespace
# hosts, workers 1 and 3 behind a link the kernel shapes to RATE each way (tc tbf; this
# machine's kernel has no netem) — experiments/predict-netns/hetero-4-shaped.json.
#  1. builds the namespaces and the bridge (root and iproute2; all removed at the end);
#  2. runs the case's suite for real, 3 seeds, each strategy at its rate in the engine's
#     hetero-4 results (results/matrix-sim/hetero-4.jsonl), into
#     results/predict-real/hetero-4-shaped.real.jsonl;
#  3. predicts it from each seed's real BSP run alone (tools/validate-predict.sh --spec
#     --real): results/predict-real/hetero-4-shaped.{measured,predicted}.jsonl.
#   sudo tools/validate-predict-netns.sh        (RATE=200mbit by default)
#   sudo KEEP_REAL=1 tools/validate-predict-netns.sh
#                                               (step 3 only, against the committed real runs)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${DASP_BIN:-$root/build/bin/dasp}
rate=${RATE:-200mbit}
name=hetero-4-shaped
spec=$root/experiments/predict-netns/$name.json
real=$root/results/predict-real/$name.real.jsonl
[ -x "$bin" ] || { echo "validate-predict-netns: $bin is not built" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "validate-predict-netns: network namespaces need root" >&2; exit 2; }
command -v ip > /dev/null && command -v tc > /dev/null ||
  { echo "validate-predict-netns: needs iproute2 (ip and tc)" >&2; exit 2; }

# The spec's hosts: s 10.78.0.10 (server, evaluator), a .11, b .12 (behind the shaped link).
teardown() {
  for h in s a b; do ip netns del "dvp-$h" 2> /dev/null || true; done
  ip link del dvp-br0 2> /dev/null || true
}
work=$(mktemp -d)
trap 'teardown; rm -rf "$work"' EXIT
teardown
ip link add dvp-br0 type bridge
ip addr add 10.78.0.1/24 dev dvp-br0
ip link set dvp-br0 up
address=10
for h in s a b; do
  ip netns add "dvp-$h"
  ip link add "dvp-v$h" type veth peer name eth0 netns "dvp-$h"
  ip link set "dvp-v$h" master dvp-br0 up
  ip -n "dvp-$h" addr add "10.78.0.$address/24" dev eth0
  ip -n "dvp-$h" link set eth0 up
  ip -n "dvp-$h" link set lo up
  address=$((address + 1))
done
# Host b's link, both ways: out of b (its eth0) and into b (the bridge's end of its veth).
burst=250000  # bytes: 10 ms at 200 Mbit/s
tc qdisc add dev dvp-vb root tbf rate "$rate" burst "$burst" latency 400ms
ip netns exec dvp-b tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 400ms
echo "validate-predict-netns: hosts up, b's link $rate each way" >&2

mkdir -p "$(dirname "$real")"
cp "$bin" "$work/dasp"
if [ -z "${KEEP_REAL:-}" ]; then
  "$work/dasp" run "$spec" --lr-from "$root/results/matrix-sim/hetero-4.jsonl" --db "$work/real.sqlite" --json --quiet |
    grep '^{' > "$real.tmp"
  mv "$real.tmp" "$real"
fi
DASP_BIN="$work/dasp" "$root/tools/validate-predict.sh" --spec "$spec" --real "$real" "$name"
