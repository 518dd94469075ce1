#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-check.sh: the GPU check of issue 8. On a machine with an NVIDIA GPU and a
# CUDA-enabled LibTorch it builds the Qt-free parts (the `dasp` CLI: core, ml, net;
# -DDASP_BUILD_GUI=OFF) into build-gpu/ against that LibTorch and runs
#   1. `dasp info --json`                      (LibTorch, CUDA, the devices)
#   2. `ctest -L gpu`                          (tests/ml/gpu_checks.cpp: CUDA vs CPU)
#   3. `dasp bench train --models lenet,resnet8` on cuda:0 and on cpu   (samples/s)
#   4. a 4-worker heterogeneous `dasp run` with every worker on cuda:0
#      (experiments/hetero-4-gpu.json: slowdowns 1,1,2,4; BSP and DASP; time to 0.85)
#   5. `dasp train` lenet and resnet8: cuda:0 and cpu for the same 300 updates (accuracy
#      and samples/s side by side), and cuda:0 for 2 epochs
# within a hard 8-minute budget (every step has its own timeout, later steps are skipped
# when too little time is left), and writes every figure to ONE JSON file, whose path it
# prints (default build-gpu/gpu-check.json; the file is rewritten after every step, so it
# is complete up to the last step even if the script is killed).
#
# usage: tools/gpu-check.sh [--torch DIR] [--deps DIR] [--fetch] [--dataset DIR]
#                           [--build-dir DIR] [--out FILE] [--jobs N] [--budget S]
#                           [--cpu-only] [--use-prefix]
#        tools/gpu-check.sh --pack DIR
#
#   --torch DIR    the CUDA LibTorch: a LibTorch tree, its share/cmake, or a PyTorch
#                  installation's torch/ folder. Default: $TORCH_DIR, else the torch that
#                  `python3 -c 'import torch'` finds.
#   --deps DIR     what this machine lacks, gathered with --pack on a Debian 12 machine:
#                  DIR/debs/*.deb are unpacked (dpkg-deb -x, or ar + tar) into
#                  BUILD/prefix, nothing is installed system-wide; DIR/fashion-mnist/ is the
#                  data set.
#   --fetch        allow `apt-get download` (Debian 12 / bookworm package names) of the
#                  missing .debs into BUILD/debs, unpacked the same way. The ONLY network
#                  access this script ever makes, and only with this flag.
#   --dataset DIR  Fashion-MNIST (the four *-ubyte.gz files). Default:
#                  /usr/share/datasets/fashion-mnist, else DIR/fashion-mnist of --deps.
#   --cpu-only     the same steps on the CPU with the default LibTorch (Debian's), no GPU
#                  needed: proves the plumbing on a machine without one.
#   --use-prefix   use the --deps / --fetch prefix even where the system has the packages.
#   --pack DIR     (on a Debian 12 machine with these packages) copy the .debs from apt's
#                  cache, or apt-get download them, plus the Fashion-MNIST files, into DIR;
#                  carry DIR to the GPU machine and pass --deps DIR there. ~51 MB.
#
# Environment: TORCH_DIR (as --torch), DASP_BUILD_WRAPPER (a prefix for the configure
# and build commands, e.g. "flock /tmp/dasp-build.lock nice -n 5" on a shared machine),
# DASP_CMAKE_ARGS (more configure arguments, e.g. -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON to
# build the Qt-free gpu test runner where Qt 6 Test is installed).
#
# What the GPU machine needs itself: bash, coreutils (timeout), a C++17 compiler (g++ >=
# 9), make or ninja, cmake >= 3.25 (`python3 -m pip install cmake` gives one), the NVIDIA
# driver, and a CUDA LibTorch built with the C++11 ABI (PyTorch >= 2.7 wheels, or the
# libtorch-cxx11-abi zip): Debian's gRPC cannot link with the old ABI and the build stops
# saying so. With nvcc (a CUDA toolkit) the LibTorch's own CMake package is used
# (-DTorch_DIR); without one, -DDASP_TORCH_ROOT (our code needs no CUDA headers). Debian 12
# .debs need glibc >= 2.36 and libstdc++ from GCC >= 12 on the host (Debian 12, Ubuntu
# 23.04 or later).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all_args=("$@")
build=$root/build-gpu
out=""
torch_arg=${TORCH_DIR:-}
deps=""
fetch=0
dataset=""
cpu_only=0
use_prefix=0
pack=""
jobs=$(nproc 2>/dev/null || echo 4)
budget=470   # seconds; the issue's limit is 8 minutes (480 s)

die() { printf 'gpu-check: %s\n' "$*" >&2; exit 2; }
say() { printf 'gpu-check: %s\n' "$*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --torch) torch_arg=${2:?--torch needs a directory}; shift 2 ;;
    --deps) deps=$(cd "${2:?--deps needs a directory}" && pwd); shift 2 ;;
    --fetch) fetch=1; shift ;;
    --dataset) dataset=${2:?--dataset needs a directory}; shift 2 ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --cpu-only) cpu_only=1; shift ;;
    --use-prefix) use_prefix=1; shift ;;
    --pack) pack=${2:?--pack needs a directory}; shift 2 ;;
    -h|--help) sed -n '3,60p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

# The Debian 12 (bookworm) packages the Qt-free build needs beyond a compiler and cmake:
# gRPC, Protobuf, SQLite, zlib, OpenSSL and their libraries, and CLI11 (headers only).
# glibc, libstdc++ and the compiler's own packages are left out on purpose: they must be
# the host's.
debs=(libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
      protobuf-compiler libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32
      libabsl-dev libabsl20220623 libc-ares-dev libc-ares2 libre2-dev libre2-9
      libsqlite3-dev libsqlite3-0 libssl-dev libssl3 zlib1g-dev zlib1g libcli11-dev)
fmnist_files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
              t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

# --- --pack: gather the .debs and the data set on a Debian 12 machine -----------------------
if [ -n "$pack" ]; then
  mkdir -p "$pack/debs" "$pack/fashion-mnist"
  pack=$(cd "$pack" && pwd)
  for p in "${debs[@]}"; do
    v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
    cached=""
    if [ -n "$v" ]; then
      cached=$(find /var/cache/apt/archives -maxdepth 1 -name "${p}_${v//:/%3a}_*.deb" 2>/dev/null | head -n1 || true)
    fi
    if [ -n "$cached" ]; then
      cp "$cached" "$pack/debs/"
    else
      # The installed version, else the archive's current one (a superseded version is gone).
      say "pack: $p not in apt's cache; apt-get download $p${v:+=$v}"
      (cd "$pack/debs" && { apt-get download "$p${v:+=$v}" 2>/dev/null || apt-get download "$p"; }) ||
        die "pack: apt-get download $p failed"
    fi
  done
  src=${dataset:-/usr/share/datasets/fashion-mnist}
  for f in "${fmnist_files[@]}"; do
    [ -f "$src/$f" ] || die "pack: $src/$f missing (apt-get install dataset-fashion-mnist, or --dataset DIR)"
    cp "$src/$f" "$pack/fashion-mnist/"
  done
  say "pack: $(find "$pack/debs" -name '*.deb' | wc -l) .debs and Fashion-MNIST in $pack ($(du -sh "$pack" | cut -f1));"
  say "pack: on the GPU machine: tools/gpu-check.sh --deps $pack"
  exit 0
fi

# --- the hard budget: the whole script runs under timeout -----------------------------------
if [ -z "${DASP_GPU_CHECK_INNER:-}" ]; then
  export DASP_GPU_CHECK_INNER=1
  exec timeout -k 10 "$((budget + 5))" "$0" "${all_args[@]}"
fi

start=$(date +%s)
deadline=$((start + budget))
mkdir -p "$build/logs"
build=$(cd "$build" && pwd)
logs=$build/logs
out=${out:-$build/gpu-check.json}
mode=gpu
[ $cpu_only -eq 1 ] && mode=cpu-only
dev=cuda:0
[ $cpu_only -eq 1 ] && dev=cpu
wrapper=()
read -r -a wrapper <<<"${DASP_BUILD_WRAPPER:-}" || true
py=$(command -v python3 || true)

# --- JSON: one file, rewritten after every step ----------------------------------------------
json_str() {
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/}
  printf '"%s"' "$s"
}
declare -A facts=()      # top-level key -> JSON value
fact_keys=()
set_fact() { [ -n "${facts[$1]+x}" ] || fact_keys+=("$1"); facts[$1]=$2; }
declare -A step_json=()
step_names=()
error=""

write_json() {
  local tmp=$out.tmp k first=1
  {
    printf '{\n  "schema": "dasp-gpu-check/1",\n  "mode": %s,\n  "host": %s,\n' "$(json_str "$mode")" "$(json_str "$(hostname)")"
    printf '  "started": %s,\n  "seconds": %s,\n  "budget_s": %s,\n' "$(json_str "$(date -u -d "@$start" +%FT%TZ)")" "$(( $(date +%s) - start ))" "$budget"
    for k in "${fact_keys[@]}"; do printf '  %s: %s,\n' "$(json_str "$k")" "${facts[$k]}"; done
    printf '  "steps": {'
    for k in "${step_names[@]}"; do
      [ $first -eq 1 ] || printf ','
      first=0
      printf '\n    %s: %s' "$(json_str "$k")" "${step_json[$k]}"
    done
    printf '\n  },\n  "error": %s\n}\n' "$([ -n "$error" ] && json_str "$error" || echo null)"
  } >"$tmp"
  mv "$tmp" "$out"
}
fail_now() {  # records the reason, writes the JSON and stops
  error=$*
  say "$error"
  write_json
  say "figures: $out"
  exit 1
}
trap 'error=${error:-"stopped by a signal (the 8-minute budget?)"}; write_json; exit 124' TERM INT

# The JSON objects a command printed, one per line starting with '{': one -> itself,
# several -> an array, none -> null.
json_lines() {
  local n
  n=$(grep -c '^{' "$1" || true)
  if [ "$n" -eq 0 ]; then echo null
  elif [ "$n" -eq 1 ]; then grep '^{' "$1"
  else printf '['; grep '^{' "$1" | paste -sd, -; printf ']'; fi
}

# run_step NAME CAP_S MIN_S CMD...: runs CMD under timeout min(CAP_S, time left), or skips
# it when less than MIN_S is left; records status, seconds, exit code, log and JSON output.
reserve=10
run_step() {
  local name=$1 cap=$2 min=$3 rc status t0 t1 left limit
  shift 3
  # A longer --budget (a slow machine, a dry run) stretches every step's cap alike.
  [ "$budget" -le 470 ] || cap=$((cap * budget / 470))
  left=$((deadline - $(date +%s) - reserve))
  step_names+=("$name")
  if [ "$left" -lt "$min" ]; then
    say "$name: skipped (${left}s left of the budget, needs ${min}s)"
    step_json[$name]="{\"status\":\"skipped\",\"reason\":$(json_str "budget: ${left}s left, needs ${min}s")}"
    write_json
    return 1
  fi
  limit=$((cap < left ? cap : left))
  say "$name (up to ${limit}s): $*"
  t0=$(date +%s.%N)
  set +e
  timeout -k 5 "$limit" "$@" >"$logs/$name.out" 2>"$logs/$name.log"
  rc=$?
  set -e
  t1=$(date +%s.%N)
  case $rc in
    0) status=ok ;;
    124|137) status=timeout ;;
    *) status=failed ;;
  esac
  [ $status = ok ] || { say "$name: $status (exit $rc); last lines of $logs/$name.log:"; tail -n 15 "$logs/$name.log" >&2 || true; }
  step_json[$name]="{\"status\":\"$status\",\"exit_code\":$rc,\"seconds\":$(awk "BEGIN{printf \"%.1f\", $t1-$t0}"),\"limit_s\":$limit,\"log\":$(json_str "logs/$name.log"),\"result\":$(json_lines "$logs/$name.out")}"
  write_json
  return $rc
}

write_json
say "mode $mode, budget ${budget}s, build $build, figures $out"

# --- 1. the GPU ------------------------------------------------------------------------------
if [ $cpu_only -eq 0 ]; then
  command -v nvidia-smi >/dev/null || fail_now "no nvidia-smi: this machine has no NVIDIA driver (use --cpu-only to check the plumbing)"
  gpus=$(nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1) ||
    fail_now "nvidia-smi failed: $gpus"
  gpu_list=$(printf '%s\n' "$gpus" | while IFS=, read -r i n m d; do
    printf '{"index":%s,"name":%s,"memory":%s,"driver":%s}\n' "${i// /}" "$(json_str "${n# }")" "$(json_str "${m# }")" "$(json_str "${d# }")"
  done | paste -sd, -)
  set_fact gpus "[$gpu_list]"
  say "GPUs: $(printf '%s' "$gpus" | tr '\n' ';')"
fi

# --- 2. LibTorch -----------------------------------------------------------------------------
torch_root=""      # a tree with lib/libtorch.so and include/
torch_cmake=""     # the folder holding TorchConfig.cmake
torch_version="" torch_cuda="" torch_abi="" torch_source="" has_cuda=0
version_h=include/torch/csrc/api/include/torch/version.h
find_torch_tree() {  # sets torch_root / torch_cmake from any of the accepted forms of DIR
  local d=$1 cfg
  [ -d "$d" ] || fail_now "LibTorch: $d is not a directory"
  d=$(cd "$d" && pwd)
  cfg=$(find "$d" -maxdepth 4 -name TorchConfig.cmake 2>/dev/null | head -n1 || true)
  [ -n "$cfg" ] && torch_cmake=$(dirname "$cfg")
  for r in "$d" "$d/.." "$d/../.." "$d/../../.."; do
    if [ -f "$r/lib/libtorch.so" ] && [ -f "$r/$version_h" ]; then torch_root=$(cd "$r" && pwd); break; fi
  done
  [ -n "$torch_root" ] || fail_now "LibTorch: no lib/libtorch.so and $version_h at or above $d"
}
if [ -n "$torch_arg" ]; then
  torch_source=given
  find_torch_tree "$torch_arg"
elif [ $cpu_only -eq 0 ]; then
  [ -n "$py" ] || fail_now "no LibTorch: set TORCH_DIR (or --torch DIR), or install PyTorch for python3"
  torch_pkg=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>"$logs/torch-detect.log") ||
    fail_now "no LibTorch: python3 cannot import torch ($(tail -n1 "$logs/torch-detect.log")); set TORCH_DIR"
  torch_source=python3
  find_torch_tree "$torch_pkg"
  if [ -n "$py" ]; then
    read -r torch_version torch_cuda torch_abi < <("$py" -c 'import torch
print(torch.__version__, torch.version.cuda or "none", int(torch.compiled_with_cxx11_abi()))' 2>>"$logs/torch-detect.log") || true
  fi
else
  torch_source=default   # --cpu-only: what the default build finds (Debian's)
fi
if [ -n "$torch_root" ]; then
  [ -n "$torch_version" ] || torch_version=$(sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$torch_root/$version_h" | paste -sd. -)
  if [ -z "$torch_abi" ]; then
    # (grep -c, not -q: with pipefail an early exit of grep fails the pipeline.)
    if command -v nm >/dev/null; then
      cxx11=$(nm -D --defined-only "$torch_root/lib/libc10.so" 2>/dev/null | grep -c __cxx11 || true)
      if [ "${cxx11:-0}" -gt 0 ]; then torch_abi=1; else torch_abi=0; fi
    else
      torch_abi=unknown
    fi
  fi
  has_cuda=0
  [ -f "$torch_root/lib/libtorch_cuda.so" ] && has_cuda=1
  set_fact torch "{\"source\":$(json_str "$torch_source"),\"root\":$(json_str "$torch_root"),\"cmake_dir\":$(json_str "$torch_cmake"),\"version\":$(json_str "$torch_version"),\"cuda\":$(json_str "${torch_cuda:-$([ $has_cuda -eq 1 ] && echo yes || echo no)}"),\"cxx11_abi\":$(json_str "$torch_abi")}"
  [ "$torch_abi" = 0 ] && fail_now "LibTorch $torch_version at $torch_root uses the old C++ ABI (_GLIBCXX_USE_CXX11_ABI=0); Debian's gRPC needs the C++11 ABI. Use PyTorch >= 2.7 or the libtorch-cxx11-abi zip (README, GPUs)."
  [ $cpu_only -eq 1 ] || [ $has_cuda -eq 1 ] || fail_now "LibTorch $torch_version at $torch_root has no CUDA (no lib/libtorch_cuda.so)"
  say "LibTorch $torch_version (CUDA ${torch_cuda:-?}, C++11 ABI $torch_abi) at $torch_root"
else
  set_fact torch "{\"source\":\"default\"}"
fi
write_json

# --- 3. gRPC, Protobuf, SQLite, zlib, OpenSSL, CLI11: the system's, or Debian's unpacked privately ---
system_has_deps() {
  command -v protoc >/dev/null && command -v grpc_cpp_plugin >/dev/null &&
    { compgen -G '/usr/lib/*/cmake/grpc/gRPCConfig.cmake' >/dev/null ||
      [ -f /usr/lib/cmake/grpc/gRPCConfig.cmake ] || [ -f /usr/local/lib/cmake/grpc/gRPCConfig.cmake ]; } &&
    [ -f /usr/include/sqlite3.h ] && [ -f /usr/include/zlib.h ] && [ -f /usr/include/openssl/ssl.h ] &&
    [ -f /usr/include/CLI/CLI.hpp ]
}
unpack_debs() {  # unpack_debs DIR: every .deb in DIR into $prefix, without dpkg's database
  local f n=0 stamp
  # Unpacked already from the same .debs: keep it (fresh timestamps would rebuild everything).
  stamp=$(find "$1" -maxdepth 1 -name '*.deb' -printf '%s %f\n' | sort)
  if [ -f "$prefix/.debs" ] && [ "$(cat "$prefix/.debs")" = "$stamp" ]; then
    say "using $prefix (unpacked before from the same .debs)"
    return 0
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for f in "$1"/*.deb; do
    [ -f "$f" ] || continue
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$prefix"
    else  # a .deb is an ar archive holding data.tar.{xz,zst,gz}
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$f" && tar -xf data.tar.* -C "$prefix" && rm -rf "$tmp")
    fi
    n=$((n + 1))
  done
  [ $n -gt 0 ] || fail_now "no .deb files in $1"
  # Links to absolute paths (zlib1g-dev's libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13)
  # point at the host's files, or at nothing: point them inside the prefix.
  find "$prefix" -type l -lname '/*' | while read -r f; do
    ln -sfn "$prefix$(readlink "$f")" "$f"
  done
  printf '%s' "$stamp" >"$prefix/.debs"
  say "unpacked $n .debs into $prefix"
}
prefix=$build/prefix
deps_source=system
cmake_dep_args=()
if [ $use_prefix -eq 1 ] || ! system_has_deps; then
  if [ -n "$deps" ]; then
    [ -d "$deps/debs" ] || fail_now "--deps $deps: no debs/ folder (make it with --pack on a Debian 12 machine)"
    unpack_debs "$deps/debs"
    deps_source=bundle
  elif [ $fetch -eq 1 ] && command -v apt-get >/dev/null; then
    mkdir -p "$build/debs"
    say "apt-get download of ${#debs[@]} Debian packages into $build/debs (--fetch)"
    (cd "$build/debs" && apt-get download "${debs[@]}") >"$logs/apt-download.log" 2>&1 ||
      fail_now "apt-get download failed (see $logs/apt-download.log); make a bundle with --pack elsewhere"
    unpack_debs "$build/debs"
    deps_source=apt-download
  else
    fail_now "this machine lacks gRPC/Protobuf/SQLite/zlib/OpenSSL/CLI11 development files. Either run 'tools/gpu-check.sh --pack DIR' on a Debian 12 machine (copies ${#debs[@]} .debs and Fashion-MNIST, ~51 MB), carry DIR here and pass --deps DIR; or, with apt and network here, pass --fetch (apt-get download, unpacked into $prefix, nothing installed)"
  fi
  arch=x86_64-linux-gnu
  lib=$prefix/usr/lib/$arch
  # Debian's CMake packages compute their paths relative to themselves, so they work from
  # the private prefix; protoc, grpc_cpp_plugin and dasp find the libraries through
  # LD_LIBRARY_PATH (set for this script's children only).
  export LD_LIBRARY_PATH=$lib:$prefix/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$prefix/usr/bin:$PATH
  # Debian's gRPC package finds RE2 through pkg-config, whose re2.pc names /usr: a host
  # without Debian's libre2-dev (or without pkg-config) would not find the private one.
  # A CMake package file of our own, which gRPC's Findre2 looks for first, names it.
  mkdir -p "$build/re2-cmake"
  cat >"$build/re2-cmake/re2Config.cmake" <<RE2
if(NOT TARGET re2::re2)
  add_library(re2::re2 SHARED IMPORTED)
  set_target_properties(re2::re2 PROPERTIES IMPORTED_LOCATION "$lib/libre2.so"
                        INTERFACE_INCLUDE_DIRECTORIES "$prefix/usr/include")
endif()
RE2
  cmake_dep_args=(
    "-Dre2_DIR=$build/re2-cmake"
    "-DgRPC_DIR=$lib/cmake/grpc" "-Dabsl_DIR=$lib/cmake/absl"
    "-DProtobuf_INCLUDE_DIR=$prefix/usr/include" "-DProtobuf_LIBRARY=$lib/libprotobuf.so"
    "-DProtobuf_PROTOC_LIBRARY=$lib/libprotoc.so" "-DProtobuf_PROTOC_EXECUTABLE=$prefix/usr/bin/protoc"
    "-DSQLite3_INCLUDE_DIR=$prefix/usr/include" "-DSQLite3_LIBRARY=$lib/libsqlite3.so"
    "-DZLIB_INCLUDE_DIR=$prefix/usr/include" "-DZLIB_LIBRARY=$lib/libz.so"
    "-DOPENSSL_ROOT_DIR=$prefix/usr" "-DOPENSSL_INCLUDE_DIR=$prefix/usr/include"
    "-DOPENSSL_SSL_LIBRARY=$lib/libssl.so" "-DOPENSSL_CRYPTO_LIBRARY=$lib/libcrypto.so"
    "-DCLI11_DIR=$prefix/usr/share/cmake/CLI11"
    "-DCMAKE_LIBRARY_PATH=$lib" "-DCMAKE_INCLUDE_PATH=$prefix/usr/include")
fi
set_fact deps "{\"source\":$(json_str "$deps_source"),\"prefix\":$(json_str "$([ $deps_source = system ] || echo "$prefix")")}"

# The data set.
if [ -z "$dataset" ]; then
  for d in /usr/share/datasets/fashion-mnist ${deps:+"$deps/fashion-mnist"}; do
    [ -f "$d/train-images-idx3-ubyte.gz" ] && { dataset=$d; break; }
  done
fi
[ -n "$dataset" ] || fail_now "no Fashion-MNIST: pass --dataset DIR, or --deps DIR from --pack (which copies it)"
for f in "${fmnist_files[@]}"; do [ -f "$dataset/$f" ] || fail_now "Fashion-MNIST: $dataset/$f missing"; done
dataset=$(cd "$dataset" && pwd)
set_fact dataset "$(json_str "$dataset")"

# --- 4. configure and build ------------------------------------------------------------------
command -v cmake >/dev/null || fail_now "no cmake (>= 3.25 needed; python3 -m pip install cmake)"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# A generator change needs a fresh cache.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${gen[1]:-Unix Makefiles}" "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
extra_args=()
read -r -a extra_args <<<"${DASP_CMAKE_ARGS:-}" || true
# The host's default linker (DASP_LINKER empty), not gold: a GPU host's LibTorch was only
# ever linked with it.
base_args=(-S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDASP_BUILD_GUI=OFF -DBUILD_TESTING=ON -DDASP_LINKER=
           "${cmake_dep_args[@]}" "${extra_args[@]}")
[ $cpu_only -eq 1 ] || base_args+=(-DDASP_REQUIRE_CUDA=ON)
torch_mode=default
configure_with() {  # configure_with MODE: find_package (Torch_DIR) or root (DASP_TORCH_ROOT)
  local args=("${base_args[@]}")
  case $1 in
    find_package) args+=("-DTorch_DIR=$torch_cmake" -DDASP_TORCH_ROOT=) ;;
    root) args+=("-DDASP_TORCH_ROOT=$torch_root") ;;
    default) args+=(-DDASP_TORCH_ROOT=) ;;
  esac
  run_step "configure_$1" 180 20 "${wrapper[@]}" cmake "${args[@]}"
}
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$torch_root" ]; then
  configure_with default || fail_now "configure failed (see $logs/configure_default.log)"
elif [ -n "$torch_cmake" ] && { [ -n "$nvcc" ] || [ $has_cuda -eq 0 ]; }; then
  # The LibTorch's own CMake package (a CUDA one needs the CUDA toolkit, nvcc).
  if [ -n "$nvcc" ]; then
    export CUDACXX=$nvcc
    PATH=$(dirname "$nvcc"):$PATH
  fi
  if configure_with find_package; then torch_mode=find_package
  else
    say "the LibTorch's CMake package failed; trying -DDASP_TORCH_ROOT (no CUDA toolkit needed)"
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
    configure_with root || fail_now "configure failed both ways (see $logs/configure_*.log)"
    torch_mode=root
  fi
else
  [ -n "$torch_cmake" ] && say "no nvcc: using -DDASP_TORCH_ROOT=$torch_root instead of the LibTorch's CMake package"
  configure_with root || fail_now "configure failed (see $logs/configure_root.log)"
  torch_mode=root
fi
if ! run_step build 330 60 "${wrapper[@]}" cmake --build "$build" -j "$jobs" --target dasp tst_ml_gpu; then
  [ "$torch_mode" = find_package ] || fail_now "build failed (see $logs/build.log)"
  say "the build against the LibTorch's CMake package failed; trying -DDASP_TORCH_ROOT"
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  configure_with root || fail_now "configure with DASP_TORCH_ROOT failed too (see $logs/configure_root.log)"
  torch_mode=root
  run_step build_root 300 60 "${wrapper[@]}" cmake --build "$build" -j "$jobs" --target dasp tst_ml_gpu ||
    fail_now "build failed both ways (see $logs/build.log, $logs/build_root.log)"
fi
set_fact torch_cmake_mode "$(json_str "$torch_mode")"

dasp=$build/bin/dasp
[ -x "$dasp" ] || fail_now "no $dasp after the build"
export DASP_DB=$build/gpu-check.sqlite   # never the user's run store

# --- 5. the checks ---------------------------------------------------------------------------
run_step info 30 5 "$dasp" info --json || true
if [ $cpu_only -eq 0 ] && ! grep -q '"cuda_available":true' "$logs/info.out" 2>/dev/null; then
  fail_now "dasp was built against LibTorch $torch_version but reports no usable CUDA device (see $logs/info.out); if nvidia-smi works, the linker may have dropped libtorch_cuda.so, or the driver is older than the LibTorch's CUDA $torch_cuda"
fi

run_step tests_gpu 150 30 ctest --test-dir "$build" -L gpu -V --timeout 140 || true
# The checks' own tally (Qt Test or the plain runner) and any failure lines.
set_fact tests_gpu_totals "$(json_str "$(grep -o 'Totals: .*' "$logs/tests_gpu.out" 2>/dev/null | head -n1 || true)")"
set_fact tests_gpu_failures "$(json_str "$(grep -E 'FAIL!' "$logs/tests_gpu.out" 2>/dev/null | head -n 20 || true)")"
write_json

bench_args=(bench train --models "lenet,resnet8" --batch 64 --rounds 3 --seconds 0.5 --dataset-path "$dataset" --json)
run_step "bench_$( [ $cpu_only -eq 1 ] && echo cpu_as_gpu || echo cuda0 )" 90 25 "$dasp" "${bench_args[@]}" --device "$dev" || true
run_step bench_cpu 90 25 "$dasp" "${bench_args[@]}" --device cpu || true

spec=$build/hetero-4-gpu.json
if [ $cpu_only -eq 1 ]; then
  sed 's/"cuda:0"/"cpu"/g' "$root/experiments/hetero-4-gpu.json" >"$spec"
else
  cp "$root/experiments/hetero-4-gpu.json" "$spec"
fi
run_step hetero_run 130 60 "$dasp" run "$spec" --set "dataset.path=$dataset" --db "$DASP_DB" --json --quiet || true

train() {  # train NAME MODEL DEVICE CAP MIN ARGS...
  local name=$1 model=$2 device=$3 cap=$4 min=$5
  shift 5
  run_step "$name" "$cap" "$min" "$dasp" train --model "$model" --device "$device" --dataset-path "$dataset" \
    --set evaluation.every_steps=1000000000 --no-store --json --quiet "$@" || true
}
# The same 300 updates (same seed, same batches) on the GPU and on the CPU: the accuracies
# should agree and the samples/s differ; then the GPU for 2 whole epochs.
if [ $cpu_only -eq 0 ]; then
  for model in lenet resnet8; do
    train "train_${model}_cuda0_300" "$model" cuda:0 60 10 --epochs 2 --set stop.max_updates=300
  done
  for model in lenet resnet8; do
    train "train_${model}_cuda0_2epochs" "$model" cuda:0 90 20 --epochs 2
  done
fi
for model in lenet resnet8; do
  train "train_${model}_cpu_300" "$model" cpu 90 25 --epochs 2 --set stop.max_updates=300
done

# --- 6. the headline figures (python3, when there is one) ------------------------------------
write_json
if [ -n "$py" ]; then
  "$py" - "$out" <<'PY' 2>"$logs/figures.log" || say "figures summary failed (see $logs/figures.log); the steps are all in the JSON"
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
steps = doc["steps"]
def result(name):
    s = steps.get(name) or {}
    return s.get("result") if s.get("status") == "ok" else None
fig = {"bench_train": {}, "train": {}, "hetero_run": None, "tests_gpu": steps.get("tests_gpu", {}).get("status")}
gpu_bench = result("bench_cuda0") or result("bench_cpu_as_gpu")
cpu_bench = result("bench_cpu")
for case in (gpu_bench or {}).get("cases", []):
    row = {"device": case["device"], "samples_per_s": case["trainer_samples_per_s"],
           "plain_libtorch_samples_per_s": case["baseline_samples_per_s"]}
    for c in (cpu_bench or {}).get("cases", []):
        if c["model"] == case["model"]:
            row["cpu_samples_per_s"] = c["trainer_samples_per_s"]
            row["speedup_vs_cpu"] = case["trainer_samples_per_s"] / max(c["trainer_samples_per_s"], 1e-9)
    fig["bench_train"][case["model"]] = row
for name, s in steps.items():
    if name.startswith("train_") and s.get("status") == "ok" and isinstance(s.get("result"), dict):
        r = s["result"]
        fig["train"][name] = {k: r.get(k) for k in ("model", "device", "steps", "samples_per_s", "final_accuracy", "epochs", "seconds")}
for model in ("lenet", "resnet8"):
    g = fig["train"].get("train_%s_cuda0_300" % model)
    c = fig["train"].get("train_%s_cpu_300" % model)
    if g and c:
        fig["train_%s_gpu_vs_cpu_300_updates" % model] = {
            "accuracy_gpu": g["final_accuracy"], "accuracy_cpu": c["final_accuracy"],
            "samples_per_s_gpu": g["samples_per_s"], "samples_per_s_cpu": c["samples_per_s"],
            "speedup": g["samples_per_s"] / max(c["samples_per_s"], 1e-9)}
runs = result("hetero_run")
if runs is not None:
    runs = runs if isinstance(runs, list) else [runs]
    fig["hetero_run"] = [{k: r.get(k) for k in ("strategy", "time_to_target_s", "final_accuracy", "updates", "seconds", "stop_reason")} for r in runs]
    t = {r.get("strategy"): r.get("time_to_target_s") for r in runs}
    if t.get("bsp") and t.get("dasp"):
        fig["hetero_speedup_dasp_vs_bsp"] = t["bsp"] / t["dasp"]
doc["figures"] = fig
json.dump(doc, open(path + ".tmp", "w"), indent=2)
import os
os.replace(path + ".tmp", path)
PY
fi
say "done in $(( $(date +%s) - start ))s; figures: $out"
echo "$out"
