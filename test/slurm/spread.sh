#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A whole job on two NAAs: 16 ranks under mpirun inside salloc (no NAA_SPEC: libnaa's Slurm
# resolver) and under srun --mpi=pmix (NAA_SPEC from the plugin), with --naa and with only an
# naa licence (libnaa's Slurm resolver, PMIx sharing the job's licences per node), each put 8
# clients on each naa-server, and slurmctld serves at most one job-info RPC for the job's single
# node (sdiag's REQUEST_JOB_INFO_SINGLE count, printed before and after). naa-info --job shows
# the same table.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
[ -x "$NAA_EXAMPLES/mpi_offload" ] || skip "examples/mpi_offload not built (configure found no mpicc)"
command -v mpirun >/dev/null || skip "mpirun not installed (openmpi-bin)"
command -v sdiag >/dev/null || skip "sdiag not installed (slurm-client)"
SLURM_LOCAL_CPUS=16; export SLURM_LOCAL_CPUS  # room for 16 tasks of srun on the one node
start_slurm "@HOST@ @PORT1@ 10:2
@HOST@ @PORT2@ 10:2"
out=$naa_test_dir/out
nodes=1

# run WHAT COMMAND...: runs a 16-rank job, then checks the RPC count and the spread.
run() {
  what=$1; shift
  before=$(job_info_rpcs); c1=$(clients 1); c2=$(clients 2)
  # Over ofi+tcp: 16 ranks on 2 busy cores can take longer than auto's 3 s for an shm
  # connection, and the server would then log the client twice (shm, then tcp).
  clean env NAA_TRANSPORT=ofi+tcp "$@" | tee "$out"
  after=$(job_info_rpcs)
  on1=$(( $(clients 1) - c1 )); on2=$(( $(clients 2) - c2 ))
  echo "$what: sdiag REQUEST_JOB_INFO_SINGLE before $before, after $after; clients: server 1 $on1, server 2 $on2"
  expect "$out" "16 ranks, sum of c over 100000 elements = .*: correct"
  [ $((after - before)) -le $nodes ] ||
    { echo "FAIL: $what: $((after - before)) job-info RPCs for 16 ranks on $nodes node(s)" >&2; exit 1; }
  [ "$on1" -eq 8 ] && [ "$on2" -eq 8 ] ||
    { echo "FAIL: $what: 16 ranks spread $on1 + $on2 over the two NAAs, expected 8 + 8" >&2; exit 1; }
}

# --oversubscribe: mpirun takes the allocation's 2 CPUs as its slots.
run "salloc + mpirun" salloc --naa=10 -n 2 mpirun --oversubscribe -n 16 "$NAA_EXAMPLES/mpi_offload" 100000
run "srun --mpi=pmix" srun --mpi=pmix --naa=10 -n 16 "$NAA_EXAMPLES/mpi_offload" 100000
# Only an naa licence, no --naa: the environment does not say what the job may use, so the
# node's first rank asks slurmctld and shares the answer with the others through PMIx.
run "salloc -L naa:1 + mpirun" salloc -L naa:1 -n 2 mpirun --oversubscribe -n 16 "$NAA_EXAMPLES/mpi_offload" 100000
run "srun --mpi=pmix -L naa:1" srun --mpi=pmix -L naa:1 -n 16 "$NAA_EXAMPLES/mpi_offload" 100000

# The job's view, inside the allocation.
clean salloc --naa=10 -n 16 "$NAA_TOOLS/naa-info/naa-info" --job | tee "$out"
expect "$out" "^job [0-9]*: 16 rank(s) (SLURM_NTASKS), codes from --naa=10 "
expect "$out" "^function code 10: 2 NAA(s)\$"
expect "$out" "^  0  $NAA_TEST_HOST:$NAA_PORT1  2 input(s)  (.*naa.conf line 1)  ranks 0 2 4 6 8 10 12 14\$"
expect "$out" "^  1  $NAA_TEST_HOST:$NAA_PORT2  2 input(s)  (.*naa.conf line 2)  ranks 1 3 5 7 9 11 13 15\$"

# The plugin logs the same table at --verbose.
for submit in "srun -v" "salloc -v"; do
  clean $submit --naa=10 -n 1 true 2>"$out" || { cat "$out"; exit 1; }
  expect "$out" "naa: function code 10: rank r mod 2 = 0 -> $NAA_TEST_HOST:$NAA_PORT1 "
  expect "$out" "naa: function code 10: rank r mod 2 = 1 -> $NAA_TEST_HOST:$NAA_PORT2 "
done
