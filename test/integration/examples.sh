#!/bin/sh
# The README's demo path as a test: a naa-server on loopback and examples/vecadd against it.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 "$NAA_EXAMPLES/vecadd" 1000000 | tee "$naa_test_dir/out"
grep -q "all 2000000 elements correct" "$naa_test_dir/out"
