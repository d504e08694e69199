#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runtime parameters and naa_attr_t have one truth each, stated three times: the registry
# (each layer's table, composed in lib/transport/params.cpp; shown by `naa-info --params`),
# naa(7) RUNTIME PARAMETERS, and for the struct include/naa.h against naa_create_attr(3). Any one drifting from the others fails here.
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
info=${NAA_TOOLS:-$srcdir/_build/tools}/naa-info/naa-info
fail=0

# Every parameter the registry has must be an .It Ev entry of naa(7) RUNTIME PARAMETERS, and no
# other. The environment is emptied of NAA_* so that --params shows defaults and succeeds.
registry=$(env -i PATH="$PATH" "$info" --params | sed -n 's/^\(NAA_[A-Z0-9_]*\)=.*/\1/p' | sort)
if [ -z "$registry" ]; then echo "params-agree: FAIL: $info --params listed nothing"; exit 1; fi
manual=$(awk '/^\.Sh RUNTIME PARAMETERS/ {f = 1; next} /^\.Sh/ {f = 0}
              f && /^\.It Ev NAA_/ {print $3}' "$srcdir/man/naa.7" | sort)
only_registry=$(printf '%s\n' "$registry" | grep -vxF "$manual")
only_manual=$(printf '%s\n' "$manual" | grep -vxF "$registry")
[ -z "$only_registry" ] || { echo "params-agree: FAIL: in naa-info --params, not in naa(7) RUNTIME PARAMETERS:" $only_registry; fail=1; }
[ -z "$only_manual" ] || { echo "params-agree: FAIL: in naa(7) RUNTIME PARAMETERS, not in naa-info --params:" $only_manual; fail=1; }

# Every naa_attr_t field after the size/version header must be an .It Fa entry of
# naa_create_attr(3), and no other.
fields=$(awk '/^typedef struct naa_attr \{/ {f = 1; next} /^\} naa_attr_t;/ {f = 0}
              f && /^  [a-z]/ {sub(/;.*/, ""); n = split($0, w, /[ *]+/); print w[n]}' \
         "$srcdir/include/naa.h" | grep -vx 'size\|version' | sort)
documented=$(awk '/^\.It Fa / {print $3}' "$srcdir/man/naa_create_attr.3" | sort)
[ -n "$fields" ] || { echo "params-agree: FAIL: no naa_attr_t fields found in include/naa.h"; exit 1; }
only_header=$(printf '%s\n' "$fields" | grep -vxF "$documented")
only_page=$(printf '%s\n' "$documented" | grep -vxF "$fields")
[ -z "$only_header" ] || { echo "params-agree: FAIL: naa_attr_t fields not in naa_create_attr(3):" $only_header; fail=1; }
[ -z "$only_page" ] || { echo "params-agree: FAIL: naa_create_attr(3) documents fields naa_attr_t lacks:" $only_page; fail=1; }

# naa-info(1) documents --params.
grep -q '^\.It Fl P , Fl -params' "$srcdir/man/naa-info.1" ||
  { echo "params-agree: FAIL: naa-info(1) does not document -P, --params"; fail=1; }

[ "$fail" = 0 ] || exit 1
echo "params-agree:" $(printf '%s\n' "$registry" | grep -c .) "parameters in naa-info --params and naa(7);" \
  $(printf '%s\n' "$fields" | grep -c .) "naa_attr_t fields in naa_create_attr(3)"
