#!/usr/bin/env bash
# The whole test suite: unit tests and integration tests against a real naa-server (make check),
# the Slurm and MPI tests against a real single-node Slurm (make check-slurm; skipped where
# Slurm is not installed: ../shared/tools/slurm-local install), then the verbs suite on
# Soft-RoCE inside rdma-vm (skipped, loudly, where the VM cannot start).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
bash "$top/scripts/setup.sh"
cd "$build"

status=0
# make check ends with test/install/consumer.sh: make install into a temporary DESTDIR, build the examples with pkg-config.
make -j"$(nproc)" check || status=$?
make -j"$(nproc)" check-slurm || status=$?
bash "$top/scripts/test-rdma.sh" || status=$?

# One line over every test case (CMocka cases and test scripts), as "N passed, N failed, N skipped".
. "$top/scripts/results.sh"
count_results .
((status == 0)) || show_failures .
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
