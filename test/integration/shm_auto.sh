#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A same-host naa-server started with no option listens with shm too; vecadd reaches it with
# NAA_TRANSPORT=ofi+shm, and auto chooses shm for it (naa-info says so per NAA, the client's log
# line too) but TCP for a same-host server that does not listen with shm.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
start_server
grep_log() { grep -q "$1" "$naa_test_dir/$2" || { cat "$naa_test_dir/$2"; echo "no '$1' in $2" >&2; exit 1; }; }

NAA_TRANSPORT=ofi+shm NAA_LOG_LEVEL=info NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 \
  "$NAA_EXAMPLES/vecadd" 1000000 > "$naa_test_dir/shm" 2>&1
cat "$naa_test_dir/shm"
grep_log "all 2000000 elements correct" shm
grep_log "via ofi+shm" shm

unset NAA_TRANSPORT
NAA_LOG_LEVEL=info NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/auto" 2>&1
grep_log "NAA_TRANSPORT=auto: ofi+shm for 127.0.0.1:$NAA_TEST_PORT" auto
NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" "$NAA_TOOLS/naa-info/naa-info" > "$naa_test_dir/info"
grep_log "127.0.0.1:$NAA_TEST_PORT  2 input(s)  (NAA_SPEC entry 1)  via ofi+shm" info

# A short NAA_CONNECT_TIMEOUT bounds the connection, whatever auto tries, and not libfabric's
# initialisation of its providers at the process's first query (up to seconds on a loaded host):
# vecadd's one naa_create, its process's first, connects to the healthy server.
short=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" 'BEGIN { printf "%.2f", 0.2 * s }')
NAA_LOG_LEVEL=info NAA_CONNECT_TIMEOUT=$short NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" "$NAA_EXAMPLES/vecadd" 1000 \
  > "$naa_test_dir/short" 2>&1 ||
  { cat "$naa_test_dir/short"; echo "FAIL: naa_create with NAA_CONNECT_TIMEOUT=$short failed against a healthy server" >&2; exit 1; }
grep_log "initialised its providers in" short
grep_log "all 2000 elements correct" short
echo "NAA_CONNECT_TIMEOUT=$short: connected ($(grep -o 'via auto: [a-z+]*' "$naa_test_dir/short"))"

tcp_port=$NAA_TEST_PORT
start_server --transport ofi+tcp
NAA_LOG_LEVEL=info NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/tcp" 2>&1
grep_log "NAA_TRANSPORT=auto: ofi+tcp for 127.0.0.1:$NAA_TEST_PORT" tcp
grep_log "all 2000 elements correct" tcp
echo "auto: ofi+shm for the server on port $tcp_port, ofi+tcp for the tcp-only one on $NAA_TEST_PORT"

# A second server of this user on another address with the shm server's port: the shm name is
# taken, so it serves over TCP alone and says why, rather than failing to start.
shm_port=$tcp_port
start_server --address 127.0.0.2 --port "$shm_port" 2> "$naa_test_dir/second"
grep_log "not listening with ofi+shm on port $shm_port" second
NAA_TRANSPORT=ofi+tcp NAA_SPEC="127.0.0.2:$shm_port:10:2" "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/second-vecadd" 2>&1
grep_log "all 2000 elements correct" second-vecadd
echo "a second server on 127.0.0.2:$shm_port serves over tcp without shm"

# A stopped server, whose shm queue never drains: the client (ofi+shm by name: auto would turn
# to TCP) gives up within its NAA_CONNECT_TIMEOUT (3 s here, plus start-up) and naps rather than spins
# while its request cannot be posted.
start_server
stopped=$!
stopped_port=$NAA_TEST_PORT
kill -STOP "$stopped"
cat > "$naa_test_dir/client.sh" <<EOF
echo \$\$ > "$naa_test_dir/client.pid"
exec env NAA_TRANSPORT=ofi+shm NAA_SPEC="127.0.0.1:$stopped_port:10:2" NAA_CONNECT_TIMEOUT=3 "$NAA_EXAMPLES/vecadd" 1000
EOF
t0=$(date +%s)
user=$(bash -c 'TIMEFORMAT=%U; time sh "$0" > /dev/null 2>&1' "$naa_test_dir/client.sh" 2>&1 | tail -n 1)
took=$(($(date +%s) - t0))
echo "a client of a stopped shm server: gave up after ${took} s with ${user} s of CPU"
[ "$took" -le 6 ] || { echo "the client took ${took} s, past its 3 s NAA_CONNECT_TIMEOUT" >&2; exit 1; }
awk -v u="$user" 'BEGIN { exit !(u < 1.0) }' || { echo "the client spun: ${user} s of CPU" >&2; exit 1; }
# The stopped server maps that client's region when it reads the request, and libfabric 1.17's
# shm crashes it if the region is gone: so the client left its endpoint open (naa(7), SECURITY),
# and a server that starts meanwhile, removing what dead processes left in /dev/shm, keeps it.
client=$(cat "$naa_test_dir/client.pid")
shm_regions "$client"
regions=$naa_regions
[ -n "$regions" ] || { ls -l /dev/shm; echo "FAIL: the client that gave up (pid $client) left no region" >&2; exit 1; }
resume_after_sweep "$stopped" "$stopped_port" $regions
