#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two jobs share one NAA: both run vecadd against the same naa-server (while the first holds
# its connection open, so the server has two clients at once) and both get correct results.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
start_slurm "@HOST@ @PORT1@ 10:2"
for j in 1 2; do
  cat >"$naa_test_dir/job$j.sh" <<JOB
#!/bin/sh
echo "job $j NAA_SPEC=\$NAA_SPEC"
touch "$naa_test_dir/started$j"
# Wait (bounded) for the other job so that both use the NAA at the same time.
i=0; while [ ! -e "$naa_test_dir/started$((3 - j))" ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
"$NAA_EXAMPLES/vecadd" 200000
JOB
done
job1=$(clean sbatch --parsable --naa=10 -L naa:1 -n 1 -o "$naa_test_dir/job1.out" "$naa_test_dir/job1.sh")
job2=$(clean sbatch --parsable --naa=10 -L naa:1 -n 1 -o "$naa_test_dir/job2.out" "$naa_test_dir/job2.sh")
wait_job "$job1"
wait_job "$job2"
for j in 1 2; do
  cat "$naa_test_dir/job$j.out"
  expect "$naa_test_dir/job$j.out" "^job $j NAA_SPEC=$NAA_TEST_HOST:$NAA_PORT1:10:2\$"
  expect "$naa_test_dir/job$j.out" "all 400000 elements correct"
done
