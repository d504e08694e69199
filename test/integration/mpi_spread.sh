#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_SPEC spreads the ranks of an MPI job without Slurm: 16 ranks of mpirun, NAA_SPEC listing
# two naa-servers for the code, put 8 clients on each (each server's log counts them).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
[ -x "$NAA_EXAMPLES/mpi_offload" ] || { echo "SKIP: examples/mpi_offload not built (configure found no mpicc)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
# 16 sanitized ranks on 2 cores overrun the time limit; make check runs it unsanitized.
[ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || { echo "SKIP: 16 MPI ranks under a sanitizer (scripts/sanitize.sh) overrun the time limit on 2 cores"; exit 77; }
start_server --verbose 2>"$naa_test_dir/server1.log"; port1=$NAA_TEST_PORT
start_server --verbose 2>"$naa_test_dir/server2.log"; port2=$NAA_TEST_PORT
# Outside any Slurm job, whatever the caller's environment; mpirun refuses root without these.
# Over ofi+tcp: 16 ranks on 2 busy cores can take longer than auto's 3 s for an shm connection,
# and the server would then log the client twice (shm, then tcp).
rc=0
env -u SLURM_JOB_ID -u SLURM_PROCID -u SLURM_JOBID OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  NAA_TRANSPORT=ofi+tcp \
  NAA_SPEC="$NAA_TEST_HOST:$port1:10:2,$NAA_TEST_HOST:$port2:10:2" \
  timeout 120 mpirun --oversubscribe -n 16 "$NAA_EXAMPLES/mpi_offload" 100000 >"$naa_test_dir/out" || rc=$?
cat "$naa_test_dir/out"
[ $rc -eq 0 ] || { echo "FAIL: mpirun exited with status $rc" >&2; exit 1; }
grep -q "16 ranks, sum of c over 100000 elements = .*: correct" "$naa_test_dir/out"
on1=$(grep -c 'client .* connected' "$naa_test_dir/server1.log" || true)
on2=$(grep -c 'client .* connected' "$naa_test_dir/server2.log" || true)
echo "clients: server 1 $on1, server 2 $on2"
[ "$on1" -eq 8 ] && [ "$on2" -eq 8 ] ||
  { echo "FAIL: 16 ranks spread $on1 + $on2 over the two NAAs of NAA_SPEC, expected 8 + 8" >&2; exit 1; }
