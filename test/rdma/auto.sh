#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# NAA_TRANSPORT=auto (unset) picks verbs for an NAA an RDMA device routes to and ofi+tcp for
# one on the loopback, in one process. Every address of this VM is on this host, where auto
# prefers a server's shm listener (default_server.sh), so these two servers listen with one
# transport each. A build without libfabric has the verbs NAA alone.
set -eu
unset NAA_TRANSPORT
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server --transport verbs
verbs_port=$NAA_TEST_PORT
export NAA_SPEC="$RDMA_VM_IP_B:$verbs_port:10:2"
if have_provider tcp; then
  NAA_TEST_HOST=127.0.0.1 start_server --transport ofi+tcp
  tcp_port=$NAA_TEST_PORT
  NAA_SPEC="$NAA_SPEC,127.0.0.1:$tcp_port:3:1"
else
  echo "left out: no ofi+tcp in this build, so no NAA on the loopback"
fi

"$NAA_TOOLS/naa-info/naa-info" --ping | tee "$naa_test_dir/info"
grep -q "function code  10  $RDMA_VM_IP_B:$verbs_port .* via verbs  reachable" "$naa_test_dir/info"
[ -z "${tcp_port:-}" ] ||
  grep -q "function code   3  127.0.0.1:$tcp_port .* via ofi+tcp  reachable" "$naa_test_dir/info"

NAA_LOG_LEVEL=info "$NAA_EXAMPLES/vecadd" 100000 > "$naa_test_dir/vecadd" 2>&1
cat "$naa_test_dir/vecadd"
grep -q "all 200000 elements correct" "$naa_test_dir/vecadd"
grep -q "NAA_TRANSPORT=auto: verbs for $RDMA_VM_IP_B:$verbs_port" "$naa_test_dir/vecadd"
# rdma_cm's choice of device and GID is logged: the client side must be rxe0's IPv4 GID.
grep -q "verbs: $RDMA_VM_IP_A:[0-9]* <-> $RDMA_VM_IP_B:$verbs_port on $RDMA_VM_DEV_A port 1, GID index $RDMA_VM_GID_A (::ffff:$RDMA_VM_IP_A)" "$naa_test_dir/vecadd"

# auto loads the modules of what it tries: vecadd's one naa_create reaches the verbs NAA and
# never loads libnaa-ofi.so (nor libfabric), as ld.so lists what it maps.
if [ "${NAA_BUILTIN_TRANSPORTS:-no}" != yes ] && [ -f "$NAA_BUILDDIR/lib/.libs/libnaa-ofi.so" ]; then
  NAA_SPEC="$RDMA_VM_IP_B:$verbs_port:10:2" LD_DEBUG=files LD_DEBUG_OUTPUT="$naa_test_dir/ld" \
    "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/vecadd-ld" 2>&1
  grep -q "all 2000 elements correct" "$naa_test_dir/vecadd-ld"
  loaded=$(cat "$naa_test_dir"/ld.* | sed -n 's/.*file=\([^ ]*\(libnaa-[a-z]*\|libfabric\)[^ ]*\.so[^ ]*\).*/\1/p' | sort -u)
  echo "auto to the verbs NAA loaded:" $loaded
  printf '%s\n' "$loaded" | grep -q 'libnaa-verbs\.so' || { echo "FAIL: libnaa-verbs.so not loaded" >&2; exit 1; }
  if printf '%s\n' "$loaded" | grep -q 'libnaa-ofi\.so\|libfabric'; then
    echo "FAIL: auto to a verbs NAA loaded the ofi module" >&2
    exit 1
  fi
fi
