#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make check on a busy machine: NAA_LOAD_HOGS (default 2) busy loops occupy the cores while the
# suite runs, as on a shared login node or build host, and any failure fails the run. The
# loops are this script's children and are stopped however it ends. Tests force what they
# prove rather than race for it, so the load changes no verdict; NAA_TEST_TIME_SCALE (default
# 2 here) stretches their deadlines and time limits, as for the sanitizers, because every
# process gets a fraction of a core. Usage: scripts/load-check.sh [make check arguments...]
# (the build in $NAA_BUILD_DIR, default _build, configured by scripts/setup.sh).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
hogs=${NAA_LOAD_HOGS:-2}
[[ -f $build/Makefile ]] || { echo "load-check: no build in $build (run scripts/setup.sh)" >&2; exit 2; }

pids=()
stop_hogs() {
  ((${#pids[@]})) || return 0
  kill "${pids[@]}" 2> /dev/null || true
  wait "${pids[@]}" 2> /dev/null || true
  pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < hogs; i++)); do
  (while :; do :; done) &
  pids+=($!)
done
echo "load-check: $hogs busy loops (pids ${pids[*]}) beside make check, NAA_TEST_TIME_SCALE=${NAA_TEST_TIME_SCALE:-2}"
status=0
NAA_TEST_TIME_SCALE=${NAA_TEST_TIME_SCALE:-2} make -C "$build" -j"$(nproc)" check "$@" || status=$?
stop_hogs
echo "load-check: make check under load $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
