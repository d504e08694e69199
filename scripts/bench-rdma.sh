#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# naa-bench over verbs on Soft-RoCE, beside perftest's ib_write_lat in the same VM (for
# doc/performance.md). Extra arguments go to naa-bench (default: the latency table from 1 B to
# 1 MiB). Build first (scripts/setup.sh).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${NAA_BUILD_DIR:-$top/_build}" && pwd)
vm=${RDMA_VM:-$top/test/harness/rdma-vm}
cd "$build"
exec "$vm" --mem 2G --timeout 1800 -- bash "$top/test/rdma/bench.sh" "$build" "$@"
