#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The desktop entry and the AppStream metainfo pass their validators.
# usage: check-desktop-files.sh RESOURCES_DIR
set -u
dir=$1
status=0
for tool in desktop-file-validate appstreamcli; do
  command -v "$tool" >/dev/null || { echo "check-desktop-files: $tool is missing (tools/setup.sh installs it)"; exit 1; }
done
desktop-file-validate "$dir"/*.desktop || status=1
appstreamcli validate --no-net "$dir"/*.metainfo.xml || status=1
[ $status -eq 0 ] && echo "desktop files: ok"
exit $status
