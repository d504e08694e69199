#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A connection request over ofi+shm from a kept endpoint, made before the server last read its
# queue: the server is stopped with the request in its queue, the client gives up and exits.
# A server starting meanwhile, which removes what dead processes left in /dev/shm, keeps that
# endpoint's region, because the client stamped it when it queued the request
# (shm/leftovers.hpp): the stopped server maps the region once it reads the request, and
# libfabric 1.17's shm crashes it if the region is gone. Skipped (77) without the Python
# package (the client needs two handles in turn, to two servers, in one process).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
. "$NAA_SRCDIR/test/python/lib.sh"
require_shm
python_site
uid=$(id -u)
start_server
first=$NAA_TEST_PORT
start_server
stopped=$!
second=$NAA_TEST_PORT

# The client: a handle to the first server, closed (its endpoint kept for the next one,
# NAA_SHM_IDLE_ENDPOINTS), then, once told, one to the second.
cat > "$naa_test_dir/client.py" <<'EOF'
import array, os, sys, time
import naa
first, second, ready, go = sys.argv[1:5]
a, b, c = array.array("d", [1.0] * 8), array.array("d", [2.0] * 8), array.array("d", [0.0] * 8)
with naa.Handle(10, inputs=[a, b], outputs=[c], naa="127.0.0.1:" + first, transport="ofi+shm") as h:
    h.invoke()
    h.wait()
assert list(c) == [3.0] * 8, list(c)
open(ready, "w").write(str(os.getpid()))
while not os.path.exists(go):
    time.sleep(0.01)
try:
    naa.Handle(10, inputs=[a, b], outputs=[c], naa="127.0.0.1:" + second, transport="ofi+shm")
    print("connected to the stopped server")
except naa.Error as e:
    print("gave up:", e)
EOF
NAA_SHM_IDLE_ENDPOINTS=2 NAA_CONNECT_TIMEOUT=3 "$python" "$naa_test_dir/client.py" "$first" "$second" \
  "$naa_test_dir/ready" "$naa_test_dir/go" > "$naa_test_dir/client" 2>&1 &
client_job=$!
naa_test_pids="$naa_test_pids $client_job"
i=0
until [ -s "$naa_test_dir/ready" ]; do
  i=$((i + 1)); [ $i -le 6000 ] || { cat "$naa_test_dir/client"; echo "FAIL: the client's first handle did not end" >&2; exit 1; }
  kill -0 $client_job 2>/dev/null || { cat "$naa_test_dir/client"; echo "FAIL: the client exited" >&2; exit 1; }
  sleep 0.01
done
client=$(cat "$naa_test_dir/ready")
shm_regions "$client"
kept=$naa_regions
[ -n "$kept" ] || { echo "FAIL: the client (pid $client) has no shm region" >&2; exit 1; }

# The second server stamps its object before each read of its queue, once a second at most
# (and looks at least every 2 s): wait until it has done so after the kept region's last stamp.
i=0
for r in $kept; do
  until [ -n "$(find "/dev/shm/naa-$uid-$second" -newer "/dev/shm/$r")" ]; do
    i=$((i + 1)); [ $i -le 6000 ] || { echo "FAIL: the second server read no queue for a minute" >&2; exit 1; }
    sleep 0.01
  done
done
kill -STOP "$stopped"
touch "$naa_test_dir/go"
wait $client_job || { cat "$naa_test_dir/client"; echo "FAIL: the client failed" >&2; exit 1; }
cat "$naa_test_dir/client"
grep -q "gave up" "$naa_test_dir/client" || { echo "FAIL: the client did not give up" >&2; exit 1; }
shm_regions "$client"
now=$naa_regions
[ "$now" = "$kept" ] ||
  { echo "FAIL: the second handle did not take the kept endpoint ($kept), the client has $now" >&2; exit 1; }

resume_after_sweep "$stopped" "$second" $kept
