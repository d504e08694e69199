#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Same-host clients as srun's tasks make them, over ofi+shm: NAA_TEST_SHM_CLIENTS (default 6)
# processes connect to one naa-server at the same moment and each runs vecadd. (A client with
# the pid of a killed process whose region was left behind: shm_pid_reuse.sh's naming covers
# it, no endpoint of libnaa's takes a name an earlier process had.)
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
export NAA_TRANSPORT=ofi+shm
start_server
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2"
n=${NAA_TEST_SHM_CLIENTS:-6}

# Each client waits for the same file, so that their requests meet at the server.
i=0
pids=
while [ $i -lt "$n" ]; do
  i=$((i + 1))
  sh -c 'while [ ! -e "$1" ]; do sleep 0.01; done; exec "$2" 1000' sh "$naa_test_dir/go" \
    "$NAA_EXAMPLES/vecadd" > "$naa_test_dir/client$i" 2>&1 &
  pids="$pids $!"
done
touch "$naa_test_dir/go"
failed=0
for p in $pids; do wait "$p" || failed=$((failed + 1)); done
correct=$(cat "$naa_test_dir"/client* | grep -c "all 2000 elements correct" || true)
if [ "$failed" -ne 0 ] || [ "$correct" -ne "$n" ]; then
  for f in "$naa_test_dir"/client*; do echo "--- $f"; cat "$f"; done
  echo "FAIL: $correct of $n clients connecting at once over ofi+shm got correct results" >&2
  exit 1
fi
echo "$n clients connecting at once over ofi+shm: all correct"
