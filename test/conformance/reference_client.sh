#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server serves a client that behaves like the NAAICE reference AP2 client
# (conformance-client: no libnaa identity, its completions taken one at a time, the NAA's reply
# before its own write's completion fatal), over ofi+tcp and ofi+shm: 100 back-to-back
# invocations of 4 in-place regions complete, the reply guard (--reference-guard-us) holding
# each reply until the client's write has completed. The client's link acknowledges its writes
# ACK_US after they were posted (--ack-us, far beyond any scheduling delay): without the guard
# naa-server answers within it and the client dies at its first invocation, so the pass shows
# the guard at work; with it the client cannot die, however loaded the machine. A transport
# that libfabric here lacks is said and left out; with neither, the test is skipped.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
client=$NAA_BUILDDIR/test/conformance/conformance-client
scale=${NAA_TEST_TIME_SCALE:-1}
ack_us=$(awk -v s="$scale" 'BEGIN { print int(20000 * (s < 1 ? 1 : s)) }')
guard_us=$((2 * ack_us))
ran=0
for transport in ofi+tcp ofi+shm; do
  provider=${transport#ofi+}
  if ! "$NAA_TOOLS/naa-info/naa-info" | grep -q "^          $provider  "; then
    echo "libfabric here has no usable '$provider' provider: $transport not tested"
    continue
  fi
  export NAA_TRANSPORT=$transport
  start_server -v --reference-guard-us "$guard_us" 2> "$naa_test_dir/server-$provider.log"
  if ! "$client" --port "$NAA_TEST_PORT" --address "$NAA_TEST_HOST" --invocations 100 --regions 4 \
      --ack-us "$ack_us" 2> "$naa_test_dir/client-$provider.log"; then
    echo "FAIL: $transport: the reference-like client died" >&2
    cat "$naa_test_dir/client-$provider.log" "$naa_test_dir/server-$provider.log" >&2
    exit 1
  fi
  grep -q "conformance-client: 100 of 100 invocations" "$naa_test_dir/client-$provider.log" || {
    cat "$naa_test_dir/client-$provider.log" >&2
    exit 1
  }
  grep -q "(not libnaa: each reply waits" "$naa_test_dir/server-$provider.log" || {
    echo "FAIL: $transport: naa-server took the client for libnaa" >&2
    exit 1
  }
  echo "ok: $transport: 100 of 100 invocations of the reference-like client (ack $ack_us us, guard $guard_us us)"
  ran=$((ran + 1))
done
[ $ran -gt 0 ] || { echo "SKIP: neither ofi+tcp nor ofi+shm is usable here"; exit 77; }
