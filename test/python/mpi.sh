#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/mpi_offload.py under mpirun -np 4 (Open MPI, on this host): every rank offloads its
# share to one naa-server, rank 0 gathers and checks. Skipped (77) without the Python package,
# mpi4py, NumPy or mpirun.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
. "$NAA_SRCDIR/test/python/lib.sh"
python_site numpy mpi4py
command -v mpirun >/dev/null 2>&1 || python_skip "mpirun is not installed (Debian: openmpi-bin)"
start_server
# Open MPI refuses root without these; --oversubscribe: 4 ranks on fewer cores.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60
export NAA_SPEC NAA_TIMEOUT
rc=0
mpirun -np 4 --oversubscribe -x NAA_SPEC -x NAA_TIMEOUT -x PYTHONPATH -x LD_LIBRARY_PATH \
  -x PYTHONDONTWRITEBYTECODE "$python" "$NAA_SRCDIR/examples/mpi_offload.py" 100003 \
  >"$naa_test_dir/out" 2>&1 || rc=$?
cat "$naa_test_dir/out"
[ $rc -eq 0 ] || { echo "mpirun exited with status $rc" >&2; exit 1; }
grep -q "rank 0 gathered all 100003 elements from 4 ranks: all correct" "$naa_test_dir/out"
