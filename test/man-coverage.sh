#!/bin/sh
# Every function that include/naa.h declares NAA_API, and include/naaice_ap2.h NAAICE_API, must
# have its page: man/NAME.3, or a section 3 page that lists NAME in its NAME section (.Nm;
# make install links NAME.3 to it).
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
all=
for pair in naa.h:NAA_API naaice_ap2.h:NAAICE_API; do
  header=$srcdir/include/${pair%%:*}
  macro=${pair#*:}
  [ -f "$header" ] || { echo "man-coverage: FAIL: $header not found"; exit 1; }
  # One declaration per line that starts with the macro; the name is the identifier before '('.
  functions=$(sed -n "s/^[[:space:]]*$macro[^(]*[^[:alnum:]_]\([[:alpha:]_][[:alnum:]_]*\)[[:space:]]*(.*/\1/p" "$header")
  declared=$(grep -c "^[[:space:]]*$macro " "$header")
  found=$(printf '%s\n' $functions | grep -c .)
  if [ "$declared" -eq 0 ] || [ "$found" -ne "$declared" ]; then
    echo "man-coverage: FAIL: found $declared $macro declarations in $header but could parse" \
         "$found function names from them; update this script"
    exit 1
  fi
  all="$all $functions"
done
missing=
for f in $all; do
  [ -f "$srcdir/man/$f.3" ] && continue
  grep -Eq "^\.Nm $f( ,)?\$" "$srcdir"/man/*.3 && continue
  missing="$missing $f"
done
if [ -n "$missing" ]; then
  echo "man-coverage: FAIL: exported functions without a man page in $srcdir/man:"
  for f in $missing; do echo "  $f (expected man/$f.3, or .Nm $f in a page's NAME section)"; done
  exit 1
fi
echo "man-coverage: all $(printf '%s\n' $all | grep -c .) exported functions have a page:" $all
