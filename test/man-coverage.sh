#!/bin/sh
# Every function that include/naa.h declares NAA_API must have its page man/NAME.3.
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
header=$srcdir/include/naa.h
[ -f "$header" ] || { echo "man-coverage: FAIL: $header not found"; exit 1; }
# One declaration per line that starts with NAA_API; the name is the identifier before '('.
functions=$(sed -n 's/^[[:space:]]*NAA_API[^(]*[^[:alnum:]_]\([[:alpha:]_][[:alnum:]_]*\)[[:space:]]*(.*/\1/p' "$header")
declared=$(grep -c '^[[:space:]]*NAA_API' "$header")
found=$(printf '%s\n' $functions | grep -c .)
if [ "$declared" -eq 0 ] || [ "$found" -ne "$declared" ]; then
  echo "man-coverage: FAIL: found $declared NAA_API declarations in $header but could parse" \
       "$found function names from them; update this script"
  exit 1
fi
missing=
for f in $functions; do
  [ -f "$srcdir/man/$f.3" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
  echo "man-coverage: FAIL: NAA_API functions without a man page in $srcdir/man:"
  for f in $missing; do echo "  $f (expected man/$f.3)"; done
  exit 1
fi
echo "man-coverage: all $found NAA_API functions have a page:" $functions
