#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every source file names its licence (scripts/spdx.sh --check). Skipped (exit 77) outside a
# git checkout, e.g. in a release tarball or make distcheck: there the list of source files
# is not known. Untracked libtool wrapper scripts (an in-source build's) are not sources;
# test/spdx-wrappers.sh holds scripts/spdx.sh to that.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
if ! command -v git >/dev/null 2>&1; then
  echo "spdx: SKIP: git is not installed, so the tracked files are not known"
  exit 77
fi
bash "$srcdir/scripts/spdx.sh" --check
rc=$?
if [ $rc -eq 3 ]; then
  echo "spdx: SKIP: $srcdir is not a git checkout"
  exit 77
fi
exit $rc
