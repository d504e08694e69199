#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# libnaa.so exports exactly the public functions (test/public-functions.sh), each with the
# version node of lib/libnaa.map: no internal symbol leaks, no public one is missing.
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
lib=${NAA_BUILDDIR:-.}/lib/.libs/libnaa.so
command -v nm >/dev/null 2>&1 || { echo "exports: SKIP: nm (binutils) is not installed"; exit 77; }
[ -f "$lib" ] || { echo "exports: FAIL: $lib not found"; exit 1; }
public=$(sh "$srcdir/test/public-functions.sh" | sort) || { echo "exports: FAIL: see above"; exit 1; }
# Defined dynamic symbols other than the version node itself (an absolute symbol).
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort)
unversioned=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 !~ /@@NAA_/ { print $3 }')
if [ "$exported" != "$public" ]; then
  echo "exports: FAIL: libnaa.so exports other symbols than the public functions"
  echo "  exported, not public: $(printf '%s\n' "$exported" | grep -vxF "$public" | tr '\n' ' ')"
  echo "  public, not exported: $(printf '%s\n' "$public" | grep -vxF "$exported" | tr '\n' ' ')"
  exit 1
fi
if [ -n "$unversioned" ]; then
  echo "exports: FAIL: exported without the NAA_ version node: $unversioned"
  exit 1
fi
echo "exports: libnaa.so exports exactly the $(printf '%s\n' "$public" | grep -c .) public functions:" $exported
