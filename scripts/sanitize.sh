#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test suite under sanitizers, each in its own build directory beside _build:
#   _build-asan  --enable-sanitizers=address,undefined, make check-code (all of make check but
#                the tests that read files only: source_tests in Makefile.am)
#   _build-tsan  --enable-sanitizers=thread, the tests that run threads (test_offload's
#                thread-per-handle case, the handle table, the progress thread of
#                NAA_PROGRESS=thread in test_progress, naa_waitany & co. taking handles
#                from it in test_completion) and naa-server serving them and
#                forking kernel workers (test_server_faults), and its handshake sweeper
#                and session threads under attack (test_hostile); kept ofi+shm endpoints
#                and their bells across connections (test_shm_reuse, test_shm_bell_wait:
#                the client's waits on the bell, the progress thread's too), and
#                naa-server's pool of threads joining those that ended (test_pool_reap), and
#                the listeners polling for requests between connections (test_request_pace)
# The Python package is built too (PYTHON, default /usr/bin/python3, which has Debian's pytest
# and numpy), so that make check-code under ASan runs its pytest suite against an instrumented
# extension and libnaa (test/python/lib.sh preloads the runtime into the interpreter).
# NAA_TEST_TIME_SCALE (3 under ASan, 5 under TSan) stretches the deadlines that tests give
# naa-server and the latencies they accept, as the sanitizers slow everything down.
# Any report fails the run (halt_on_error). Usage: scripts/sanitize.sh [asan|tsan]...
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(( $(nproc) < 2 ? $(nproc) : 2 ))
NAA_BUILD_DIR=$top/_build bash "$top/scripts/setup.sh" >/dev/null   # packages + autoreconf

build() {  # build DIR SANITIZERS
  mkdir -p "$1"
  cd "$1"
  [[ -f Makefile && config.status -nt "$top/configure" ]] ||
    "$top/configure" --enable-werror --enable-sanitizers="$2" PYTHON="${PYTHON:-/usr/bin/python3}" >/dev/null
  make -j"$jobs" >/dev/null
}

run_asan() {
  build "$top/_build-asan" address,undefined
  echo "sanitize: make check-code under ASan+UBSan (halt_on_error, detect_leaks=1)"
  NAA_TEST_TIME_SCALE=3 ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$top/test/sanitizers/lsan.supp:print_suppressions=0 \
    make -j"$((2 * jobs))" VERBOSE=yes check-code  # twice: the tests mostly wait (scripts/test.sh)
}

run_tsan() {
  build "$top/_build-tsan" thread
  echo "sanitize: thread tests under TSan (halt_on_error)"
  local tests=(test/unit/test_handle_table test/integration/test_offload test/integration/test_server_faults
    test/integration/test_progress test/integration/test_completion test/integration/test_hostile
    test/integration/test_shm_reuse test/integration/test_shm_bell_wait test/unit/test_pool_reap
    test/integration/test_request_pace)
  # Of the other test programs, only those these tests run are built (test_hostile's
  # shm_hostile, test_progress's conformance NAA): each costs a TSan compile and link.
  local helpers=(test/integration/shm_hostile test/conformance/conformance-naa)
  NAA_TEST_TIME_SCALE=5 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$top/test/sanitizers/tsan.supp \
    make -j"$jobs" VERBOSE=yes check TESTS="${tests[*]}" check_PROGRAMS="${tests[*]} ${helpers[*]}"
}

status=0
for what in "${@:-asan tsan}"; do
  for w in $what; do
    case $w in
      asan) run_asan || status=1 ;;
      tsan) run_tsan || status=1 ;;
      *) echo "sanitize.sh: unknown '$w' (asan or tsan)" >&2; exit 2 ;;
    esac
  done
done
echo "sanitize: $([[ $status == 0 ]] && echo clean || echo FAILED)"
exit $status
