#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A handle whose ofi+shm connection (NAA_TRANSPORT=auto) is lost, and whose NAA comes back
# serving TCP alone, reconnects over ofi+tcp and says so in a warning with the reason; when the
# NAA serves shared memory again, the next reconnect returns to it; when it cannot reconnect at
# all, naa_last_error's cause names shared memory's failure too.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
scaled() { awk -v s="${NAA_TEST_TIME_SCALE:-1}" -v n="$1" 'BEGIN { print int(n * (s > 1 ? s : 1)) }'; }
start_server
server=$!
port=$NAA_TEST_PORT
export NAA_SPEC="127.0.0.1:$port:3:1"
export NAA_LOG_LEVEL=info
start_idle_clients 1 auto
grep -q "connected to 127.0.0.1:$port via auto: ofi+shm" "$naa_test_dir/client.log" ||
  { cat "$naa_test_dir/client.log"; echo "FAIL: the handle did not connect over ofi+shm" >&2; exit 1; }
# restart_server ARGS: the NAA stops and comes back on the same port, serving as ARGS say.
restart_server() {
  kill "$server"
  wait "$server" 2>/dev/null || :
  rm -f "$naa_test_dir/port"
  "$NAA_SERVER" --address 127.0.0.1 --port "$port" --ready-file "$naa_test_dir/port" "$@" 3>&- &
  server=$!
  naa_test_pids="$naa_test_pids $server"
  i=0
  until [ -s "$naa_test_dir/port" ]; do
    i=$((i + 1)); [ $i -le $(scaled 6000) ] || { echo "FAIL: naa-server did not start again" >&2; exit 1; }
    sleep 0.01
  done
}
expect() {
  grep -q "$1" "$naa_test_dir/client.log" || { cat "$naa_test_dir/client.log"; echo "FAIL: $2" >&2; exit 1; }
}
# TCP alone: shared memory finds no listener there.
restart_server --transport ofi+tcp
echo >&3  # one invocation
i=0
until grep -q "invoked on request" "$naa_test_dir/client.log"; do
  i=$((i + 1))
  if [ $i -gt $(scaled 6000) ] || ! kill -0 "$idle_client" 2>/dev/null; then
    cat "$naa_test_dir/client.log"; echo "FAIL: the invocation after the restart did not end" >&2; exit 1
  fi
  sleep 0.01
done
expect "warning: function code 3: the handle's connection to 127.0.0.1:$port is now over auto: ofi+tcp, not auto: ofi+shm as before (no same-host transport (shared memory) serves 127.0.0.1:$port now); a later reconnect tries auto: ofi+shm first again" \
  "no warning of the move to ofi+tcp"
echo "reconnect: over ofi+tcp after ofi+shm, with a warning"
# Shared memory again: the next reconnect returns to it.
restart_server
exec 3>&-  # the last invocation
rc=0
wait "$idle_client" || rc=$?
[ $rc = 0 ] || { cat "$naa_test_dir/client.log"; echo "FAIL: the invocation after the second restart failed ($rc)" >&2; exit 1; }
expect "warning: function code 3: the handle's connection to 127.0.0.1:$port is now over auto: ofi+shm, not auto: ofi+tcp as before (NAA_TRANSPORT=auto's choice for it now)" \
  "no return to ofi+shm"
echo "reconnect: back to ofi+shm when the NAA serves it again"

# The NAA does not come back: the failed reconnect's cause tells that shared memory was not it.
start_server
server=$!
port=$NAA_TEST_PORT
export NAA_SPEC="127.0.0.1:$port:3:1" NAA_CONNECT_TIMEOUT=$(scaled 2)
start_idle_clients 1 auto
kill "$server"
wait "$server" 2>/dev/null || :
exec 3>&-
if wait "$idle_client"; then cat "$naa_test_dir/client.log"; echo "FAIL: an invocation without an NAA succeeded" >&2; exit 1; fi
cat "$naa_test_dir/client.log"
grep -q "handle 0 after the pause: .*(naa_invoke: function code 3: cannot reconnect to 127.0.0.1:$port (.*NAA_CONNECT_TIMEOUT): .* (not over auto: ofi+shm: no same-host transport (shared memory) serves 127.0.0.1:$port now); the next naa_invoke tries again)" \
  "$naa_test_dir/client.log" || { echo "FAIL: naa_last_error does not say that shared memory was lost" >&2; exit 1; }
echo "reconnect: fails over ofi+tcp; naa_last_error names shared memory's loss"
