#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/run-matrix.sh [--engine sim|real] [--set NAME] [--seeds LIST] [--no-reference]
#                     [--only LABEL]... [--no-tables] [CASE...]
# Runs the DASP matrix (experiments/NAME/CASE.json, NAME = matrix by default, every case of
# the folder by default) with the homogeneous-equivalent reference, writes each suite's
# summary lines to results/NAME-ENGINE/CASE.jsonl, then regenerates every results table in
# README.md and docs/ from results/ (`dasp tables`). Real runs (--engine real) take each
# strategy's learning rate from the engine's results of the same case
# (results/NAME-sim/CASE.jsonl, --lr-from), so a real suite costs one rate per strategy,
# not the whole grid. --seeds overrides the presets' seeds (e.g. 1,2,3 for real runs).
# --no-reference: without the reference (a set of fault drills, e.g. stateless-ablation).
# --no-tables: leave the docs' tables alone (several matrices at once, each on a core of
# its own: the engine's runs are the same however busy the machine is; `dasp tables` after).
# --only LABEL (repeatable): re-run only the runs of these labels (and the reference), and
# replace just their lines in the results: after a change that only they see (every other
# strategy's runs are the same, bit for bit, and are kept). The new lines go after the kept
# ones, and a table's columns follow the lines' order.
# Needs a build (./run.sh or ./test.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${DASP_BUILD_DIR:-$root/build}/bin
engine=sim
set_name=matrix
seeds=()
reference=(--reference)
only=()
tables=1
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --set) set_name=$2; shift 2 ;;
    --seeds) seeds=(--seeds "$2"); shift 2 ;;
    --no-reference) reference=(); shift ;;
    --only) only+=("$2"); shift 2 ;;
    --no-tables) tables=0; shift ;;
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
  selected=()
  if [ ${#only[@]} -gt 0 ]; then
    [ -f "$out/$c.jsonl" ] || { echo "run-matrix: --only needs the earlier $out/$c.jsonl" >&2; exit 2; }
    for l in "${only[@]}"; do selected+=(--only "$l"); done
    [ ${#reference[@]} -eq 0 ] || selected+=(--only reference)
    # The earlier lines of every other label, in their order.
    patterns=()
    for l in "${only[@]}" ${reference:+reference}; do patterns+=(-e "\"label\":\"$l\""); done
    grep -v -F "${patterns[@]}" "$out/$c.jsonl" > "$out/$c.jsonl.kept" || true
  fi
  "$work/dasp" run "$root/experiments/$set_name/$c.json" --engine "$engine" "${reference[@]}" --json --quiet \
    --db "$db" "${seeds[@]}" "${extra[@]}" "${selected[@]}" | grep '^{' > "$out/$c.jsonl.tmp"
  if [ ${#only[@]} -gt 0 ]; then
    cat "$out/$c.jsonl.kept" "$out/$c.jsonl.tmp" > "$out/$c.jsonl.new"
    rm -f "$out/$c.jsonl.kept" "$out/$c.jsonl.tmp"
    mv "$out/$c.jsonl.new" "$out/$c.jsonl"
  else
    mv "$out/$c.jsonl.tmp" "$out/$c.jsonl"
  fi
  echo "run-matrix: $c done in $(( $(date +%s) - start )) s" >&2
done
[ "$tables" -eq 0 ] || "$bin/dasp" tables --root "$root"
