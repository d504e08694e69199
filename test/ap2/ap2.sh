#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The reference-style program test/ap2/ap2_style.c against a naa-server on $NAA_TEST_HOST:
#   ap2.sh [PROGRAM [INVOCATIONS]]   (default: the build's test/ap2/ap2_style, 100)
# make check runs the in-tree build over libfabric tcp, test/install/consumer.sh the builds
# against the installed library (pkg-config and CMake), test/rdma/suite.sh the in-tree build
# over verbs (with AP2_BYTES_RECEIVED=reported). ofi+tcp is named unless NAA_TRANSPORT is
# set: auto would take shm, which reports the final write's length as verbs does. NAA_TEST_AP2_RUNS (default 1) runs the
# program that many times against the same server.
set -eu
program=${1:-${NAA_BUILDDIR:?run through make check or name the program}/test/ap2/ap2_style}
invocations=${2:-100}
runs=${NAA_TEST_AP2_RUNS:-1}
NAA_SRCDIR=${NAA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
h=$NAA_TEST_HOST p=$NAA_TEST_PORT
case $h in *:*) h="[$h]" ;; esac
# Codes 10 (vecadd), 11 (daxpy) and 1 (add1) with their numbers of inputs as the reference
# counts them (add1's single-send output, which becomes an input, does not count).
export NAA_SPEC="$h:$p:10:2,$h:$p:11:3,$h:$p:1:1"
export AP2_BYTES_RECEIVED=${AP2_BYTES_RECEIVED:-zero} NAA_TIMEOUT=${NAA_TIMEOUT:-60}
export NAA_TRANSPORT=${NAA_TRANSPORT:-ofi+tcp}
i=0
while [ $i -lt "$runs" ]; do
  i=$((i + 1))
  rc=0
  "$program" "$invocations" >"$naa_test_dir/out" 2>"$naa_test_dir/err" || rc=$?
  if [ $rc -ne 0 ] || ! grep -q "^ap2_style: $((3 * invocations + 1)) invocations correct$" "$naa_test_dir/out"; then
    cat "$naa_test_dir/out" "$naa_test_dir/err"
    echo "ap2: FAIL: run $i of $runs: $program exited with status $rc" >&2
    exit 1
  fi
done
cat "$naa_test_dir/out"
echo "ap2: PASS: $runs run(s) of $program, $((3 * invocations + 1)) invocations each"
