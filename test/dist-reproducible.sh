#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make dist is reproducible (Makefile.am, am__tar): two tarballs made a second apart from the
# same tree are identical, byte for byte. A fresh make (not a sub-make of make check), into a
# distdir of its own so that the build directory's tarball is left alone.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
dist() {
  (cd "$NAA_BUILDDIR" && unset MAKEFLAGS MFLAGS MAKELEVEL &&
    ${NAA_MAKE:-make} dist distdir="$naa_test_dir/libnaa") >"$naa_test_dir/dist.log" 2>&1 ||
    { cat "$naa_test_dir/dist.log"; echo "make dist failed" >&2; exit 1; }
  mv "$naa_test_dir/libnaa.tar.gz" "$naa_test_dir/$1.tar.gz"
}
dist first
sleep 1.1  # a tar that records the time of the copies would differ now
dist second
a=$(sha256sum <"$naa_test_dir/first.tar.gz")
b=$(sha256sum <"$naa_test_dir/second.tar.gz")
echo "dist-reproducible: first  $a"
echo "dist-reproducible: second $b"
[ "$a" = "$b" ] || { echo "dist-reproducible: FAIL: two make dist of the same tree differ" >&2; exit 1; }
