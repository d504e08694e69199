#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where shm cannot copy across processes (process_vm_writev denied: Yama's ptrace_scope 1, the
# default of some distributions; here forced with FI_SHM_DISABLE_CMA), it moves a transfer
# larger than its inject size through segments that need both sides' progress, and no post of
# ours marks them. After a pause, a 16 MiB invocation must still be answered within
# NAA_TEST_SAR_MS (default 1000) ms: a naa-server connection asleep on its bell, rung only by
# posts, would take seconds, one that napped about as long as the bound or more. The side that
# awaits the other rings it again while it sleeps (lib/transport/ofi/ofi_endpoint.hpp,
# awaiting_peer_), well within the bound (doc/performance.md).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
limit=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" -v m="${NAA_TEST_SAR_MS:-1000}" 'BEGIN { print m * s }')
export FI_SHM_DISABLE_CMA=1
start_server
NAA_TRANSPORT=ofi+shm NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1" \
  "$NAA_BUILDDIR/test/integration/pause_roundtrip" 1500 3 16777216 > "$naa_test_dir/client.log" 2>&1 ||
  { cat "$naa_test_dir/client.log"; echo "FAIL: the client failed" >&2; exit 1; }
cat "$naa_test_dir/client.log"
slowest=$(sed -n 's/^round trip after the pause: \([0-9.]*\) ms$/\1/p' "$naa_test_dir/client.log" | sort -g | tail -1)
if [ -z "$slowest" ] || awk -v s="$slowest" -v m="$limit" 'BEGIN { exit !(s > m) }'; then
  echo "FAIL: over ofi+shm without CMA, a 16 MiB invocation after a pause took $slowest ms (more than $limit)" >&2
  exit 1
fi
echo "slowest 16 MiB invocation after a 1.5 s pause, shm without CMA: $slowest ms"
