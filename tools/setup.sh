#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set-up shared by ./run.sh and ./test.sh: installs the Debian 12 packages that are
# missing (apt-get; sudo only when not root), configures (Release, Ninja, ccache) and
# builds with -j2. apt-get from Debian's archive is the only download, ever.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DASP_BUILD_DIR:-$root/build}

packages=(
  build-essential cmake ninja-build pkg-config ccache git binutils
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libxkbcommon-dev
  libtorch-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev libssl-dev openssl
  libsqlite3-dev zlib1g-dev libcli11-dev
  dataset-fashion-mnist
  poppler-utils xvfb xauth imagemagick
  # The desktop entry and AppStream metainfo validators (the lint.desktop_files test).
  desktop-file-utils appstream
  # The ssh launcher (ssh), its test's own sshd (openssh-server: Debian's package may also
  # enable and start a system sshd, see README) and network namespaces (ip netns).
  openssh-client openssh-server iproute2
  # The Slurm launcher's test runs a throwaway two-node cluster (tools/slurm-test-cluster.sh).
  slurmctld slurmd slurm-client munge
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Ninja for a new build directory (it schedules the two jobs better than make and keeps
# .ninja_log, where the build's time per file is read); one made earlier keeps its generator.
generator=()
[ -f "$build/CMakeCache.txt" ] || generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${DASP_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j2
