#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over one named transport (the argument, e.g. ofi+shm): a
# same-host client now reaches naa-server over shm with NAA_TRANSPORT=auto, so the suites run
# with the transport named to cover each of them. Exits 77 (SKIP) when libfabric here lacks the
# provider, saying so.
set -eu
transport=$1
provider=${transport#ofi+}
if ! "$NAA_TOOLS/naa-info/naa-info" | grep -q "^          $provider  "; then
  echo "SKIP: libfabric $("$NAA_TOOLS/naa-info/naa-info" | sed -n 's/^  ofi     libfabric \([0-9.]*\).*/\1/p') has no usable '$provider' provider: $transport not tested"
  exit 77
fi
export NAA_TRANSPORT="$transport"
rc=0
for suite in test_offload test_server_faults test_recovery test_cancel test_restart; do
  echo "---- $suite over $transport"
  "$NAA_BUILDDIR/test/integration/$suite" || { echo "FAIL: $suite over $transport" >&2; rc=1; }
done
exit $rc
