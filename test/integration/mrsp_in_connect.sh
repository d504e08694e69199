#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The memory-region exchange in the connection's private data over ofi+tcp and ofi+shm
# (doc/protocol.md §3.4): a request that fits rides in the connection request and naa-server
# answers in its accept, with and without a key before it; one that does not fit, a peer that
# does not answer so (the conformance NAA, like the reference NAAs) and a request naa-server
# refuses all go the way of messages, and every handle computes right. Over shm also: the accept
# sent by the thread that serves the client carries the advertisement, and a naa-server
# short of descriptors leaves the request for the messages. A transport that libfabric here
# lacks is said and left out; with neither, the test is skipped.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
client=$NAA_BUILDDIR/test/integration/regions_client
export NAA_LOG_LEVEL=info NAA_TIMEOUT=20
fail() {
  echo "FAIL: $1" >&2
  for f in "$naa_test_dir"/*.log; do echo "---- $f"; cat "$f"; done >&2
  exit 1
}
# expect_exchange NAME HOW N SIZE: N regions of SIZE bytes to the NAA at $naa, exchanged HOW ("in the connection's
# private data" or "by messages") as the client's log says.
expect_exchange() {
  NAA_SPEC="$naa:1:$3" "$client" "$3" "$4" > "$naa_test_dir/$1.log" 2>&1 || fail "$1: the client failed"
  grep -q "$3 regions exchanged $2" "$naa_test_dir/$1.log" || fail "$1: not exchanged $2"
  echo "ok: $NAA_TRANSPORT: $1: $3 regions exchanged $2"
}

# exchanges TRANSPORT: every case over it. Each naa-server listens on its own port.
exchanges() {
  export NAA_TRANSPORT=$1
  t=${1#ofi+}
  start_server -v 2> "$naa_test_dir/server-$t.log"
  naa=$NAA_TEST_HOST:$NAA_TEST_PORT
  expect_exchange "three-$t" "in the connection's private data" 3 4096
  grep -q "3 regions, 12288 bytes allocated, advertised in the accept" "$naa_test_dir/server-$t.log" ||
    fail "$1: naa-server did not advertise in its accept"
  # 4 + 24 * 11 bytes of request and its tag are more than a connection request carries (256:
  # libfabric's tcp, and libnaa's own request message over shm).
  expect_exchange "eleven-$t" "by messages" 11 64
  grep -q "11 regions, 704 bytes allocated, advertised by message" "$naa_test_dir/server-$t.log" ||
    fail "$1: naa-server did not advertise by message"

  # A refusal goes the way of messages, and the client reads its cause as before.
  start_server --client-memory 8K 2> "$naa_test_dir/server-limited-$t.log"
  if NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:1:3" "$client" 3 4096 > "$naa_test_dir/limited-$t.log" 2>&1; then
    fail "$1: a create over the memory limit succeeded"
  fi
  grep -q "12288 bytes exceed the NAA's memory limit (8192 bytes left" "$naa_test_dir/limited-$t.log" ||
    fail "$1: the refusal's cause did not reach the client"
  echo "ok: $1: a refused request is answered by message"

  # After a key (the server skips it to find the request).
  key=$naa_test_dir/key
  echo "mrsp-in-connect-test-key" > "$key"
  start_server -v -A "$key" 2> "$naa_test_dir/server-key-$t.log"
  naa=$NAA_TEST_HOST:$NAA_TEST_PORT
  NAA_AUTH_KEY_FILE=$key expect_exchange "keyed-$t" "in the connection's private data" 3 4096

  # A peer that reads no private data and names itself not (conformance-naa, as the reference),
  # its re-arm window within the client's default pacing (100 us): its stranding is not tested here.
  start_conformance "$1" --window-us 50
  naa=$NAA_TEST_HOST:$NAA_CONFORMANCE_PORT
  expect_exchange "conformance-$t" "by messages" 3 4096
  if [ "$t" = shm ]; then
    late_accept
    few_descriptors
  fi
}

# shm: the accept sent by the thread that serves the client, not by the listening thread (as when
# the client does not read in time for the listening thread's attempt), carries the advertisement
# too. naa-server's test hook NAA_SERVER_TEST_LATE_ACCEPT (naa-server(1)) forces that path.
late_accept() {
  export NAA_LOG_LEVEL=debug NAA_SERVER_TEST_LATE_ACCEPT=1
  start_server 2> "$naa_test_dir/server-late.log"
  unset NAA_SERVER_TEST_LATE_ACCEPT
  NAA_LOG_LEVEL=info
  naa=$NAA_TEST_HOST:$NAA_TEST_PORT
  expect_exchange late "in the connection's private data" 3 4096
  bytes=$(sed -n 's/.*from the thread that serves it (\([0-9]*\) bytes of private data).*/\1/p' \
    "$naa_test_dir/server-late.log" | head -n 1)
  [ -n "$bytes" ] || fail "ofi+shm: the accept did not come from the thread that serves the client"
  [ "$bytes" -gt 16 ] || fail "ofi+shm: the late accept carried $bytes bytes: the identity alone"
  echo "ok: ofi+shm: the late accept carried $bytes bytes, the advertisement included"
}

# shm: a naa-server with 20 descriptors to spare when a 10-region request comes, fewer than
# the regions and the 16 its accept keeps spare, leaves the request for the messages after the
# accept, and the client computes right.
few_descriptors() {
  start_server 2> "$naa_test_dir/server-count.log"
  counted=$!
  used=$(ls "/proc/$counted/fd" | wc -l)
  kill "$counted"
  real=$NAA_SERVER
  printf '#!/bin/sh\nulimit -n %d\nexec "%s" "$@"\n' $((used + 20)) "$real" > "$naa_test_dir/limited-server"
  chmod +x "$naa_test_dir/limited-server"
  NAA_SERVER=$naa_test_dir/limited-server
  start_server -v 2> "$naa_test_dir/server-few.log"
  NAA_SERVER=$real
  naa=$NAA_TEST_HOST:$NAA_TEST_PORT
  expect_exchange few "by messages" 10 64
  grep -q "10 regions, 640 bytes allocated, advertised by message" "$naa_test_dir/server-few.log" ||
    fail "ofi+shm: naa-server with few descriptors did not advertise by message"
}

each_ofi_transport exchanges
