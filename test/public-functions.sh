#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prints the public C functions, one a line: those include/naa.h declares NAA_API and
# include/naaice_ap2.h declares NAAICE_API (one declaration per line starting with the macro;
# the name is the identifier before '('). Used by man-coverage.sh and exports.sh; fails if a
# declaration cannot be parsed or a call lacks its pnaa_/pnaaice_ twin (pnaa(3)).
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
for pair in naa.h:NAA_API naaice_ap2.h:NAAICE_API; do
  header=$srcdir/include/${pair%%:*}
  macro=${pair#*:}
  [ -f "$header" ] || { echo "public-functions: $header not found" >&2; exit 1; }
  functions=$(sed -n "s/^[[:space:]]*$macro[^(]*[^[:alnum:]_]\([[:alpha:]_][[:alnum:]_]*\)[[:space:]]*(.*/\1/p" "$header")
  declared=$(grep -c "^[[:space:]]*$macro " "$header")
  found=$(printf '%s\n' $functions | grep -c .)
  if [ "$declared" -eq 0 ] || [ "$found" -ne "$declared" ]; then
    echo "public-functions: found $declared $macro declarations in $header but could parse" \
         "$found function names from them; update test/public-functions.sh" >&2
    exit 1
  fi
  # The profiling interface (pnaa(3)): every call has its p-twin, and nothing else is a p-name.
  for f in $functions; do
    case $f in
      p*) twin=${f#p} ;;
      *) twin=p$f ;;
    esac
    printf '%s\n' $functions | grep -qx "$twin" ||
      { echo "public-functions: $f in $header has no $twin (pnaa(3))" >&2; exit 1; }
  done
  printf '%s\n' $functions
done
