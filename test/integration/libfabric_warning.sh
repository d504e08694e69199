#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server serving ofi+tcp warns at start when the libfabric it loaded is one
# whose tcp provider a single crafted packet crashes (1.17, naa(7) SECURITY), and only then.
# The version is the one naa-info reports as loaded at run time.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
version=$("$NAA_TOOLS/naa-info/naa-info" | sed -n 's/^  ofi  *libfabric \([0-9.]*\).*/\1/p')
if [ -z "$version" ]; then
  echo "naa-info lists no libfabric transport in this build: skipped" >&2
  exit 77
fi
start_server --transport ofi+tcp 2>"$naa_test_dir/stderr"
# The warning, if any, comes before naa-server serves; stopped, it has said all it says at start.
server=$!
kill "$server"
wait "$server" || true
grep -q "naa-server: stopped" "$naa_test_dir/stderr" || { cat "$naa_test_dir/stderr"; echo "naa-server did not stop cleanly" >&2; exit 1; }
cat "$naa_test_dir/stderr"
if [ "$version" = 1.17 ]; then
  grep -q "WARNING: libfabric 1.17: its tcp provider crashes on one crafted packet" "$naa_test_dir/stderr"
  echo "libfabric $version: naa-server warned"
else
  if grep -q "WARNING: libfabric" "$naa_test_dir/stderr"; then
    echo "libfabric $version is not known to be affected, yet naa-server warned" >&2; exit 1
  fi
  echo "libfabric $version: no warning, as it should be"
fi
