#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs inside rdma-vm --hosts 3 (see scripts/test-rdma.sh): the integration suite over verbs
# between two of the guest's Soft-RoCE hosts (client on rxe0 at $RDMA_VM_IP_A, naa-server on rxe1
# at $RDMA_VM_IP_B), plus what only real RDMA devices can show: NAA_TRANSPORT=auto choosing per
# destination, the memory-lock error, and a client on the third host surviving the loss of one of
# two NAA hosts (host_loss.sh). Usage: suite.sh SRCDIR BUILDDIR RESULTS
set -uo pipefail
src=$1 build=$2 results=$3
[[ ${RDMA_VM:-} == 1 ]] || { echo "suite.sh runs inside rdma-vm" >&2; exit 2; }
export NAA_SRCDIR=$src NAA_SERVER=$build/tools/naa-server/naa-server NAA_EXAMPLES=$build/examples \
       NAA_CONFORMANCE_NAA=$build/test/conformance/conformance-naa \
       NAA_TOOLS=$build/tools NAA_BUILDDIR=$build NAA_TEST_KERNEL_PLUGIN=$build/test/unit/.libs/libtestkernel.so
# NAA_TIMEOUT bounds a whole invocation: the client's writes, the kernel, the reply's writes.
# Soft-RoCE under TCG moves a few MB/s, and less the busier the host: test_offload's 64 MiB
# in-place round trip took 5 s (median) beside 2 busy loops, 11 s beside 4, and 20-44 s at
# a load of about 15 (client write 11-21 s, add1 1-3 s, reply 8-23 s; naa-server saw each
# invocation within 0.2 s of the client's write completion: slowness, not a lost wake-up).
# So 60 s, times NAA_TEST_TIME_SCALE on a host busier than that.
export NAA_TEST_HOST=$RDMA_VM_IP_B
NAA_TIMEOUT=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" 'BEGIN { print int(60 * (s < 1 ? 1 : s)) }')
export NAA_TIMEOUT
per_test_limit=900  # seconds; TCG is slow, but nothing may hang the suite
failures=0

# run NAME [ENV=VAL...] -- COMMAND...: one result, automake style (exit 77 = skipped). Only the
# tests whose names match the extended regular expression NAA_VERBS_TESTS run, when it is set.
# A failed test's log ends up on stderr too, so that CI's output holds the cause.
run() {
  local name=$1 envs=() rc=0
  shift
  [[ -z ${NAA_VERBS_TESTS:-} || $name =~ $NAA_VERBS_TESTS ]] || return 0
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  echo "---- $name" >&2
  local t0=$SECONDS
  env "${envs[@]}" timeout -k 5 $per_test_limit "$@" > "$results/$name.log" 2>&1 || rc=$?
  local verdict=FAIL
  ((rc == 0)) && verdict=PASS
  ((rc == 77)) && verdict=SKIP
  [[ $verdict == FAIL ]] && failures=$((failures + 1))
  echo ":test-result: $verdict" > "$results/$name.trs"
  echo "$verdict: $name (verbs, exit $rc, $((SECONDS - t0)) s)" >&2
  [[ $verdict != SKIP ]] || grep -m 1 '^SKIP' "$results/$name.log" >&2 || true
  grep -E '^\[  (PASSED|FAILED)  \]' "$results/$name.log" >&2 || true
  [[ $verdict != FAIL ]] || tail -n 60 "$results/$name.log" | sed "s/^/$name: /" >&2
}

echo "verbs suite: client $RDMA_VM_IP_A ($RDMA_VM_DEV_A), server $RDMA_VM_IP_B ($RDMA_VM_DEV_B)" >&2
run verbs-test_offload NAA_TRANSPORT=verbs -- "$build/test/integration/test_offload"
run verbs-test_server_faults NAA_TRANSPORT=verbs -- "$build/test/integration/test_server_faults"
run verbs-test_recovery NAA_TRANSPORT=verbs -- "$build/test/integration/test_recovery"
# naa-server killed and started again while a handle invokes: each restart within
# NAA_CONNECT_TIMEOUT invisible, and the restart loop's figures (300 invocations 20 ms apart).
run verbs-test_restart NAA_TRANSPORT=verbs -- "$build/test/integration/test_restart"
run verbs-examples NAA_TRANSPORT=verbs -- sh "$src/test/integration/examples.sh"
run verbs-naa_info NAA_TRANSPORT=verbs -- sh "$src/test/integration/naa_info.sh"
run verbs-naa_info_gids -- sh "$src/test/integration/naa_info_gids.sh"
run verbs-naa_info_kernels NAA_TRANSPORT=verbs -- sh "$src/test/integration/naa_info_kernels.sh"
run verbs-test_cpp NAA_TRANSPORT=verbs -- "$build/test/integration/test_cpp"
run verbs-test_shared_cq -- "$build/test/rdma/test_shared_cq"
# Handles set up and down 1000 times in one process, buffers freed and mapped anew at the same
# address between handles (a stale registration would pin the old pages), live handles sharing one.
run verbs-test_setup NAA_TRANSPORT=verbs NAA_TEST_HANDLES=1000 -- "$build/test/integration/test_setup"
# The reference middleware's interface (naaice_ap2.h): the bad-input matrix, and the
# reference-style program, whose status.bytes_received over verbs is the NAA's final write.
run verbs-test_ap2 NAA_TRANSPORT=verbs -- "$build/test/integration/test_ap2"
run verbs-ap2 NAA_TRANSPORT=verbs AP2_BYTES_RECEIVED=reported NAA_TEST_AP2_RUNS=${NAA_TEST_AP2_RUNS:-1} -- \
  sh "$src/test/ap2/ap2.sh" "$build/test/ap2/ap2_style" 100
run verbs-auto -- bash "$src/test/rdma/auto.sh"
run verbs-memlock -- bash "$src/test/rdma/memlock.sh"
run verbs-default_server -- bash "$src/test/rdma/default_server.sh"
# The peer's window is widened to 3 ms here, beyond TCG's slower re-invocation gap, and 1 MiB
# and 16 MiB run 20 times (a 16 MiB round trip takes 0.1-0.4 s under TCG); make check runs
# 1000 of 1 MiB and 100 of 16 MiB over ofi+tcp.
run verbs-test_conformance NAA_TRANSPORT=verbs NAA_CONFORMANCE_WINDOW_US=3000 \
    NAA_CONFORMANCE_LARGE_ITERATIONS=20 -- \
    "$build/test/conformance/test_conformance"
# A client that behaves like the NAAICE reference AP2 client (its reply before its own write's
# completion is fatal), with its late acknowledgement modelled, and with Soft-RoCE's own (the
# latter skipped, saying why, where the client's host acknowledged later than anything
# naa-server could measure).
run verbs-reference_client NAA_TRANSPORT=verbs -- sh "$src/test/conformance/reference_client.sh"
run verbs-reference_client_softroce NAA_TRANSPORT=verbs -- \
  sh "$src/test/conformance/reference_client.sh" softroce
run verbs-host_loss -- bash "$src/test/rdma/host_loss.sh"
run verbs-answer_then_disconnect -- bash "$src/test/rdma/answer_then_disconnect.sh"
((failures == 0)) || { echo "verbs suite: $failures test program(s) failed" >&2; exit 1; }
