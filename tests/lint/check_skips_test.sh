#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lint.skip_check: tools/check-skips.sh on made-up ctest logs. Tagged GPU skips pass
# everywhere; an untagged skip is listed and named, passes without DASP_FAIL_ON_SKIP and
# fails with DASP_FAIL_ON_SKIP=1; a tag that is not in the allowed list, or one written
# inside the reason rather than at its start, is not an allowed skip.
set -u
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "lint.skip_check: $*"; exit 1; }

cat > "$dir/allowed.log" <<'LOG'
PASS   : TestGpu::deviceErrorsAreClear()
SKIP   : TestGpu::gradientsMatchCpu(mlp) [allowed-skip:no-gpu] no GPU: this build uses a CPU-only LibTorch
   Loc: [/src/tests/ml/tst_gpu.cpp(31)]
SKIP   : TestModel::cudaDeviceOnCpuBuild() [allowed-skip:has-gpu] CUDA is available
Totals: 1 passed, 0 failed, 2 skipped, 0 blacklisted, 3ms
LOG
cp "$dir/allowed.log" "$dir/mixed.log"
cat >> "$dir/mixed.log" <<'LOG'
SKIP   : TestNetns::partition(two hosts) cannot create a network namespace: Operation not permitted
SKIP   : TestOther::invented() [allowed-skip:no-network] a tag nobody allowed
SKIP   : TestOther::late() a reason that mentions [allowed-skip:no-gpu] later on
LOG
printf 'PASS   : TestA::a()\n' > "$dir/none.log"

out=$(DASP_FAIL_ON_SKIP=1 "$check" "$dir/allowed.log") || fail "tagged GPU skips failed: $out"
grep -q "skipped test functions (2)" <<< "$out" || fail "count of 2 skips not printed: $out"
out=$(DASP_FAIL_ON_SKIP=1 "$check" "$dir/none.log") || fail "a log without skips failed: $out"
grep -q "skipped test functions: none" <<< "$out" || fail "no 'none' line: $out"
out=$(env -u DASP_FAIL_ON_SKIP "$check" "$dir/mixed.log") || fail "untagged skips failed without DASP_FAIL_ON_SKIP: $out"
grep -q "skipped test functions (5)" <<< "$out" || fail "count of 5 skips not printed: $out"
grep -q "skips CI fails on (3" <<< "$out" || fail "the 3 untagged skips were not counted: $out"
if out=$(DASP_FAIL_ON_SKIP=1 "$check" "$dir/mixed.log"); then fail "untagged skips passed under DASP_FAIL_ON_SKIP=1: $out"; fi
for name in "TestNetns::partition(two hosts)" "TestOther::invented()" "TestOther::late()"; do
  grep -qF "  $name" <<< "$(sed -n '/^FAILED/,$p' <<< "$out")" || fail "$name not named among the failures: $out"
done
grep -qF "TestGpu::gradientsMatchCpu" <<< "$(sed -n '/^FAILED/,$p' <<< "$out")" && fail "an allowed skip was named a failure: $out"
echo "lint.skip_check: ok"
