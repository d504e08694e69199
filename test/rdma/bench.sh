#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs inside rdma-vm (scripts/bench-rdma.sh): perftest's ib_write_lat and naa-bench over verbs
# between rxe0 (client, $RDMA_VM_IP_A) and rxe1 (server, $RDMA_VM_IP_B), in the same VM, one
# after the other. TCG emulation: compare ratios, never absolute numbers with hardware.
# Usage: bench.sh BUILDDIR [naa-bench options...] (default: latency, 1 B to 1 MiB)
set -euo pipefail
build=$1
shift
(($#)) || set -- --tests latency --sizes 1,64,4K,64K,1M --iters 2000 --min-iters 50
bench_args=("$@")
dir=$(mktemp -d /tmp/naa-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

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

# First both sides polling, as ib_write_lat does (no --raw: a third polling thread would
# share the VM's two vCPUs); then the defaults (naa-server sleeps between invocations, naa_wait
# spins 100 us then sleeps) with the raw pattern against the same naa-server, alternating.
for mode in "spin 60000000" "spin-then-block 0 --raw --raw-via-server"; do
  read -r progress server_spin extra <<< "$mode"
  rm -f "$dir/port"
  "$build/tools/naa-server/naa-server" -t verbs -a "$RDMA_VM_IP_B" -p 0 -r "$dir/port" \
    --spin-us "$server_spin" 2> "$dir/server.log" &
  server=$!
  for _ in $(seq 600); do [[ -s $dir/port ]] && break; sleep 0.1; done
  echo "== naa-bench over verbs, NAA_PROGRESS=$progress, naa-server --spin-us $server_spin"
  NAA_TRANSPORT=verbs NAA_PROGRESS=$progress "$build/tools/naa-bench/naa-bench" \
    --host "$RDMA_VM_IP_B" --port "$(cat "$dir/port")" "${bench_args[@]}" $extra
  kill $server; wait $server || true
done
