#!/usr/bin/env bash
# The whole test suite: unit tests and integration tests against a real naa-server.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
bash "$top/scripts/setup.sh"
cd "$build"

status=0
# make check ends with test/install/consumer.sh: make install into a temporary DESTDIR, build the examples with pkg-config.
make -j"$(nproc)" check || status=$?

# One line over every test case (CMocka cases and test scripts), as "N passed, N failed, N skipped".
passed=0 failed=0 skipped=0
for trs in $(find . -name '*.trs'); do
  log=${trs%.trs}.log
  result=$(sed -n 's/^:test-result: //p' "$trs")
  if grep -q '^\[==========\] .* test(s) run\.' "$log" 2>/dev/null; then
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log"); passed=$((passed + ${p:-0}))
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' "$log"); failed=$((failed + ${f:-0}))
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' "$log"); skipped=$((skipped + ${s:-0}))
    [[ $result == PASS || -n ${f:-} ]] || failed=$((failed + 1))  # crashed before its summary
  else
    case $result in PASS) passed=$((passed + 1)) ;; SKIP) skipped=$((skipped + 1)) ;; *) failed=$((failed + 1)) ;; esac
  fi
done
if ((status != 0)); then
  for log in $(grep -l -E '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') | sed 's/\.trs$/.log/'); do
    echo "==== $log"; tail -n 60 "$log"
  done
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
