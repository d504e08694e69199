#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-server --wait adaptive (the default) does not poll for a client's next invocation while
# the node is oversubscribed, made so here by the environment (more ranks on the node than
# CPUs: OMPI_COMM_WORLD_LOCAL_SIZE), never by load. With --spin-us 1000000 a connection that
# polls does so for a second after each answer (--wait spin-then-block). One client over
# ofi+tcp runs one invocation and goes quiet; a second later the thread that serves it
# ("naa-client") must have used at most NAA_TEST_CPU_MS (default 30, times
# NAA_TEST_TIME_SCALE) ms of CPU, its setup included. NAA_TEST_WAIT=spin-then-block runs the
# same against a polling server (the premise: it fails there).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
limit_ms=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" -v m="${NAA_TEST_CPU_MS:-30}" 'BEGIN { print int(m * s) }')
wait_policy=${NAA_TEST_WAIT:-adaptive}

client_thread_cpu_ms() {  # CPU time of process $1's "naa-client" threads in ms, and their count
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = naa-client ] && cat "$t/schedstat" 2>/dev/null
  done | awk '{ ns += $1; k++ } END { print int(ns / 1000000), k + 0 }'
}

unset SLURM_NTASKS_PER_NODE
OMPI_COMM_WORLD_LOCAL_SIZE=100000
export OMPI_COMM_WORLD_LOCAL_SIZE
start_server --wait "$wait_policy" --spin-us 1000000
server=$!
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1"
start_idle_clients 1 ofi+tcp
sleep 1
set -- $(client_thread_cpu_ms $server)
echo "--wait $wait_policy: the thread serving the quiet client used $1 ms of CPU (limit $limit_ms)"
[ "$2" -eq 1 ] || { echo "FAIL: $2 threads named naa-client serve 1 client" >&2; exit 1; }
[ "$1" -le "$limit_ms" ] || { echo "FAIL: the connection polled on an oversubscribed node" >&2; exit 1; }
exec 3>&-
