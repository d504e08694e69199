#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over libfabric's lnx provider (libfabric >= 2.0), which
# links shm for same-host peers with a network provider (FI_LNX_PROV_LINKS, shm+tcp unless set)
# and offers FI_EP_RDM; skipped, with the reason, where configure found an older libfabric.
if [ "${NAA_HAVE_LNX:-no}" != yes ]; then
  echo "SKIP: ofi+lnx needs libfabric >= 2.0 (its lnx provider); configure found an older one"
  exit 77
fi
export FI_LNX_PROV_LINKS="${FI_LNX_PROV_LINKS:-shm+tcp}"
exec sh "$NAA_SRCDIR/test/integration/transports.sh" ofi+lnx
