#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server --shm pgid refuses shm to a same-host client outside its process group; a client
# with NAA_TRANSPORT=auto then connects over the network, which the server serves it on,
# instead of failing; one that asked for ofi+shm by name is refused, saying why.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
# The server in a session (and so a process group) of its own; setsid does not fork here (the
# shell's background child leads no group), so the pid stays the server's.
printf '#!/bin/sh\nexec setsid "%s" "$@"\n' "$NAA_SERVER" >"$naa_test_dir/server-apart"
chmod +x "$naa_test_dir/server-apart"
NAA_SERVER=$naa_test_dir/server-apart
start_server --shm pgid
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2"
NAA_TIMEOUT=60
export NAA_SPEC NAA_TIMEOUT
NAA_TRANSPORT=auto NAA_LOG_LEVEL=info "$NAA_EXAMPLES/vecadd" 10 >"$naa_test_dir/out" 2>&1 ||
  { cat "$naa_test_dir/out"; echo "shm_pgid_fallback: FAIL: auto did not fall back to the network" >&2; exit 1; }
cat "$naa_test_dir/out"
grep -q "shm is served to its own process group only\"); connecting with ofi+tcp instead" "$naa_test_dir/out" ||
  { echo "shm_pgid_fallback: FAIL: no line saying why it used the network" >&2; exit 1; }
grep -q "all 20 elements correct" "$naa_test_dir/out" || { echo "shm_pgid_fallback: FAIL: wrong result" >&2; exit 1; }
if NAA_TRANSPORT=ofi+shm "$NAA_EXAMPLES/vecadd" 10 >"$naa_test_dir/out" 2>&1; then
  cat "$naa_test_dir/out"; echo "shm_pgid_fallback: FAIL: ofi+shm served outside the group" >&2; exit 1
fi
grep -q "refused by the NAA (\"naa-server: shm is served to its own process group only\")" "$naa_test_dir/out" ||
  { cat "$naa_test_dir/out"; echo "shm_pgid_fallback: FAIL: no reason for the refusal" >&2; exit 1; }
echo "shm_pgid_fallback: auto fell back to ofi+tcp; ofi+shm by name refused with the reason"
