# SPDX-License-Identifier: BSD-3-Clause
# Sourced: count_results DIR... adds up the automake-style results (*.trs beside their *.log)
# under each DIR into $passed, $failed, $skipped, counting CMocka cases one by one.
passed=0 failed=0 skipped=0
count_results() {
  local trs log result p f s
  for trs in $(find "$@" -name '*.trs' 2>/dev/null); do
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
}

# Prints the log of every failed test under DIR...
show_failures() {
  local log
  for log in $(grep -l -E '^:test-result: (FAIL|ERROR)' $(find "$@" -name '*.trs' 2>/dev/null) /dev/null | sed 's/\.trs$/.log/'); do
    echo "==== $log"; tail -n 60 "$log"
  done
}
