#!/bin/sh
# The README's demo path as a test: a naa-server on loopback and an example against it,
# examples/vecadd or the one named as argument (examples_fortran.sh runs vecadd_f).
set -eu
: "${NAA_SERVER:?run through make check}" "${NAA_EXAMPLES:?run through make check}"
example=${1:-vecadd}
. "$(dirname "$0")/naa_server.sh"
dir=$(mktemp -d /tmp/naa-examples-XXXXXX)
trap 'stop_naa_server; rm -rf "$dir"' EXIT
start_naa_server "$NAA_SERVER" "$dir"
rc=0
NAA_SPEC="127.0.0.1:$naa_port:10:2" NAA_TIMEOUT=60 "$NAA_EXAMPLES/$example" 1000000 >"$dir/out" || rc=$?
cat "$dir/out"
[ $rc -eq 0 ] || { echo "$example exited with status $rc" >&2; exit 1; }
grep -q "all 2000000 elements correct" "$dir/out"
