#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server serves a client that behaves like the NAAICE reference AP2 client
# (conformance-client: no libnaa identity, its completions taken one at a time, the NAA's reply
# before its own write's completion fatal), over ofi+tcp and ofi+shm: 100 back-to-back
# invocations of 4 in-place regions complete, the reply guard (--reference-guard-us) holding
# each reply until the client's write has completed. The client's link acknowledges its writes
# ACK_US after they were posted (--ack-us, far beyond any scheduling delay): without the guard
# naa-server answers within it and the client dies at its first invocation, so the pass shows
# the guard at work; with it the client cannot die, however loaded the machine. With
# NAA_TRANSPORT=verbs (the verbs suite, test/rdma/suite.sh) it runs over verbs instead, and
# also with no modelled acknowledgement against naa-server's defaults: Soft-RoCE's own late
# acknowledgements are what made the reference client die there. There naa-server's log shows
# the first reply held for twice the advertisement's acknowledgement, the only measure of the
# link it has by then. A transport that libfabric here lacks is said and left out; with neither,
# the test is skipped.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
client=$NAA_BUILDDIR/test/conformance/conformance-client
scale=${NAA_TEST_TIME_SCALE:-1}
ack_us=$(awk -v s="$scale" 'BEGIN { print int(20000 * (s < 1 ? 1 : s)) }')
guard_us=$((2 * ack_us))
# served NAME ACK_US [naa-server ARGS...]: 100 invocations of the client, its link acknowledging
# ACK_US after each post, against a naa-server started with ARGS, all complete.
served() {
  name=$1 ack=$2
  shift 2
  start_server -v "$@" 2> "$naa_test_dir/server-$name.log"
  if ! "$client" --port "$NAA_TEST_PORT" --address "$NAA_TEST_HOST" --invocations 100 --regions 4 \
      --ack-us "$ack" 2> "$naa_test_dir/client-$name.log" ||
     ! grep -q "conformance-client: 100 of 100 invocations" "$naa_test_dir/client-$name.log"; then
    echo "FAIL: $name: the reference-like client died" >&2
    cat "$naa_test_dir/client-$name.log" "$naa_test_dir/server-$name.log" >&2
    exit 1
  fi
  grep -q "(not libnaa: each reply waits" "$naa_test_dir/server-$name.log" || {
    echo "FAIL: $name: naa-server took the client for libnaa" >&2
    exit 1
  }
  echo "ok: $name: 100 of 100 invocations of the reference-like client (ack $ack us, naa-server $*)"
}

# dies NAME ACK_US [naa-server ARGS...]: the same client dies at its first invocation (the
# reply before its own write's completion): with -R 0 naa-server holds no reply for the modelled
# acknowledgement, which the adaptive part cannot see (it learns how long our own messages take
# to complete). ACK_US is seconds here, beyond any reply's delay however busy the machine.
dies() {
  name=$1 ack=$2
  shift 2
  start_server -v "$@" 2> "$naa_test_dir/server-$name.log"
  if "$client" --port "$NAA_TEST_PORT" --address "$NAA_TEST_HOST" --invocations 100 --regions 4 \
      --ack-us "$ack" 2> "$naa_test_dir/client-$name.log" ||
     ! grep -q "invocation 1: .*not handled for state" "$naa_test_dir/client-$name.log"; then
    echo "FAIL: $name: the reference-like client was not stranded without the guard" >&2
    cat "$naa_test_dir/client-$name.log" "$naa_test_dir/server-$name.log" >&2
    exit 1
  fi
  echo "ok: $name: without the guard the reference-like client dies:" \
    "$(grep -o 'invocation [0-9]*: .*not handled for state: [A-Z_]*' "$naa_test_dir/client-$name.log")"
}

ran=0
if [ "${NAA_TRANSPORT:-}" = verbs ]; then
  served verbs-modelled "$ack_us" --reference-guard-us "$guard_us"
  dies verbs-unguarded 5000000 --reference-guard-us 0
  export NAA_LOG_LEVEL=debug
  served verbs 0
  log=$naa_test_dir/server-verbs.log
  advert=$(sed -n "s/.*the advertisement's send completed \([0-9]*\) us after posting.*/\1/p" "$log")
  first=$(sed -n 's/.*invocation 1 answered (reply posted) .* guard \([0-9]*\) us$/\1/p' "$log")
  if [ -z "$advert" ] || [ -z "$first" ] || [ "$first" -lt $((2 * advert)) ]; then
    echo "FAIL: verbs: the first reply was not guarded by twice the advertisement's" \
      "acknowledgement (${advert:-none} us; guard ${first:-?} us)" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "ok: verbs: the first reply's guard $first us, the advertisement acknowledged in $advert us"
  exit 0
fi
for transport in ofi+tcp ofi+shm; do
  provider=${transport#ofi+}
  if ! have_provider "$provider"; then
    echo "libfabric here has no usable '$provider' provider: $transport not tested"
    continue
  fi
  export NAA_TRANSPORT=$transport
  served "$transport" "$ack_us" --reference-guard-us "$guard_us"
  dies "$transport-unguarded" 5000000 --reference-guard-us 0
  ran=$((ran + 1))
done
[ $ran -gt 0 ] || { echo "SKIP: neither ofi+tcp nor ofi+shm is usable here"; exit 77; }
