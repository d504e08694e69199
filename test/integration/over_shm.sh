#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over ofi+shm (transports.sh).
exec sh "$NAA_SRCDIR/test/integration/transports.sh" ofi+shm
