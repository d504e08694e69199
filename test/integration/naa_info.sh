#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-info lists the transports and the NAAs of NAA_SPEC; --ping tells reachable from not.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
info="$NAA_TOOLS/naa-info/naa-info"
start_server
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 9)
export NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2,$NAA_TEST_HOST:$dead:3:1" NAA_TIMEOUT=10

"$info" > "$naa_test_dir/plain"
cat "$naa_test_dir/plain"
grep -q "^libnaa " "$naa_test_dir/plain"
grep -q "NAA_TRANSPORT=${NAA_TRANSPORT:-auto} -> " "$naa_test_dir/plain"
grep -q "function code  10  $NAA_TEST_HOST:$NAA_TEST_PORT  2 input(s)  (NAA_SPEC entry 1)" "$naa_test_dir/plain"
grep -q "function code   3  $NAA_TEST_HOST:$dead  1 input(s)  (NAA_SPEC entry 2)" "$naa_test_dir/plain"

"$info" --ping --function 10 | tee "$naa_test_dir/ping10"
grep -q "reachable, connect + MRSP" "$naa_test_dir/ping10"

if "$info" --ping > "$naa_test_dir/pingall" 2>&1; then
  echo "naa-info --ping succeeded although an NAA is unreachable" >&2; exit 1
fi
cat "$naa_test_dir/pingall"
grep -q "UNREACHABLE" "$naa_test_dir/pingall"
