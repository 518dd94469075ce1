#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build into a fresh prefix and starts the installed binaries: `dasp --help`,
# `dasp-workbench --help` (no display needed for --help), and checks the shared files.
# usage: check-install.sh BUILD_DIR PREFIX
set -eu
build=$1 prefix=$2
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/dasp" --help >/dev/null
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$prefix/bin/dasp-workbench" --help >/dev/null
"$prefix/bin/dasp-report" --help >/dev/null
for f in share/applications/io.github.dasp_workbench.DaspWorkbench.desktop \
         share/metainfo/io.github.dasp_workbench.DaspWorkbench.metainfo.xml \
         share/icons/hicolor/256x256/apps/dasp-workbench.png \
         share/icons/hicolor/scalable/apps/dasp-workbench.svg \
         share/dasp-workbench/experiments/default.json; do
  [ -f "$prefix/$f" ] || { echo "check-install: $f was not installed"; exit 1; }
done
echo "install: ok ($prefix)"
