#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Same-host clients as srun's tasks make them, over ofi+shm: NAA_TEST_SHM_CLIENTS (default 6)
# processes connect to one naa-server at the same moment and each runs vecadd; then a client
# whose shm name is taken by the leftover region of a killed process that had its pid (pids
# wrap around, and killed clients leave their regions in /dev/shm): libfabric 1.17 refuses
# that name once, and the client must still connect.
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

# The leftover: a copy of a live region (the server's listener, for the layout of this
# libfabric) named as this client's first endpoint will be, PID:UID:0, recording the client's
# pid at offset 4 (struct smr_region: version, resv, flags, pid), as the region of a killed
# process that had the same pid does. exec keeps the pid, through libtool's wrapper too.
region=/dev/shm/naa-$(id -u)-$NAA_TEST_PORT
[ -f "$region" ] || { echo "FAIL: no shm region $region for the server's listener" >&2; exit 1; }
NAA_LOG_LEVEL=info sh -c '
  leftover=/dev/shm/$$:$(id -u):0
  cp "$1" "$leftover"
  printf "$(printf "\\%03o\\%03o\\%03o\\%03o" $(($$ & 255)) $(($$ >> 8 & 255)) \
    $(($$ >> 16 & 255)) $(($$ >> 24 & 255)))" | dd of="$leftover" bs=1 seek=4 conv=notrunc 2>/dev/null
  echo "leftover region $leftover"
  exec "$2" 1000' sh "$region" "$NAA_EXAMPLES/vecadd" > "$naa_test_dir/leftover" 2>&1 || true
cat "$naa_test_dir/leftover"
leftover=$(sed -n 's/^leftover region //p' "$naa_test_dir/leftover")
[ -n "$leftover" ] && rm -f "$leftover"
grep -q "all 2000 elements correct" "$naa_test_dir/leftover" ||
  { echo "FAIL: a client whose shm name a dead process's region held did not connect" >&2; exit 1; }
echo "a client whose shm name a dead process's region held: connected"
