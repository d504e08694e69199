#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Failover among the NAAs of naa.conf: with the first of the two NAAs serving vecadd
# killed, the task of srun --naa (whose NAA_SPEC from the plugin names that NAA alone) and a
# process of salloc --naa (no NAA_SPEC: libnaa's Slurm resolver) both fail over to the second,
# compute correctly, and log a line naming both NAAs.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
start_slurm "@HOST@ @PORT1@ 10:2
@HOST@ @PORT2@ 10:2"
out=$naa_test_dir/out
err=$naa_test_dir/err
# shellcheck disable=SC2086  # the pids, one word each; the first is server 1's
set -- $naa_test_pids
kill -9 "$1"
wait "$1" 2>/dev/null || :

for submit in "srun --naa=10 -n 1" "salloc --naa=10 -n 1"; do
  clean $submit "$NAA_EXAMPLES/vecadd" 1000 >"$out" 2>"$err" || { cat "$out" "$err"; exit 1; }
  cat "$out" "$err"
  expect "$out" "all 2000 elements correct"
  expect "$err" "function code 10: failing over from $NAA_TEST_HOST:$NAA_PORT1 to $NAA_TEST_HOST:$NAA_PORT2 (.*naa.conf line 2"
done
