#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server's listening threads sleep until there is something to do: a connection request,
# housekeeping that is actually pending (the handshake sweeper's next look while it has
# something to look at, the expiry of kept regions and queues), or the stop, whose descriptor
# ends their sleep (tools/naa-server/listener_wake.hpp). Before, each woke every 200 ms only
# to look at the stop flag and for housekeeping (an idle server with 64 idle clients: 84-149
# wake-ups in 8 s, nearly all of them these slices).
# naa-server listens over ofi+tcp and ofi+shm (where libfabric has shm), one thread each: the
# main thread and those named "naa-listen". With no client, then with 4 idle clients over
# ofi+tcp and over ofi+shm, those threads may wake over NAA_TEST_IDLE_SECONDS (default 4) s
# twice each, and once every 2 s more (the ofi+shm listener's look for a request whose client
# could not ring its bell, ofi_rdm_listener.hpp), at most: with the slices back, they woke
# 5 times a second each. Then SIGTERM must end the server within NAA_TEST_STOP_MS (default
# 2000, times NAA_TEST_TIME_SCALE) ms.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
clients=4
seconds=${NAA_TEST_IDLE_SECONDS:-4}
stop_ms=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" -v m="${NAA_TEST_STOP_MS:-2000}" 'BEGIN { print int(m * s) }')

listener_wakeups() {  # thread_wakeups of process $1's listening threads
  for t in /proc/"$1"/task/*; do
    if [ "${t##*/}" = "$1" ] || [ "$(cat "$t/comm" 2>/dev/null)" = naa-listen ]; then
      cat "$t/status" 2>/dev/null
    fi
  done | thread_wakeups
}


status=0
# Waits until the listening threads of $server slept 1.5 s without waking (settle; the ofi+shm
# listener's look every 2 s leaves such spells); fails the script when they never did.
quiet() {
  settle 1500 listener_wakeups $server ||
    { echo "FAIL: $1: the listening threads never slept 1.5 s without waking" >&2; status=1; }
}

# Fails the script when the listening threads of $server woke more than allowed over $seconds
# s; $1 says what the server was doing.
check_idle() {
  set -- "$1" $(listener_wakeups $server)
  before=$2 threads=$3
  sleep "$seconds"
  set -- "$1" $(listener_wakeups $server)
  woke=$(($2 - before))
  echo "$1: the $threads listening threads woke $woke times in $seconds s"
  if [ "$threads" -lt "$listeners" ]; then
    echo "FAIL: $1: $threads listening threads found, $listeners expected" >&2
    status=1
  elif [ "$woke" -gt $(((2 + seconds / 2) * threads)) ]; then
    echo "FAIL: $1: the listening threads woke while nothing came" >&2
    status=1
  fi
}

transports=ofi+tcp listeners=1
if have_provider shm; then
  transports="ofi+tcp ofi+shm" listeners=2
else
  echo "note: libfabric here has no usable shm provider; ofi+tcp only"
fi

for t in $transports; do
  start_server --max-clients $clients --peer-clients $clients
  server=$!
  export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1"
  quiet "started" # its first parked threads, if any, are gone
  check_idle "no client"
  start_idle_clients $clients $t
  client=$idle_client
  quiet "$clients clients connected over $t" # the sweeper's look after the requests
  check_idle "$clients idle clients over $t"
  stops_within $server "$stop_ms" "with sleeping listeners over $t" || status=1
  exec 3>&-
  wait $client 2>/dev/null || :  # its handles' server is gone
done
exit $status
