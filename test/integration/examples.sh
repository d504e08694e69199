#!/bin/sh
# The README's demo path as a test: a naa-server on loopback and examples/vecadd against it.
set -eu
: "${NAA_SERVER:?run through make check}" "${NAA_EXAMPLES:?run through make check}"
dir=$(mktemp -d /tmp/naa-examples-XXXXXX)
"$NAA_SERVER" --address 127.0.0.1 --port 0 --ready-file "$dir/port" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
i=0
until [ -s "$dir/port" ]; do
  i=$((i + 1)); [ $i -le 1000 ] || { echo "naa-server did not start" >&2; exit 1; }
  kill -0 $server 2>/dev/null || { echo "naa-server exited" >&2; exit 1; }
  sleep 0.01
done
NAA_SPEC="127.0.0.1:$(cat "$dir/port"):10:2" NAA_TIMEOUT=60 "$NAA_EXAMPLES/vecadd" 1000000 | tee "$dir/out"
grep -q "all 2000000 elements correct" "$dir/out"
