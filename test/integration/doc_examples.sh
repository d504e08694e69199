#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every code example of the man pages and of README.md and doc/*.md, as a reader copies it:
# built and run against a real naa-server (test/integration/doc_examples.py says how each kind
# of block is run and how a block says what it is). Fails on an example that does not build,
# fails, calls a kernel wrongly, or is neither runnable nor marked as what it is.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "doc_examples: SKIP: python3 is not installed"; exit 77; }
# The Python examples run where the package was built and NumPy is there.
if [ "${NAA_HAVE_PYTHON:-no}" = yes ] && "$NAA_PYTHON" -c 'import numpy' 2>/dev/null; then
  . "$NAA_SRCDIR/test/python/lib.sh"
  python_site numpy
else
  NAA_HAVE_PYTHON=no
fi
start_server
mkdir -p "$naa_test_dir/examples"
python3 "$NAA_SRCDIR/test/integration/doc_examples.py" "$NAA_SRCDIR" "$naa_test_dir/examples" "$NAA_TEST_PORT"
