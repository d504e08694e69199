#!/bin/sh
# Lints every man page in the source tree with mandoc at warning level: any message fails.
# Without mandoc the test is skipped (exit 77), not failed.
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
if ! command -v mandoc >/dev/null 2>&1; then
  echo "man-lint: SKIP: mandoc is not installed, so the man pages cannot be linted" \
       "(install mandoc to run this test)"
  exit 77
fi
set -- "$srcdir"/man/*.[1-9]
if [ ! -f "$1" ]; then
  echo "man-lint: FAIL: no man pages found in $srcdir/man"
  exit 1
fi
echo "man-lint: mandoc -T lint -W warning on $# pages in $srcdir/man"
out=$(mandoc -T lint -W warning "$@" 2>&1)
status=$?
if [ -n "$out" ] || [ $status -ne 0 ]; then
  printf '%s\n' "$out"
  echo "man-lint: FAIL: mandoc reported the problems above (exit status $status)"
  exit 1
fi
echo "man-lint: all $# pages are clean"
