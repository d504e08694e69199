#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The profiling interface (pnaa(3)): test/profiling/count_calls.c, a tool that defines naa_*
# and calls pnaa_*, counts every call of examples/vecadd once, both linked into the program
# (test/profiling/vecadd_counted) and LD_PRELOADed into the unchanged example.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
preload=$NAA_BUILDDIR/test/profiling/.libs/libcount_calls.so
[ -f "$preload" ] || { echo "interpose: FAIL: $preload not built" >&2; exit 1; }
check() {  # how, then the command
  how=$1; shift
  NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 "$@" 1000 \
    >"$naa_test_dir/out" 2>"$naa_test_dir/err" || { cat "$naa_test_dir/out" "$naa_test_dir/err"; exit 1; }
  polls=$(sed -n 's/.*round 1 (naa_test, \([0-9]*\) polls).*/\1/p' "$naa_test_dir/out")
  want="count_calls: naa_create=1 naa_create_attr=0 naa_invoke=2 naa_test=$polls naa_wait=1 naa_waitall=0 naa_finalize=1 naa_strerror=0"
  got=$(grep '^count_calls:' "$naa_test_dir/err" || :)
  if [ "$got" != "$want" ]; then
    echo "interpose: FAIL ($how): expected"; echo "  $want"; echo "got"; echo "  ${got:-(no count_calls line)}"
    cat "$naa_test_dir/out" "$naa_test_dir/err"
    exit 1
  fi
  echo "interpose ($how): $got"
}
check linked "$NAA_BUILDDIR/test/profiling/vecadd_counted"
# Under ASan the sanitizer's runtime must be the first library loaded, before any LD_PRELOAD.
if [ -n "${ASAN_OPTIONS:-}" ]; then
  echo "interpose (LD_PRELOAD): not run under ASan (its runtime must come first in the library list)"
else
  LD_PRELOAD=$preload check LD_PRELOAD "$NAA_EXAMPLES/vecadd"
fi
