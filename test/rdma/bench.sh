#!/usr/bin/env bash
# Runs inside rdma-vm (scripts/bench-rdma.sh): perftest's ib_write_lat and naa-bench over verbs
# between rxe0 (client, $RDMA_VM_IP_A) and rxe1 (server, $RDMA_VM_IP_B), in the same VM, one
# after the other. TCG emulation: compare ratios, never absolute numbers with hardware.
# Usage: bench.sh BUILDDIR [naa-bench options...]
set -euo pipefail
build=$1
shift
dir=$(mktemp -d /tmp/naa-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

echo "== perftest ib_write_lat, 1 byte, $RDMA_VM_DEV_A (GID $RDMA_VM_GID_A) -> $RDMA_VM_DEV_B (GID $RDMA_VM_GID_B)"
echo "   (ib_write_lat prints half the round trip: t_typical = RTT / 2)"
ib_write_lat -F -d "$RDMA_VM_DEV_B" -x "$RDMA_VM_GID_B" -s 1 -n 5000 > "$dir/lat-server" 2>&1 &
# The server needs a moment under TCG; the client retries until it answers.
for try in $(seq 20); do
  sleep 1
  ib_write_lat -F -d "$RDMA_VM_DEV_A" -x "$RDMA_VM_GID_A" -s 1 -n 5000 "$RDMA_VM_IP_B" > "$dir/lat" 2>&1 && break
done
cat "$dir/lat"
wait

"$build/tools/naa-server/naa-server" -t verbs -a "$RDMA_VM_IP_B" -p 0 -r "$dir/port" 2> "$dir/server.log" &
for _ in $(seq 600); do [[ -s $dir/port ]] && break; sleep 0.1; done
for progress in spin spin-then-block; do
  echo "== naa-bench over verbs, NAA_PROGRESS=$progress"
  NAA_TRANSPORT=verbs NAA_PROGRESS=$progress "$build/tools/naa-bench/naa-bench" \
    --host "$RDMA_VM_IP_B" --port "$(cat "$dir/port")" "$@"
done
