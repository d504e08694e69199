#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two NAAs on two hosts, one client on a third (rdma-vm --hosts 3): naa-servers on A and B, both
# listed in NAA_SPEC for function code 10, and spread_hosts on C (NAA_LOCAL_IP) with
# NAA_TRANSPORT=auto, which must pick verbs for both. The resolver spreads the handles over the
# two NAAs; in round AT, with every invocation in flight, host A vanishes: its link goes down
# (ip link set <A's netdev> down). A's handles must fail with a clear error within NAA_TIMEOUT,
# B's must finish every round with correct results.
#
# Why the link and not `kill naa-server`: killing the process lets A's kernel close its rdma_cm
# ids, which sends the client a disconnect, so the client hears at once that the NAA is gone.
# A host that loses power or its cable says nothing: the client learns it only from its own
# deadlines (RC retries exhausted, or NAA_TIMEOUT). On rxe, taking A's veth down does exactly that:
# A's port goes DOWN, frames from C to A die at A's bridge port, C's device stays ACTIVE and
# nothing tells the client. The link comes back up when the script ends.
set -eu
[ "${RDMA_VM_HOSTS:-2}" -ge 3 ] || { echo "SKIP: needs three hosts (rdma-vm --hosts 3)"; exit 77; }
unset NAA_TRANSPORT
. "$NAA_SRCDIR/test/integration/lib.sh"
read -r netdev_a < "/sys/class/infiniband/$RDMA_VM_DEV_A/ports/1/gid_attrs/ndevs/$RDMA_VM_GID_A"
trap 'ip link set "$netdev_a" up; for p in $naa_test_pids; do kill $p 2>/dev/null; wait $p 2>/dev/null; done
      rm -rf "$naa_test_dir"' EXIT

NAA_TEST_HOST=$RDMA_VM_IP_A start_server; port_a=$NAA_TEST_PORT
NAA_TEST_HOST=$RDMA_VM_IP_B start_server; port_b=$NAA_TEST_PORT
naa_a=$RDMA_VM_IP_A:$port_a naa_b=$RDMA_VM_IP_B:$port_b
handles=4 rounds=5 at=2 timeout=20

t0=$SECONDS rc=0
NAA_SPEC="$naa_a:10:2,$naa_b:10:2" NAA_LOCAL_IP=$RDMA_VM_IP_C NAA_TIMEOUT=$timeout NAA_LOG_LEVEL=info \
  "$NAA_BUILDDIR/test/rdma/spread_hosts" $handles $rounds $at "ip link set $netdev_a down" \
  > "$naa_test_dir/out" 2> "$naa_test_dir/log" || rc=$?
elapsed=$((SECONDS - t0))
cat "$naa_test_dir/out" "$naa_test_dir/log"
echo "host_loss: client ran ${elapsed} s, exit $rc"
[ $rc -eq 0 ] || { echo "spread_hosts failed (wrong results or a failed call, see above)" >&2; exit 1; }

fail() { echo "host_loss: $*" >&2; exit 1; }
for naa in "$naa_a" "$naa_b"; do
  grep -q "NAA_TRANSPORT=auto: verbs for $naa" "$naa_test_dir/log" || fail "auto did not pick verbs for $naa"
done
grep -q "verbs: $RDMA_VM_IP_C:[0-9]* <-> $RDMA_VM_IP_A:$port_a on $RDMA_VM_DEV_C " "$naa_test_dir/log" ||
  fail "the client did not reach A from C's device $RDMA_VM_DEV_C"

# The resolver logs each handle's NAA at naa_create, in handle order.
mapfile -t targets < <(sed -n 's/.*function code 10 -> \([0-9.]*:[0-9]*\) .*/\1/p' "$naa_test_dir/log")
[ ${#targets[@]} -eq $handles ] || fail "expected $handles resolver lines, got ${#targets[@]}"
on_a=0 on_b=0
for ((k = 0; k < handles; k++)); do
  line=$(grep "^handle $k: " "$naa_test_dir/out") || fail "no result line for handle $k"
  case ${targets[k]} in
    "$naa_a")
      on_a=$((on_a + 1))
      [[ $line =~ ^handle\ $k:\ failed\ in\ round\ ([0-9]+):\ naa_(invoke|wait):\ .*\(([0-9]+)\)$ ]] ||
        fail "handle $k on the vanished host A did not fail: $line"
      ((BASH_REMATCH[1] >= at)) || fail "handle $k failed before A went away: $line"
      case ${BASH_REMATCH[3]} in 4|5|6) ;; *) fail "handle $k: not a connection, transport or timeout error: $line" ;; esac ;;
    "$naa_b")
      on_b=$((on_b + 1))
      [ "$line" = "handle $k: $rounds rounds ok" ] || fail "handle $k on host B did not finish: $line" ;;
    *) fail "handle $k went to ${targets[k]}, neither NAA" ;;
  esac
done
((on_a == handles / 2 && on_b == handles / 2)) || fail "handles not spread evenly: $on_a on A, $on_b on B"
# The cause is logged, naming the NAA that went away (at info since the caller gets it back:
# naa_last_error(3)).
grep -F "$naa_a" "$naa_test_dir/log" | grep -qE "did not complete|no reply|lost|disconnected|gone" ||
  fail "no log line gives the cause naming $naa_a"
# Each of A's handles waits at most NAA_TIMEOUT; the rest of the run takes seconds.
((elapsed < handles * timeout + 60)) || fail "the client took ${elapsed} s"
echo "host_loss: $on_a handle(s) on A failed cleanly after A vanished, $on_b on B finished $rounds rounds"
