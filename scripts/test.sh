#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite: unit tests and integration tests against a real naa-server (make check),
# the Slurm and MPI tests against a real single-node Slurm (make check-slurm, with Slurm, munge,
# PMIx and Open MPI installed first by test/harness/slurm-local install), then the verbs suite on
# Soft-RoCE inside test/harness/rdma-vm (scripts/test-rdma.sh). A suite that cannot run says so
# loudly and is counted as skipped; the closing line says which suites ran and how long each took.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
. "$top/scripts/stage.sh"
. "$top/scripts/results.sh"

loud() {
  echo "**********************************************************************" >&2
  printf 'test: %s\n' "$@" >&2
  echo "**********************************************************************" >&2
}

# Slurm before configure: configure builds the SPANK plugin only where it finds slurm/spank.h.
slurm_was_there=0
command -v slurmctld > /dev/null && slurm_was_there=1
stage slurm-install "$top/test/harness/slurm-local" install ||
  loud "cannot install Slurm (test/harness/slurm-local install failed; needs root or sudo):" \
       "the Slurm and MPI tests will be SKIPPED"
if ((!slurm_was_there)) && command -v slurmctld > /dev/null; then
  rm -f "$build/config.status"  # configure again, now with Slurm
fi
stage setup bash "$top/scripts/setup.sh"
cd "$build"

status=0
# make check ends with test/install/consumer.sh: make install into a temporary DESTDIR, build the examples with pkg-config.
t0=$SECONDS
# Twice as many tests as CPUs at once: most of them wait for a server, a timeout or a sleeping
# thread far more than they compute (test_hostile: 119 s, 38 s of CPU), so -j$(nproc) left
# the cores half idle. make check under load (scripts/load-check.sh) does the same.
stage check make -j"$((2 * $(nproc)))" check || status=$?
check_s=$stage_seconds
stage check-slurm make -j"$(nproc)" check-slurm || status=$?
slurm_s=$stage_seconds
stage verbs bash "$top/scripts/test-rdma.sh" || status=$?
verbs_s=$stage_seconds

# suite NAME DIR: "NAME: N passed" for a suite that ran, "NAME: SKIPPED" where nothing in it ran.
suite() {
  passed=0 failed=0 skipped=0
  count_results "$2"
  if ((failed)); then echo "$1: $failed FAILED, $passed passed"
  elif ((passed == 0)); then echo "$1: SKIPPED (not run)"
  else echo "$1: run, $passed passed$( ((skipped)) && echo ", $skipped skipped")"; fi
}
slurm_line="$(suite "Slurm/MPI suite" test/slurm) in $slurm_s s"
verbs_line="$(suite "verbs suite" test-rdma) in $verbs_s s"
[[ $slurm_line == *SKIPPED* ]] && loud "the Slurm/MPI suite did not run (see the SKIP lines above)"
[[ $verbs_line == *SKIPPED* ]] && loud "the verbs suite did not run (see the SKIPPED line above)"

# One line over every test case (CMocka cases and test scripts), as "N passed, N failed, N skipped".
passed=0 failed=0 skipped=0
count_results .
((status == 0)) || show_failures .
echo "tests: $passed passed, $failed failed, $skipped skipped (make check in $check_s s); $slurm_line;" \
  "$verbs_line; $((SECONDS - t0)) s in all"
exit $status
