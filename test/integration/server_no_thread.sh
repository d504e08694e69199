#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server when no thread can be made for a client (EAGAIN from pthread_create; here its
# address space is limited with prlimit so that a thread's stack does not fit, as RLIMIT_NPROC
# does not hold root back): the client is dropped at once (its connection closes, it does not
# wait out a timeout), the server goes on, the client's --max-clients slot is free again for the
# next client once threads can be made, and SIGTERM still stops the server cleanly. Before,
# the exception left the accept loop and ended naa-server (std::terminate), and the client's
# slot stayed taken with a thread that the pool's stop tried to join.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
if ! command -v prlimit > /dev/null 2>&1; then
  echo "SKIP: no prlimit (util-linux) to limit naa-server's address space"
  exit 77
fi

start_server --transport ofi+tcp --max-clients 1 2> "$naa_test_dir/server.log"
server=$!
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1" NAA_TRANSPORT=ofi+tcp
vm=$(awk '/^VmSize/ { print $2 }' /proc/$server/status)
if ! prlimit --pid $server --as=$(((vm + 4096) * 1024)):unlimited; then
  echo "SKIP: cannot limit naa-server's address space (prlimit)"
  exit 77
fi
client() {
  rm -f "$naa_test_dir/ready"
  "$NAA_BUILDDIR/test/integration/idle_handles" 1 "$naa_test_dir/ready" < /dev/null > "$naa_test_dir/client.log" 2>&1
}
if client; then
  echo "SKIP: a limited address space did not keep naa-server from making a thread"
  exit 77
fi
cat "$naa_test_dir/client.log"
status=0
if ! grep -q "no thread to serve it" "$naa_test_dir/server.log"; then
  echo "FAIL: naa-server did not say that it had no thread for the client" >&2
  status=1
fi
if ! running $server; then
  cat "$naa_test_dir/server.log"
  echo "FAIL: naa-server ended when it could make no thread for a client" >&2
  exit 1
fi
prlimit --pid $server --as=unlimited:unlimited
if ! client; then
  cat "$naa_test_dir/client.log"
  echo "FAIL: with threads again, the next client was not served (--max-clients 1: its slot still taken?)" >&2
  status=1
fi
kill -TERM $server
wait $server || { cat "$naa_test_dir/server.log"; echo "FAIL: naa-server did not stop cleanly" >&2; status=1; }
exit $status
