#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# sbatch --naa: the batch script and the tasks it starts offload vecadd, with no NAA_* variable
# set by the test.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
start_slurm "@HOST@ @PORT1@ 10:2"
cat >"$naa_test_dir/job.sh" <<JOB
#!/bin/sh
echo "batch NAA_SPEC=\$NAA_SPEC"
"$NAA_EXAMPLES/vecadd" 1000 || exit 1
srun -n 2 "$NAA_EXAMPLES/vecadd" 1000
JOB
job=$(clean sbatch --parsable --naa=10 -n 2 -o "$naa_test_dir/job.out" "$naa_test_dir/job.sh")
wait_job "$job"
cat "$naa_test_dir/job.out"
expect "$naa_test_dir/job.out" "^batch NAA_SPEC=$NAA_TEST_HOST:$NAA_PORT1:10:2\$"
expect "$naa_test_dir/job.out" "all 2000 elements correct" 3
scontrol show job "$job" | grep -q "JobState=COMPLETED" || { scontrol show job "$job"; exit 1; }
