#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A naa-server started with no transport option serves everything it can, on one port: verbs
# (the NAAICE NAAs' transport), ofi+tcp and ofi+shm. Clients of each, and one with
# NAA_TRANSPORT=auto (which takes shm: every address of this VM is on this host), meet it in
# the same run, and each learns from the accept that it needs no pacing. A build without
# libfabric serves verbs alone, which auto then takes.
set -eu
unset NAA_TRANSPORT
. "$NAA_SRCDIR/test/integration/lib.sh"
NAA_LOG_LEVEL=info start_server 2> "$naa_test_dir/server.log"
cat "$naa_test_dir/server.log"
transports=verbs auto_takes=verbs
if have_provider tcp; then transports="$transports ofi+tcp"; fi
if have_provider shm; then transports="$transports ofi+shm" auto_takes=ofi+shm; fi
for transport in $transports; do
  grep -q "listening on $NAA_TEST_HOST:$NAA_TEST_PORT with $transport" "$naa_test_dir/server.log"
done
export NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_LOG_LEVEL=info
for transport in $transports auto; do
  NAA_TRANSPORT=$transport "$NAA_EXAMPLES/vecadd" 100000 > "$naa_test_dir/$transport" 2>&1
  cat "$naa_test_dir/$transport"
  grep -q "all 200000 elements correct" "$naa_test_dir/$transport"
  grep -q "identifies itself as libnaa-server/1: no pacing" "$naa_test_dir/$transport"
  [ $transport = auto ] || grep -q "connected to $NAA_TEST_HOST:$NAA_TEST_PORT via $transport" "$naa_test_dir/$transport"
done
grep -q "connected to $NAA_TEST_HOST:$NAA_TEST_PORT via auto: $auto_takes" "$naa_test_dir/auto"
echo "default naa-server: $transports and auto ($auto_takes) clients served on port $NAA_TEST_PORT"
