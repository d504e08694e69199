#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every public function (test/public-functions.sh: naa.h's NAA_API, naaice_ap2.h's NAAICE_API)
# must have its page: man/NAME.3, or a section 3 page that lists NAME in its NAME section
# (.Nm; make install links NAME.3 to it).
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
all=$(sh "$srcdir/test/public-functions.sh") || { echo "man-coverage: FAIL: see above"; exit 1; }
missing=
for f in $all; do
  [ -f "$srcdir/man/$f.3" ] && continue
  grep -Eq "^\.Nm $f( ,)?\$" "$srcdir"/man/*.3 && continue
  missing="$missing $f"
done
if [ -n "$missing" ]; then
  echo "man-coverage: FAIL: public functions without a man page in $srcdir/man:"
  for f in $missing; do echo "  $f (expected man/$f.3, or .Nm $f in a page's NAME section)"; done
  exit 1
fi
echo "man-coverage: all $(printf '%s\n' $all | grep -c .) public functions have a page:" $all
