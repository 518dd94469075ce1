#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/run-matrix.sh [--engine sim|real] [--set NAME] [--seeds LIST] [--no-reference] [CASE...]
# Runs the DASP matrix (experiments/NAME/CASE.json, NAME = matrix by default, every case of
# the folder by default) with the homogeneous-equivalent reference, writes each suite's
# summary lines to results/NAME-ENGINE/CASE.jsonl, then regenerates every results table in
# README.md and docs/ from results/ (`dasp tables`). Real runs (--engine real) take each
# strategy's learning rate from the engine's results of the same case
# (results/NAME-sim/CASE.jsonl, --lr-from), so a real suite costs one rate per strategy,
# not the whole grid. --seeds overrides the presets' seeds (e.g. 1,2,3 for real runs).
# --no-reference: without the reference (a set of fault drills, e.g. stateless-ablation).
# Needs a build (./run.sh or ./test.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${DASP_BUILD_DIR:-$root/build}/bin
engine=sim
set_name=matrix
seeds=()
reference=(--reference)
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --set) set_name=$2; shift 2 ;;
    --seeds) seeds=(--seeds "$2"); shift 2 ;;
    --no-reference) reference=(); shift ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ -d "$root/experiments/$set_name" ] || { echo "run-matrix: no experiments/$set_name/" >&2; exit 2; }
if [ ${#cases[@]} -eq 0 ]; then
  for f in "$root/experiments/$set_name"/*.json; do cases+=("$(basename "$f" .json)"); done
fi
out="$root/results/$set_name-$engine"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=${DASP_DB:-$work/matrix.sqlite}
# A copy of the binary, so a rebuild while the matrix runs cannot change it half-way.
cp "$bin/dasp" "$work/dasp"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
for c in "${cases[@]}"; do
  extra=()
  if [ "$engine" = real ]; then
    tuned="$root/results/$set_name-sim/$c.jsonl"
    [ -f "$tuned" ] || { echo "run-matrix: $tuned is missing: run the engine case first" >&2; exit 2; }
    extra=(--lr-from "$tuned")
  fi
  echo "run-matrix: $c ($engine)" >&2
  start=$(date +%s)
  "$work/dasp" run "$root/experiments/$set_name/$c.json" --engine "$engine" "${reference[@]}" --json --quiet \
    --db "$db" "${seeds[@]}" "${extra[@]}" | grep '^{' > "$out/$c.jsonl.tmp"
  mv "$out/$c.jsonl.tmp" "$out/$c.jsonl"
  echo "run-matrix: $c done in $(( $(date +%s) - start )) s" >&2
done
"$bin/dasp" tables --root "$root"
