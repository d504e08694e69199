#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over ofi+tcp (transports.sh): auto takes shm on this host.
exec sh "$NAA_SRCDIR/test/integration/transports.sh" ofi+tcp
