#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# An idle connection of naa-server does not wake while its client is idle: its thread sleeps on
# the endpoint's descriptors and the server's stop descriptor (tools/naa-server/stop_signal.hpp)
# until the client does something, its idle timeout, or the stop. Before, each connection woke
# every 0.2-1 s only to look at the stop flag (1000 idle ofi+tcp clients: 3.65 % of a core).
# Over ofi+tcp and ofi+shm (whose bell and the client's pidfd wake it, once nothing has come for
# 3 s): 4 clients each run one invocation and go quiet; once the threads that serve them (named
# "naa-client") have slept 1.5 s without waking (settle: on a loaded machine later, never
# sooner), over NAA_TEST_IDLE_SECONDS (default 4) s those threads may wake once per client at
# most (with the slices back they never sleep that long, and woke 4 times or more each in the
# 4 s). Then SIGTERM, with every connection asleep, must end the server within
# NAA_TEST_STOP_MS (default 2000, times NAA_TEST_TIME_SCALE) ms: nothing but the stop
# descriptor wakes them.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
clients=4
seconds=${NAA_TEST_IDLE_SECONDS:-4}
stop_ms=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" -v m="${NAA_TEST_STOP_MS:-2000}" 'BEGIN { print int(m * s) }')

client_thread_wakeups() {  # thread_wakeups of process $1's "naa-client" threads
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = naa-client ] && cat "$t/status" 2>/dev/null
  done | thread_wakeups
}


transports=ofi+tcp
if have_provider shm; then
  transports="ofi+tcp ofi+shm"
else
  echo "note: libfabric here has no usable shm provider; ofi+tcp only"
fi

status=0
for t in $transports; do
  start_server --max-clients $clients --peer-clients $clients
  server=$!
  export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1"
  start_idle_clients $clients $t
  client=$idle_client
  # The last invocations' polling ends, and ofi+shm's 3 s of slices after news (up to 1 s each).
  if ! settle 1500 client_thread_wakeups $server; then
    echo "FAIL: over $t, the threads serving idle clients never slept 1.5 s without waking" >&2
    status=1
  fi
  set -- $(client_thread_wakeups $server)
  before=$1 threads=$2
  sleep "$seconds"
  set -- $(client_thread_wakeups $server)
  woke=$(($1 - before))
  echo "$t: the $threads threads serving $clients idle clients woke $woke times in $seconds s"
  if [ "$threads" -ne $clients ]; then
    echo "FAIL: over $t, $threads threads named naa-client serve $clients clients" >&2
    status=1
  elif [ "$woke" -gt $clients ]; then
    echo "FAIL: over $t, idle connections woke while their clients were idle" >&2
    status=1
  fi
  stops_within $server "$stop_ms" "with $clients idle connections over $t" || status=1
  exec 3>&-
  wait $client 2>/dev/null || :  # its handles' server is gone
done
exit $status
