#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A naa-server that served a client over ofi+shm and stops cleanly (SIGTERM) leaves nothing of
# its own in /dev/shm: neither its regions nor the bell page of the endpoint it keeps spare
# for the next client (PID-....bell).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
start_server
server=${naa_test_pids##* }
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TRANSPORT=ofi+shm NAA_TIMEOUT=60 \
  "$NAA_EXAMPLES/vecadd" 10 >"$naa_test_dir/out" 2>&1 || { cat "$naa_test_dir/out"; exit 1; }
ls /dev/shm | grep "^$server-" >"$naa_test_dir/before" || :
[ -s "$naa_test_dir/before" ] || { echo "clean_stop_shm: FAIL: no shm object of naa-server $server to begin with" >&2; exit 1; }
stops_within "$server" "$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" 'BEGIN { print int(10000 * s) }')" "" || exit 1
left=$(ls /dev/shm | grep "^$server-" || :)
[ -z "$left" ] || { echo "clean_stop_shm: FAIL: naa-server $server left in /dev/shm: $left" >&2; exit 1; }
echo "clean_stop_shm: $(wc -l <"$naa_test_dir/before") objects of naa-server $server while it ran, none after its stop"
