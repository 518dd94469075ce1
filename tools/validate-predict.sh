#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The validation of `dasp predict` (issue 34, docs/SIMULATOR.md "Predicting from a measured
# run"): for each matrix case with real results (results/matrix-real/CASE.jsonl), the real
# BSP run of each seed (at the rate the real matrix ran BSP at) is measured with
# `dasp profile`, and the case's whole suite is run on the engine on that measured cluster
# alone, each strategy at the rate of its real runs (--lr-from). Writes
# results/predict-real/CASE.measured.jsonl (the real BSP runs) and CASE.predicted.jsonl
# (every prediction, one line per run, with the measured run in its spec name).
#   tools/validate-predict.sh [CASE...]     (default: every case in results/matrix-real/)
#   tools/validate-predict.sh --spec SPEC.json --real REAL.jsonl NAME
#                                           (one case of another set: its spec and real runs)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${DASP_BIN:-$root/build/bin/dasp}
[ -x "$bin" ] || { echo "validate-predict: $bin is not built" >&2; exit 2; }
spec_of='' real_of=''
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --spec) spec_of=$2; shift 2 ;;
    --real) real_of=$2; shift 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
if [ ${#cases[@]} -eq 0 ]; then
  for f in "$root"/results/matrix-real/*.jsonl; do cases+=("$(basename "$f" .jsonl)"); done
fi
out="$root/results/predict-real"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/dasp"
for c in "${cases[@]}"; do
  spec_file=${spec_of:-$root/experiments/matrix/$c.json}
  real_file=${real_of:-$root/results/matrix-real/$c.jsonl}
  echo "validate-predict: $c" >&2
  # The case's spec with BSP only, at the real runs' BSP rate, seeds 1-3; its suite apart.
  python3 - "$spec_file" "$real_file" "$work/$c" <<'PY'
import json, sys
spec_file, real_file, prefix = sys.argv[1:]
spec = json.load(open(spec_file))
lr = next(json.loads(l)["lr"] for l in open(real_file) if json.loads(l)["label"] == "bsp")
json.dump(spec.pop("suite"), open(f"{prefix}.suite.json", "w"))
for key in ("lr_grid", "with_reference"): spec.pop(key, None)
spec["strategy"] = {**spec.get("strategy", {}), "name": "bsp"}
spec.setdefault("optimizer", {})["lr"] = lr
spec["seeds"] = [1, 2, 3]
json.dump(spec, open(f"{prefix}.bsp.json", "w"))
PY
  "$work/dasp" run "$work/$c.bsp.json" --engine real --db "$work/$c.sqlite" --json --quiet | grep '^{' > "$out/$c.measured.jsonl.tmp"
  : > "$out/$c.predicted.jsonl.tmp"
  for id in $(python3 -c "import json,sys; [print(json.loads(l)['run_id']) for l in open(sys.argv[1])]" "$out/$c.measured.jsonl.tmp"); do
    "$work/dasp" profile "$id" --db "$work/$c.sqlite" --spec-out "$work/$c.m$id.json" >&2
    python3 - "$work/$c.m$id.json" "$work/$c.suite.json" <<'PY'
import json, sys
path, suite = sys.argv[1:]
spec = json.load(open(path))
spec["suite"] = json.load(open(suite))
spec["seeds"] = [spec.get("seed", 1)]
json.dump(spec, open(path, "w"))
PY
    "$work/dasp" run "$work/$c.m$id.json" --db "$work/$c.sqlite" --lr-from "$real_file" --json \
      --quiet | grep '^{' >> "$out/$c.predicted.jsonl.tmp"
  done
  mv "$out/$c.measured.jsonl.tmp" "$out/$c.measured.jsonl"
  mv "$out/$c.predicted.jsonl.tmp" "$out/$c.predicted.jsonl"
done
