#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The verbs suite: boots test/harness/rdma-vm (a QEMU guest with three Soft-RoCE hosts) and
# runs test/rdma/suite.sh there against this build. Results land in $build/test-rdma as
# automake-style .trs/.log pairs, so scripts/test.sh counts them with everything else.
# Where the VM cannot start, the suite is recorded as SKIPPED and says why, loudly.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${NAA_BUILD_DIR:-$top/_build}" && pwd)
results=$build/test-rdma
vm=${RDMA_VM:-$top/test/harness/rdma-vm}
rm -rf "$results"
mkdir -p "$results"

skip() {
  printf '%s\n' "$@" > "$results/rdma-vm.log"
  echo ":test-result: SKIP" > "$results/rdma-vm.trs"
  echo "**********************************************************************" >&2
  printf 'SKIPPED: verbs suite on Soft-RoCE: %s\n' "$@" >&2
  echo "**********************************************************************" >&2
  exit 0
}

[[ -x $vm ]] || skip "rdma-vm not found at $vm"
if ! "$vm" --check > "$results/check.txt" 2>&1; then
  if [[ $(id -u) == 0 ]] || sudo -n true 2> /dev/null; then
    echo "test-rdma: installing what rdma-vm needs (rdma-vm --install)" >&2
    "$vm" --install >&2 || skip "rdma-vm --install failed"
  else
    skip "rdma-vm --check reports missing pieces (run '$vm --install' as root or with sudo):" "$(grep MISSING "$results/check.txt")"
  fi
fi

# The test programs: make check builds them too, but this script may run on its own.
make -C "$build" -j"$(nproc)" check TESTS= TEST_SUITE_LOG="$results/build-suite.log" > "$results/build.log" 2>&1 ||
  { tail -n 30 "$results/build.log" >&2; echo "test-rdma: building the test programs failed" >&2; exit 1; }
# The guest sees $PWD read-write and the rest of the host read-only, so run from the build dir.
cd "$build"
rc=0
"$vm" --hosts 3 --mem 2G --timeout 1800 -- bash "$top/test/rdma/suite.sh" "$top" "$build" "$results" || rc=$?
if ((rc == 125)); then skip "the VM did not start (rdma-vm exit 125); see the messages above"; fi
exit $rc
