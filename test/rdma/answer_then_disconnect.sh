#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An NAA that answers and then disconnects has its answer read, also where the client notices
# the disconnect first. The conformance NAA refuses an MRSP request beyond its memory (8 KiB
# against --memory 4K) with the reference's error answer, waits for its send's completion and
# tears the connection down; naa_create must fail with NAA_ERR_PROTOCOL (9), the answer, not
# NAA_ERR_CONNECTION (4). hold_cm_event.c forces the order: the client's look at its rdma_cm
# channel after an empty poll is held until the disconnect is there, so the answer arrives
# between the two. NAA_PROGRESS=block makes that look come at once, before the client sleeps,
# rather than after some empty polls, when the answer may already be there.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
hold=$NAA_BUILDDIR/test/rdma/.libs/libhold_cm_event.so
[ -e "$hold" ] || { echo "FAIL: $hold is not built" >&2; exit 1; }
start_conformance verbs --memory 4K
out=$(NAA_PROGRESS=block LD_PRELOAD=$hold "$NAA_BUILDDIR/test/integration/create_cause" \
  "$NAA_TEST_HOST:$NAA_CONFORMANCE_PORT" verbs 8192 2> "$naa_test_dir/err")
cat "$naa_test_dir/err"
echo "naa_create: $out"
if ! grep -q '^hold_cm_event: nothing pending when held; held for RDMA_CM_EVENT_DISCONNECTED$' \
  "$naa_test_dir/err"; then
  echo "SKIP: the client's look at its channel was not held until the disconnect came" >&2
  exit 77
fi
case $out in
  "9 "*) echo "PASS: the answer sent before the disconnect was read" ;;
  *) echo "FAIL: naa_create returned '$out', not the NAA's answer (9: NAA_ERR_PROTOCOL)" >&2; exit 1 ;;
esac
