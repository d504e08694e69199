#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The README's demo path as a test: a naa-server on $NAA_TEST_HOST and an example against it,
# examples/vecadd or the one named as argument (examples_fortran.sh runs vecadd_f).
set -eu
example=${1:-vecadd}
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
rc=0
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 "$NAA_EXAMPLES/$example" 1000000 \
  >"$naa_test_dir/out" || rc=$?
cat "$naa_test_dir/out"
[ $rc -eq 0 ] || { echo "$example exited with status $rc" >&2; exit 1; }
grep -q "all 2000000 elements correct" "$naa_test_dir/out"
