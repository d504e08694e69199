#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_TRANSPORT=auto gives a shm connection of its choice a few seconds, then connects over the
# network with a warning naming the cause; a named ofi+shm fails instead. The peer is real: a
# naa-server listening with TCP alone, and a process of this user holding the shm listener's
# name for that port (its object, flock'd, as a live listener holds it) that never answers:
# the object is empty, so libfabric's shm finds no region to take the request and keeps it
# unsent, which touches nothing of the holder's (no mapping to crash on).
# A refusal is an answer, not a failure: no fallback after it.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
command -v flock > /dev/null || { echo "SKIP: flock(1) is not installed"; exit 77; }
start_server --transport ofi+tcp
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2"
name=/dev/shm/naa-$(id -u)-$NAA_TEST_PORT
naa_test_files="$naa_test_files $name"
# One process, so that the kill at exit releases the name: sleep inherits the locked descriptor.
sh -c 'exec 9> "$1"; flock 9; exec sleep 300' sh "$name" &
naa_test_pids="$naa_test_pids $!"
i=0
while flock -n "$name" true; do
  i=$((i + 1)); [ $i -le 1000 ] || { echo "FAIL: flock never took $name" >&2; exit 1; }
  sleep 0.01
done
grep_log() { grep -q "$1" "$naa_test_dir/$2" || { cat "$naa_test_dir/$2"; echo "FAIL: no '$1' in $2" >&2; exit 1; }; }

# 3 s for shm (the limit, below a quarter of NAA_CONNECT_TIMEOUT), then TCP well within the rest.
unset NAA_TRANSPORT
t0=$(date +%s)
NAA_LOG_LEVEL=info NAA_CONNECT_TIMEOUT=40 "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/auto" 2>&1 ||
  { cat "$naa_test_dir/auto"; echo "FAIL: auto did not fall back to TCP" >&2; exit 1; }
took=$(($(date +%s) - t0))
grep_log "NAA_TRANSPORT=auto: ofi+shm for 127.0.0.1:$NAA_TEST_PORT" auto
grep_log "warning: NAA_TRANSPORT=auto: no shared-memory connection to 127.0.0.1:$NAA_TEST_PORT within 3.00 s (.*nothing takes connection requests there.*); connecting with ofi+tcp instead" auto
grep_log "connected to 127.0.0.1:$NAA_TEST_PORT via auto: ofi+tcp" auto
grep_log "all 2000 elements correct" auto
[ "$took" -le 20 ] || { cat "$naa_test_dir/auto"; echo "FAIL: the fallback took $took s" >&2; exit 1; }
echo "auto: shm to a holder that never answers, then ofi+tcp ($took s)"

# A short NAA_CONNECT_TIMEOUT: shm gets a quarter of what is left of it (naa_create's deadline
# counts from the call), a long NAA_TIMEOUT notwithstanding.
NAA_LOG_LEVEL=info NAA_CONNECT_TIMEOUT=4 NAA_TIMEOUT=100 "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/short" 2>&1 ||
  { cat "$naa_test_dir/short"; echo "FAIL: auto with NAA_CONNECT_TIMEOUT=4 did not fall back" >&2; exit 1; }
grep_log "no shared-memory connection to 127.0.0.1:$NAA_TEST_PORT within [01]\.[0-9][0-9] s" short

# Named, shm's failure is the answer.
if NAA_TRANSPORT=ofi+shm NAA_CONNECT_TIMEOUT=2 "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/named" 2>&1; then
  cat "$naa_test_dir/named"; echo "FAIL: NAA_TRANSPORT=ofi+shm connected to a holder that never answers" >&2; exit 1
fi
grep_log "nothing takes connection requests there" named
if grep -q "instead" "$naa_test_dir/named"; then cat "$naa_test_dir/named"; echo "FAIL: named ofi+shm fell back" >&2; exit 1; fi
echo "NAA_TRANSPORT=ofi+shm: fails, no fallback"

# A refusal over shm is the NAA's answer: auto does not ask again over TCP.
NAA_AUTH_KEY=the-right-key start_server
if NAA_AUTH_KEY=a-wrong-key NAA_LOG_LEVEL=info NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" \
    "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/refused" 2>&1; then
  cat "$naa_test_dir/refused"; echo "FAIL: a client with the wrong key connected" >&2; exit 1
fi
grep_log "NAA_TRANSPORT=auto: ofi+shm for 127.0.0.1:$NAA_TEST_PORT" refused
grep_log "refused by the NAA" refused
if grep -q "instead" "$naa_test_dir/refused"; then cat "$naa_test_dir/refused"; echo "FAIL: auto fell back after a refusal" >&2; exit 1; fi
echo "auto, refused over shm: no fallback"
