#!/bin/sh
# libnaa.so exports exactly the functions its public headers declare with NAA_API (issue: seven
# internal naa_conf_* symbols once leaked through a naa_* wildcard in lib/libnaa.map).
set -eu
so=$NAA_BUILDDIR/lib/.libs/libnaa.so
[ -f "$so" ] || { echo "no $so (shared library not built): skipped"; exit 77; }
command -v nm > /dev/null || { echo "nm not found (binutils): skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u > "$tmp/exported"
sed -n 's/^NAA_API[^(]*[ *]\([a-z_][a-z0-9_]*\) *(.*/\1/p' "$NAA_SRCDIR"/include/*.h | sort -u > "$tmp/declared"
echo "exported by libnaa.so:"; sed 's/^/  /' "$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "FAIL: the exports differ from the NAA_API declarations of include/*.h (- declared only, + exported only)"
  exit 1
fi
echo "libnaa.so exports exactly the $(wc -l < "$tmp/declared") functions declared with NAA_API"
