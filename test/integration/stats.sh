#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_STATS=1 (naa_stats_get(3)): examples/vecadd with 1000 doubles, a known workload, prints
# one block at exit whose figures are its own: 1 create, 2 invocations of function 10, the
# first writing a and b (16000 bytes), the second a only (b is single-send: 8000), 8000 bytes
# back each; without NAA_STATS no block.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
run() {
  NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 SLURM_PROCID=3 \
    "$NAA_EXAMPLES/vecadd" 1000 >"$naa_test_dir/out" 2>"$naa_test_dir/err" ||
    { cat "$naa_test_dir/out" "$naa_test_dir/err"; exit 1; }
}
NAA_STATS=1 run
cat "$naa_test_dir/err"
polls=$(sed -n 's/.*round 1 (naa_test, \([0-9]*\) polls).*/\1/p' "$naa_test_dir/out")
expect() {
  grep -q "$1" "$naa_test_dir/err" || { echo "stats: FAIL: no line matching: $1" >&2; exit 1; }
}
who='^naa-stats\[[0-9]*, rank 3\]: '
expect "${who}1 naa_create in [0-9.]* ms\$"
expect "${who}function 10 at $NAA_TEST_HOST:$NAA_TEST_PORT: 2 invocations, 24000 bytes out, 16000 bytes back; naa_invoke [0-9.]* ms, naa_wait 1 calls [0-9.]* ms, naa_test $polls polls [0-9.]* ms; transfer [0-9.]* ms, NAA service [0-9.]* ms\$"
expect "${who}errors: none\$"
[ "$(grep -c '^naa-stats' "$naa_test_dir/err")" -eq 3 ] || { echo "stats: FAIL: not one block of 3 lines" >&2; exit 1; }
run
if grep -q '^naa-stats' "$naa_test_dir/err"; then echo "stats: FAIL: a block without NAA_STATS" >&2; exit 1; fi
echo "stats: the block matches the workload; none without NAA_STATS"
