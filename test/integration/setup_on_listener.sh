#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server sets a quick client up on its listening thread (Connection::settle): over ofi+tcp
# the thread that accepted the connection also answers the client's memory-region request
# when the server's recent clients sent theirs soon enough, and hands the connection over to a
# pool thread only then, so a warm naa_create meets no hand-over. --spin-us 200000 widens the
# wait for the request to 200 ms here, so that a loaded machine does not decide the count: each
# of naa-bench's creates must be set up so (with settle() doing nothing: none is).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server --transport ofi+tcp --spin-us 200000 --verbose 2> "$naa_test_dir/server.log"
NAA_TRANSPORT=ofi+tcp "$NAA_TOOLS/naa-bench/naa-bench" --host "$NAA_TEST_HOST" --port "$NAA_TEST_PORT" \
  --tests setup --sizes 1 --setup-iters 10 > "$naa_test_dir/bench" 2>&1 || { cat "$naa_test_dir/bench"; exit 1; }
connected=$(grep -c "connected$" "$naa_test_dir/server.log" || :)
settled=$(grep -c "set up on the listening thread" "$naa_test_dir/server.log" || :)
echo "naa-bench's connections: $connected; set up on the listening thread: $settled"
[ "$connected" -ge 11 ] || { echo "naa-bench made fewer connections than its creates" >&2; cat "$naa_test_dir/server.log" >&2; exit 1; }
[ "$settled" -eq "$connected" ] || { echo "not every quick client was set up on the listening thread" >&2; exit 1; }
