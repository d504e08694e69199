#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_TRANSPORT=auto loads the modules of the transports it tries, not of every row: a
# program whose one naa_create reaches a same-host server over shm, or over TCP, never loads
# libnaa-verbs.so on a machine without an RDMA device (ld.so's list of what it maps). The verbs
# suite checks the converse, that auto to a verbs NAA never loads libnaa-ofi.so
# (test/rdma/auto.sh). Its one naa_create decides once: the choice made to prepare the
# transport is the one its connection takes.
set -eu
if [ "${NAA_BUILTIN_TRANSPORTS:-no}" = yes ]; then
  echo "auto_modules: SKIP: configured with --enable-builtin-transports, the transports are part of libnaa"
  exit 77
fi
[ -f "$NAA_BUILDDIR/lib/.libs/libnaa-verbs.so" ] || {
  echo "auto_modules: SKIP: no verbs module built, none that auto could load needlessly"
  exit 77
}
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  echo "auto_modules: SKIP: this machine has an RDMA device, which auto tries for a TCP NAA"
  exit 77
fi
. "$NAA_SRCDIR/test/integration/lib.sh"
unset NAA_TRANSPORT

# vecadd's modules under auto for the server on NAA_TEST_PORT; "via" is the transport it used.
modules_of() {
  LD_DEBUG=files LD_DEBUG_OUTPUT="$naa_test_dir/ld" NAA_LOG_LEVEL=debug \
    NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/$1" 2>&1 ||
    { cat "$naa_test_dir/$1"; echo "auto_modules: FAIL: vecadd over $1" >&2; exit 1; }
  grep -q "all 2000 elements correct" "$naa_test_dir/$1"
  via=$(grep -o 'NAA_TRANSPORT=auto: [a-z+]* for' "$naa_test_dir/$1" | head -n 1 | cut -d' ' -f2)
  loaded=$(cat "$naa_test_dir"/ld.* | sed -n 's/.*file=[^ ]*\(libnaa-[a-z]*\.so\).*/\1/p' | sort -u | tr '\n' ' ')
  rm -f "$naa_test_dir"/ld.*
  decisions=$(grep -c "NAA_TRANSPORT=auto: decided on" "$naa_test_dir/$1" || true)
  echo "auto_modules: $1: auto chose ${via:-?} ($decisions decision(s)); modules loaded: ${loaded:-none}"
  [ "$decisions" = 1 ] || { echo "auto_modules: FAIL: auto decided $decisions times for one naa_create" >&2; exit 1; }
  case $loaded in
    *libnaa-verbs.so*) echo "auto_modules: FAIL: auto over $1 loaded libnaa-verbs.so" >&2; exit 1 ;;
  esac
  case $loaded in
    *libnaa-ofi.so*) ;;
    *) echo "auto_modules: FAIL: auto over $1 did not load libnaa-ofi.so" >&2; exit 1 ;;
  esac
}

if have_provider shm; then
  start_server
  modules_of shm
  [ "$via" = ofi+shm ] || { echo "auto_modules: FAIL: auto chose '$via', not ofi+shm" >&2; exit 1; }
else
  echo "auto_modules: libfabric here has no usable shm provider: the shm case is not run"
fi
start_server --transport ofi+tcp
modules_of tcp
[ "$via" = ofi+tcp ] || { echo "auto_modules: FAIL: auto chose '$via', not ofi+tcp" >&2; exit 1; }
echo "auto_modules: ok"
