#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the layering rules of docs/ARCHITECTURE.md on the sources and on the binaries:
# core/, ml/ and net/ include no Qt; core/ includes no LibTorch or gRPC; only ml/
# includes LibTorch; `dasp` links no Qt 6; `dasp-workbench` links no LibTorch.
# usage: check-layers.sh SOURCE_DIR DASP_BIN WORKBENCH_BIN
set -u
src=$1 dasp=$2 workbench=$3
status=0
complain() { echo "layering: $*"; status=1; }

qt=$(grep -rlE '#\s*include\s*[<"]Q[A-Za-z]+|#\s*include\s*[<"]Qt' "$src/core" "$src/ml" "$src/net" --include='*.h' --include='*.cpp' || true)
[ -z "$qt" ] || complain "Qt headers included under core/, ml/ or net/: $qt"
torch=$(grep -rlE '#\s*include\s*[<"](torch|ATen|c10)/' "$src" --include='*.h' --include='*.cpp' \
          --exclude-dir=build --exclude-dir='build-*' --exclude-dir=.git | grep -v "^$src/ml/" || true)
[ -z "$torch" ] || complain "LibTorch included outside ml/: $torch"
grpc=$(grep -rlE '#\s*include\s*[<"]grpc' "$src/core" --include='*.h' --include='*.cpp' || true)
[ -z "$grpc" ] || complain "gRPC included under core/: $grpc"
if readelf -d "$dasp" | grep -E 'NEEDED.*libQt6' ; then complain "$dasp links Qt 6"; fi
if readelf -d "$workbench" | grep -E 'NEEDED.*(libtorch|libc10)' ; then complain "$workbench links LibTorch"; fi
[ $status -eq 0 ] && echo "layering: ok (sources, $(basename "$dasp"), $(basename "$workbench"))"
exit $status
