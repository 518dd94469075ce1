#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ./run.sh             set up, build, open the workbench
# ./run.sh --headless  set up, build, run the default experiment with the CLI and print
#                      its summary; arguments after --headless go to the CLI.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$root/tools/setup.sh"
bin=${DASP_BUILD_DIR:-$root/build}/bin
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
if [ "${1:-}" = "--headless" ]; then
  shift
  exec "$bin/dasp" run "$root/experiments/default.json" "$@"
fi
exec "$bin/dasp-workbench" "$@"
