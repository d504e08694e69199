#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Function codes naa.conf does not serve, and malformed --naa values, are refused at submission:
# srun, sbatch and salloc exit non-zero with a message naming the code, and no job runs.
set -eu
. "$NAA_SRCDIR/test/slurm/lib.sh"
start_slurm "@HOST@ @PORT1@ 10:2 11:3"
err=$naa_test_dir/err

refused() {
  if clean "$@" true 2>"$err"; then echo "FAIL: '$*' was accepted" >&2; exit 1; fi
  cat "$err"
}
refused srun --naa=99 -n 1
expect "$err" "no NAA serves function code 99 (--naa=99); .*naa.conf lists 10,11"
refused sbatch --naa=10,12 --wrap
expect "$err" "no NAA serves function code 12"
refused salloc --naa=abc -n 1
expect "$err" '"abc" is not a function code 1..127'
refused srun --naa=128 -n 1
expect "$err" '"128" is not a function code 1..127'

[ -z "$(squeue -h)" ] || { echo "FAIL: a refused submission left a job:" >&2; squeue >&2; exit 1; }
# The same cluster accepts a served code.
clean srun --naa=11 -n 1 true

# libnaa's Slurm resolver (no NAA_SPEC in salloc's shell): a job with neither --naa nor an naa
# licence gets no NAA, one asking for another code neither; an naa licence is enough.
out=$naa_test_dir/out
if clean salloc -n 1 "$NAA_EXAMPLES/vecadd" 1000 >"$out" 2>&1; then cat "$out"; echo "FAIL: a job without --naa or licence offloaded" >&2; exit 1; fi
cat "$out"
expect "$out" "Slurm job [0-9]* has neither --naa nor an naa licence (licences: none)"
if clean salloc --naa=11 -n 1 "$NAA_EXAMPLES/vecadd" 1000 >"$out" 2>&1; then cat "$out"; echo "FAIL: --naa=11 offloaded code 10" >&2; exit 1; fi
cat "$out"
expect "$out" "Slurm job [0-9]* asked for --naa=11 only"
clean salloc -L naa:1 -n 1 "$NAA_EXAMPLES/vecadd" 1000 | tee "$out"
expect "$out" "all 2000 elements correct"
