#!/usr/bin/env bash
# naa-bench over verbs on Soft-RoCE, beside perftest's ib_write_lat in the same VM (for
# doc/performance.md). Extra arguments go to naa-bench; the default is the 1-byte-to-1-MiB
# latency table with --raw. Build first (scripts/setup.sh).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${NAA_BUILD_DIR:-$top/_build}" && pwd)
vm=${RDMA_VM:-$top/../shared/tools/rdma-vm}
(($#)) || set -- --tests latency --raw --sizes 1,64,4K,64K,1M --iters 2000 --min-iters 50
cd "$build"
exec "$vm" --mem 2G --timeout 1800 -- bash "$top/test/rdma/bench.sh" "$build" "$@"
