#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# srun --naa: tasks get NAA_SPEC from the plugin (nothing NAA_* set by the test), spread over
# the NAAs serving the code by task rank, and vecadd offloads through it.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
start_slurm "# two NAAs serve vecadd_f64; only the second daxpy
@HOST@ @PORT1@ 10:2
@HOST@ @PORT2@ 10:2 11:3"
out=$naa_test_dir/out

clean srun --naa=10 -n 1 "$NAA_EXAMPLES/vecadd" 1000 | tee "$out"
expect "$out" "all 2000 elements correct"

# Rank mod 2 over the two NAAs serving 10; 11 has one NAA for every task.
clean srun --naa=10,11 -n 4 -l printenv NAA_SPEC | sort | tee "$out"
expect "$out" "^0: $NAA_TEST_HOST:$NAA_PORT1:10:2,$NAA_TEST_HOST:$NAA_PORT2:11:3\$"
expect "$out" "^1: $NAA_TEST_HOST:$NAA_PORT2:10:2,$NAA_TEST_HOST:$NAA_PORT2:11:3\$"
expect "$out" "^2: $NAA_TEST_HOST:$NAA_PORT1:10:2,$NAA_TEST_HOST:$NAA_PORT2:11:3\$"
expect "$out" "^3: $NAA_TEST_HOST:$NAA_PORT2:10:2,$NAA_TEST_HOST:$NAA_PORT2:11:3\$"

# Both NAAs do the work when two tasks offload.
clean srun --naa=10 -n 2 "$NAA_EXAMPLES/vecadd" 1000 | tee "$out"
expect "$out" "all 2000 elements correct" 2

# Without --naa the plugin sets nothing.
clean srun -n 1 sh -c 'echo "NAA_SPEC=${NAA_SPEC:-unset}"' | tee "$out"
expect "$out" "^NAA_SPEC=unset\$"
