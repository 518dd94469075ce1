#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/run-matrix.sh [--engine sim|real] [--real-grid] [--set NAME] [--seeds LIST]
#                     [--no-reference] [--only LABEL]... [--no-tables] [CASE...]
# Runs the DASP matrix (experiments/NAME/CASE.json, NAME = matrix by default, every case of
# the folder by default) with the homogeneous-equivalent reference, writes each suite's
# summary lines to results/NAME-ENGINE/CASE.jsonl, then regenerates every results table in
# README.md and docs/ from results/ (`dasp tables`). Real runs (--engine real) take each
# strategy's learning rate from the engine's results of the same case
# (results/NAME-sim/CASE.jsonl, --lr-from), so a real suite costs one rate per strategy,
# not the whole grid. --real-grid: real runs over the preset's whole lr_grid instead, into
# results/NAME-real/CASE-grid.jsonl, for a case where the engine's rates tie but real
# processes separate them (docs/EXPERIMENTS.md, flapping-6). --seeds overrides the presets'
# seeds (e.g. 1,2,3 for real runs).
# --no-reference: without the reference (a set of fault drills, e.g. stateless-ablation).
# --no-tables: leave the docs' tables alone (several matrices at once, each on a core of
# its own: the engine's runs are the same however busy the machine is; `dasp tables` after).
# --only LABEL (repeatable): re-run only the runs of these labels (and the reference), and
# replace just their lines in the results: after a change that only they see (every other
# strategy's runs are the same, bit for bit, and are kept). The new lines take the place of
# the old ones, so a table's columns keep their order.
# Needs a build (./run.sh or ./test.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${DASP_BUILD_DIR:-$root/build}/bin
engine=sim
set_name=matrix
seeds=()
reference=(--reference)
real_grid=0
only=()
tables=1
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --real-grid) real_grid=1; shift ;;
    --set) set_name=$2; shift 2 ;;
    --seeds) seeds=(--seeds "$2"); shift 2 ;;
    --no-reference) reference=(); shift ;;
    --only) only+=("$2"); shift 2 ;;
    --no-tables) tables=0; shift ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ -d "$root/experiments/$set_name" ] || { echo "run-matrix: no experiments/$set_name/" >&2; exit 2; }
if [ "$real_grid" = 1 ] && [ "$engine" != real ]; then echo "run-matrix: --real-grid needs --engine real" >&2; exit 2; fi
if [ ${#cases[@]} -eq 0 ]; then
  for f in "$root/experiments/$set_name"/*.json; do cases+=("$(basename "$f" .json)"); done
fi
out="$root/results/$set_name-$engine"
# merge_by_label OLD NEW: OLD's lines, with each label that NEW has replaced by NEW's lines
# of it, in OLD's order of labels (a label only NEW has goes last).
merge_by_label() {
  awk 'function label(line) { return match(line, /"label":"[^"]*"/) ? substr(line, RSTART + 9, RLENGTH - 10) : "" }
       FNR == NR { l = label($0); if (!(l in fresh)) order[++n] = l; fresh[l] = fresh[l] $0 "\n"; next }
       { l = label($0); if (!(l in seen)) { seen[l] = 1; olds[++m] = l }; if (!(l in fresh)) old[l] = old[l] $0 "\n" }
       END {
         for (i = 1; i <= m; ++i) { l = olds[i]; printf "%s", (l in fresh) ? fresh[l] : old[l]; done[l] = 1 }
         for (i = 1; i <= n; ++i) if (!(order[i] in done)) printf "%s", fresh[order[i]]
       }' "$2" "$1"
}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=${DASP_DB:-$work/matrix.sqlite}
# A copy of the binary, so a rebuild while the matrix runs cannot change it half-way.
cp "$bin/dasp" "$work/dasp"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
for c in "${cases[@]}"; do
  extra=()
  file=$c
  [ "$real_grid" = 0 ] || file=$c-grid
  if [ "$engine" = real ] && [ "$real_grid" = 0 ]; then
    tuned="$root/results/$set_name-sim/$c.jsonl"
    [ -f "$tuned" ] || { echo "run-matrix: $tuned is missing: run the engine case first" >&2; exit 2; }
    extra=(--lr-from "$tuned")
  fi
  echo "run-matrix: $c ($engine)" >&2
  start=$(date +%s)
  selected=()
  if [ ${#only[@]} -gt 0 ]; then
    [ -f "$out/$file.jsonl" ] || { echo "run-matrix: --only needs the earlier $out/$file.jsonl" >&2; exit 2; }
    for l in "${only[@]}"; do selected+=(--only "$l"); done
    [ ${#reference[@]} -eq 0 ] || selected+=(--only reference)
  fi
  "$work/dasp" run "$root/experiments/$set_name/$c.json" --engine "$engine" "${reference[@]}" --json --quiet \
    --db "$db" "${seeds[@]}" "${extra[@]}" "${selected[@]}" | grep '^{' > "$out/$file.jsonl.tmp"
  if [ ${#only[@]} -gt 0 ]; then
    merge_by_label "$out/$file.jsonl" "$out/$file.jsonl.tmp" > "$out/$file.jsonl.new"
    rm -f "$out/$file.jsonl.tmp"
    mv "$out/$file.jsonl.new" "$out/$file.jsonl"
  else
    mv "$out/$file.jsonl.tmp" "$out/$file.jsonl"
  fi
  echo "run-matrix: $c done in $(( $(date +%s) - start )) s" >&2
done
[ "$tables" -eq 0 ] || "$bin/dasp" tables --root "$root"
