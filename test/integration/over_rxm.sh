#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The integration and fault suites over libfabric's tcp;ofi_rxm, an FI_EP_RDM fabric that
# reaches other hosts (transports.sh). Not in make check: a server killed while a kernel runs is
# noticed over rxm only when NAA_TIMEOUT passes (rxm reports nothing of a dead peer to a
# waiting receiver), which test_offload's test_server_killed_during_invoke counts as a failure.
exec sh "$NAA_SRCDIR/test/integration/transports.sh" "ofi+tcp;ofi_rxm"
