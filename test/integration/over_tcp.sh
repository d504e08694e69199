#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over ofi+tcp (transports.sh), named so that the suites keep covering it whatever auto chooses.
exec sh "$NAA_SRCDIR/test/integration/transports.sh" ofi+tcp
