#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# By hand, inside rdma-vm: libnaa against the NAAICE reference software NAA (naaice_server of
# naaice-greenhpc/naa-communication-library, which this project does not ship), doc/protocol.md
# §4.4. Each run starts naaice_server on host B and runs reference_loop from host A: 1000
# back-to-back invocations of its empty kernel (code 3), 4 KiB in place, NAA_TIMEOUT=20, and
# prints one line per run (invocations completed, where one stranded, the guard) and the
# reference's count of requests received ("Receiving Data Transfer") and served ("Doing RPC").
# Build the reference first (cmake, its microlog dependency fetched or given with
# -DFETCHCONTENT_SOURCE_DIR_ULOG=DIR; -march no newer than the guest's CPU, doc/soft-roce.md):
#   cmake -S naa-communication-library -B ref -DCMAKE_BUILD_TYPE=Release && make -C ref naaice_server
#   test/harness/rdma-vm --rw OUT -- bash test/rdma/reference_naa.sh ref/examples/naaice_server \
#       _build OUT 3 default error
# Usage: reference_naa.sh NAAICE_SERVER BUILDDIR OUTDIR RUNS LEVEL... (LEVEL: an NAA_LOG_LEVEL,
# or "default" for none). Extra NAA_* variables pass through (NAA_PACING_US=0 ...).
set -u
[[ ${RDMA_VM:-} == 1 ]] || { echo "reference_naa.sh runs inside rdma-vm" >&2; exit 2; }
server=$1 build=$2 out=$3 runs=$4
shift 4
mkdir -p "$out"
export NAA_TRANSPORT=verbs NAA_TIMEOUT=${NAA_TIMEOUT:-20}
for level in "$@"; do
  for run in $(seq "$runs"); do
    tag=$level-$run
    stdbuf -oL -eL "$server" > "$out/server-$tag.log" 2>&1 &
    pid=$!
    sleep 4  # it says nothing when it listens
    for try in 1 2 3 4 5; do
      if [[ $level == default ]]; then
        "$build/test/rdma/reference_loop" "$RDMA_VM_IP_B:12345" 1000 > "$out/client-$tag.log" 2>&1
      else
        NAA_LOG_LEVEL=$level "$build/test/rdma/reference_loop" "$RDMA_VM_IP_B:12345" 1000 \
          > "$out/client-$tag.log" 2>&1
      fi
      grep -q "create failed" "$out/client-$tag.log" || break
      sleep 3
    done
    kill -INT $pid
    sleep 1
    kill -KILL $pid 2> /dev/null
    wait $pid 2> /dev/null
    echo "$tag: $(grep -h 'reference_loop: \(completed\|invocation\)' "$out/client-$tag.log" |
      tr '\n' ' ')naaice_server: $(grep -c 'Receiving Data Transfer' "$out/server-$tag.log")" \
      "requests received, $(grep -c 'Doing RPC' "$out/server-$tag.log") served"
  done
done
