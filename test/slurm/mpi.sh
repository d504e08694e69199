#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# MPI jobs offload: srun --mpi=pmix starts the ranks (NAA_SPEC from the plugin), and mpirun
# inside salloc starts them itself (no NAA_SPEC: libnaa asks Slurm and reads naa.conf).
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
[ -x "$NAA_EXAMPLES/mpi_offload" ] || skip "examples/mpi_offload not built (configure found no mpicc)"
command -v mpirun >/dev/null || skip "mpirun not installed (openmpi-bin)"
start_slurm "@HOST@ @PORT1@ 10:2
@HOST@ @PORT2@ 10:2"
out=$naa_test_dir/out

clean srun --mpi=pmix --naa=10 -n 2 "$NAA_EXAMPLES/mpi_offload" 100001 | tee "$out"
expect "$out" "NAA from $NAA_TEST_HOST:$NAA_PORT1:10:2\$"
expect "$out" "NAA from $NAA_TEST_HOST:$NAA_PORT2:10:2\$"
expect "$out" "2 ranks, sum of c over 100001 elements = .*: correct"

# --oversubscribe: the allocation's CPU count must not limit this test's two ranks.
clean salloc --naa=10 -n 2 mpirun --oversubscribe -n 2 "$NAA_EXAMPLES/mpi_offload" 100001 | tee "$out"
expect "$out" "NAA from Slurm job" 2
expect "$out" "2 ranks, sum of c over 100001 elements = .*: correct"
