#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# free_port (lib.sh's servers, test_port of server.h) hands out ports outside the kernel's
# ephemeral range, so that no server bound to port 0 takes a port a test freed, and in turn, so
# that no other test's server gets it soon after: 200 ports in a row, all outside the range,
# none twice, none listened on.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
read -r low high < /proc/sys/net/ipv4/ip_local_port_range
: > "$naa_test_dir/ports"
i=0
while [ $i -lt 200 ]; do
  free_port >> "$naa_test_dir/ports"
  i=$((i + 1))
done
awk -v low="$low" -v high="$high" '
  $1 >= low && $1 <= high { print "FAIL: port " $1 " lies in the ephemeral range " low "-" high; bad = 1 }
  seen[$1]++ == 1 { print "FAIL: port " $1 " handed out twice"; bad = 1 }
  END { exit bad }' "$naa_test_dir/ports" >&2
listening=$(awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp | sort -u)
for p in $(sort -u "$naa_test_dir/ports"); do
  hex=$(printf '%04X' "$p")
  if echo "$listening" | grep -qx "$hex"; then echo "FAIL: port $p is listened on" >&2; exit 1; fi
done
echo "free_port: 200 ports outside $low-$high, none twice, none listened on"
