#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make check-code (make check less the tests that read files only: source_tests in
# Makefile.am) and the verbs suite on a busy machine: NAA_LOAD_HOGS (default 2) busy loops occupy
# the cores while the suites run, as on a shared login node or build host, and any failure fails
# the run. The verbs suite (scripts/test-rdma.sh: Soft-RoCE in rdma-vm, whose emulated CPUs then
# compete with the loops too) runs unless NAA_LOAD_VERBS=0, only its entries whose names match
# NAA_LOAD_VERBS_TESTS where that is set (an extended regular expression, as NAA_VERBS_TESTS);
# where its VM cannot start it says SKIPPED, as in scripts/test.sh. The
# loops are this script's children and are stopped however it ends. Tests force what they
# prove rather than race for it, so the load changes no verdict; NAA_TEST_TIME_SCALE (default
# 2 here) stretches their deadlines and time limits, as for the sanitizers, because every
# process gets a fraction of a core. Usage: scripts/load-check.sh [make arguments...]
# (the build in $NAA_BUILD_DIR, default _build, configured by scripts/setup.sh). The verbs
# suite's results replace those of an earlier run in $NAA_BUILD_DIR/test-rdma.
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
echo "load-check: $hogs busy loops (pids ${pids[*]}) beside make check-code, NAA_TEST_TIME_SCALE=${NAA_TEST_TIME_SCALE:-2}"
status=0
export NAA_TEST_TIME_SCALE=${NAA_TEST_TIME_SCALE:-2}
make -C "$build" -j"$((2 * $(nproc)))" check-code "$@" || status=$?  # as scripts/test.sh: they mostly wait
echo "load-check: make check-code under load $([[ $status == 0 ]] && echo passed || echo FAILED)"
if [[ ${NAA_LOAD_VERBS:-1} != 0 ]]; then
  verbs=0
  NAA_BUILD_DIR=$build NAA_VERBS_TESTS=${NAA_LOAD_VERBS_TESTS:-${NAA_VERBS_TESTS:-}} \
    bash "$top/scripts/test-rdma.sh" || verbs=$?
  results=$build/test-rdma
  count() { grep -l ":test-result: $1" "$results"/*.trs 2> /dev/null | wc -l; }
  if [[ $(count SKIP) != 0 && $(count PASS) == 0 ]]; then
    echo "load-check: verbs suite under load SKIPPED: $(head -n 1 "$results/rdma-vm.log")"
  else
    [[ $(count FAIL) == 0 && $(count ERROR) == 0 ]] || verbs=1
    echo "load-check: verbs suite under load $([[ $verbs == 0 ]] && echo passed || echo FAILED):" \
      "$(count PASS) passed, $(count FAIL) failed"
    grep -l ':test-result: FAIL' "$results"/*.trs 2> /dev/null | sed 's/^/load-check: FAILED: /' ||
      true  # no failed test: grep's status 1 must not end the script (set -e, pipefail)
  fi
  ((verbs == 0)) || status=1
fi
stop_hogs
exit $status
