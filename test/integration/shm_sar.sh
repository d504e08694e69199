#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where shm cannot copy across processes (process_vm_writev denied: Yama's ptrace_scope 1, the
# default of some distributions; here forced with FI_SHM_DISABLE_CMA), it moves a transfer
# larger than its inject size through segments that need both sides' progress, and no post of
# ours marks them. After a pause that sends naa-server's connection to sleep on its bell, three
# 16 MiB invocations (add1 on one region that is input and output) must each bring every byte
# back one higher: a transfer in segments both ways, begun against a sleeper. That the side
# awaiting the other rings it again while it sleeps (lib/transport/ofi/ofi_endpoint.hpp,
# awaiting_peer_) is proven by test_shm_nudge, which counts the sleeper's wake-ups; the time
# of each invocation is printed as a figure (doc/transport.md), never judged: it is the
# scheduler's to give, and on a loaded machine a few hundred hand-overs of a core take seconds.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
export FI_SHM_DISABLE_CMA=1
start_server
NAA_TRANSPORT=ofi+shm NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:1:1" \
  "$NAA_BUILDDIR/test/integration/pause_roundtrip" 1500 3 16777216 > "$naa_test_dir/client.log" 2>&1 ||
  { cat "$naa_test_dir/client.log"; echo "FAIL: over ofi+shm without CMA, a 16 MiB invocation after a pause failed" >&2; exit 1; }
cat "$naa_test_dir/client.log"
slowest=$(sed -n 's/^round trip after the pause: \([0-9.]*\) ms$/\1/p' "$naa_test_dir/client.log" | sort -g | tail -1)
echo "slowest 16 MiB invocation after a 1.5 s pause, shm without CMA: $slowest ms (a figure, not judged)"
