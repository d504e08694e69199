#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The C and C++ sources follow .clang-format (scripts/format.sh --check). Skipped (exit 77)
# without clang-format 14 or outside a git checkout (a release tarball, make distcheck).
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
if ! command -v git >/dev/null 2>&1; then
  echo "format: SKIP: git is not installed, so the tracked files are not known"
  exit 77
fi
bash "$srcdir/scripts/format.sh" --check
rc=$?
case $rc in
  3) echo "format: SKIP: $srcdir is not a git checkout"; exit 77 ;;
  4) echo "format: SKIP: clang-format 14 is not installed"; exit 77 ;;
esac
exit $rc
