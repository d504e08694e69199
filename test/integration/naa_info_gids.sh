#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-info lists the RoCE v2 GIDs of the RDMA devices (index, address, netdev, IPv4). Needs a
# real RDMA device, e.g. Soft-RoCE: test/harness/rdma-vm -- make check TESTS=<this test>.
# Without one it checks the "none" line and skips.
set -eu
info="$NAA_TOOLS/naa-info/naa-info"
out=$(mktemp /tmp/naa-gids-XXXXXX)
trap 'rm -f "$out"' EXIT
env -u NAA_SPEC "$info" | sed -n '/^RoCE v2 GIDs:$/,/^NAAs:$/p' > "$out"
cat "$out"
grep -q '^RoCE v2 GIDs:$' "$out" || { echo "naa-info printed no 'RoCE v2 GIDs:' section" >&2; exit 1; }

if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  grep -q '^  none: no RDMA device in /sys/class/infiniband$' "$out"
  echo "SKIP: no RDMA device in /sys/class/infiniband, so no GID listing to check" \
       "(run it under rdma-vm, or on a host with RoCE)"
  exit 77
fi

# Every IPv4 naa-info derives from a GID must be an address of the netdev it names.
lines=$(grep -c ' GID index ' "$out" || true)
grep ' IPv4 ' "$out" | while read -r dev _ port _ _ index gid _ ndev _ ipv4; do
  ip -4 -o addr show dev "$ndev" | grep -q " inet $ipv4/" ||
    { echo "$dev port $port GID $index ($gid): $ipv4 is not an address of $ndev" >&2; exit 1; }
  [ "$gid" != "0000:0000:0000:0000:0000:0000:0000:0000" ] || { echo "all-zero GID listed" >&2; exit 1; }
done
# Under rdma-vm the guest says which GID index RoCE v2 over IPv4 uses; naa-info must agree.
if [ -n "${RDMA_VM:-}" ]; then
  grep -Eq "^  $RDMA_VM_DEV_A port 1  GID index +$RDMA_VM_GID_A  0000:0000:0000:0000:0000:ffff:[0-9a-f:]+  netdev [^ ]+  IPv4 $RDMA_VM_IP_A\$" "$out" ||
    { echo "no line for $RDMA_VM_DEV_A GID index $RDMA_VM_GID_A with IPv4 $RDMA_VM_IP_A" >&2; exit 1; }
fi
echo "naa_info_gids: $lines RoCE v2 GID line(s) checked"
