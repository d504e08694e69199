#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The transports as modules (lib/transport/module.hpp): libnaa.so links neither libfabric nor
# rdma-core; a program that opens no transport, and naa-info --version, load no module; a
# missing module is NAA_ERR_UNSUPPORTED naming its file and the loader's message, in
# naa_last_error, in the log and in naa-info's listing; a stale one is refused naming both
# versions.
set -u
b=$NAA_BUILDDIR
if [ "${NAA_BUILTIN_TRANSPORTS:-no}" = yes ]; then
  echo "modules: SKIP: configured with --enable-builtin-transports, the transports are part of libnaa"
  exit 77
fi
fail=0
bad() { echo "modules: FAIL: $*"; fail=1; }

# libnaa.so's NEEDED entries: none of the transports' libraries.
needed=$(readelf -d "$b/lib/.libs/libnaa.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || bad "readelf -d found no NEEDED entry in $b/lib/.libs/libnaa.so"
for lib in $needed; do
  case $lib in *fabric* | *ibverbs* | *rdmacm*) bad "libnaa.so needs $lib" ;; esac
done
echo "modules: libnaa.so needs:" $needed

# The modules built here.
modules=
[ -f "$b/lib/.libs/libnaa-ofi.so" ] && modules="$modules ofi"
[ -f "$b/lib/.libs/libnaa-verbs.so" ] && modules="$modules verbs"
[ -n "$modules" ] || bad "no module in $b/lib/.libs"

# Nothing of a transport is mapped by a program that opens none (ld.so's list of what it maps).
for run in "$b/test/integration/strerror_only" "$b/tools/naa-info/naa-info --version"; do
  maps=$(LD_DEBUG=files $run 2>&1 >/dev/null | sed -n 's/.*file=\([^ ]*\).*/\1/p' | sort -u)
  loaded=$(printf '%s\n' "$maps" | grep -E 'libnaa-|fabric|ibverbs|rdmacm')
  [ -z "$loaded" ] || bad "$run loads" $loaded
done

# A missing module: the error, its cause naming the file and dlopen's message, a log line.
for m in $modules; do
  case $m in ofi) t=ofi+tcp ;; verbs) t=verbs ;; esac
  out=$(NAA_MODULE_DIR=/nonexistent NAA_CONNECT_TIMEOUT=5 NAA_RECONNECT=0 \
        "$b/test/integration/create_cause" 127.0.0.1:1 "$t" 2>"$b/test/integration/modules.err")
  echo "modules: $t with NAA_MODULE_DIR=/nonexistent: $out"
  case $out in
    "12 "*"/nonexistent/libnaa-$m.so"*"No such file or directory"*) ;;
    *) bad "$t without its module: expected 12 (NAA_ERR_UNSUPPORTED) naming /nonexistent/libnaa-$m.so and dlopen's message, got: $out" ;;
  esac
  grep -q "transport module: cannot load /nonexistent/libnaa-$m.so" "$b/test/integration/modules.err" ||
    bad "$t without its module: no log line naming it: $(cat "$b/test/integration/modules.err")"
  listing=$(NAA_MODULE_DIR=/nonexistent "$b/tools/naa-info/naa-info" 2>/dev/null)
  printf '%s\n' "$listing" | grep -q "unavailable: transport .*cannot load /nonexistent/libnaa-$m.so" ||
    bad "naa-info without the $m module does not say why: $listing"
  # Its runtime parameters come from its registry row in libnaa: listed without the module.
  NAA_MODULE_DIR=/nonexistent "$b/tools/naa-info/naa-info" --params 2>/dev/null |
    grep -q "^    transport: $m (" || bad "naa-info --params without the $m module lists none of its parameters"
  listing=$("$b/tools/naa-info/naa-info" 2>/dev/null)
  printf '%s\n' "$listing" | grep -q "module: .*/libnaa-$m.so" ||
    bad "naa-info does not name the $m module's file: $listing"
done
rm -f "$b/test/integration/modules.err"

# A module of another libnaa (another version, another module ABI) is refused, naming both,
# before anything in it runs (its bind and entry abort).
if [ -n "${NAA_STALE_MODULE:-}" ]; then
  stale=$b/test/integration/modules.stale
  rm -rf "$stale" && mkdir -p "$stale"
  for m in $modules; do cp "$NAA_STALE_MODULE" "$stale/libnaa-$m.so"; done
  set -- $modules
  case $1 in ofi) t=ofi+tcp ;; verbs) t=verbs ;; esac
  out=$(NAA_MODULE_DIR=$stale "$b/test/integration/create_cause" 127.0.0.1:1 "$t" 2>/dev/null)
  echo "modules: $t with a stale module: $out"
  case $out in
    "12 "*"$stale/libnaa-$1.so is a module of libnaa 0.0.1-stale (module ABI "*"), this is libnaa "*) ;;
    *) bad "a stale $1 module: expected 12 (NAA_ERR_UNSUPPORTED) naming both versions, got: $out" ;;
  esac
  rm -rf "$stale"
fi

[ "$fail" = 0 ] || exit 1
echo "modules: ok (modules:$modules)"
