# SPDX-License-Identifier: BSD-3-Clause
# Sourced: count_results DIR... adds up the automake-style results (*.trs beside their *.log)
# under each DIR into $passed, $failed, $skipped, counting CMocka cases and TAP cases one by one.
passed=0 failed=0 skipped=0
# summed REGEX LOG: the sum of the counts (the fourth field) on LOG's lines matching REGEX.
summed() { awk -v re="$1" '$0 ~ re { n += $4 } END { print n + 0 }' "$2"; }
count_results() {
  local trs log result p f s
  for trs in $(find "$@" -name '*.trs' 2>/dev/null); do
    log=${trs%.trs}.log
    result=$(sed -n 's/^:test-result: //p' "$trs")
    if grep -q '^\[==========\] .* test(s) run\.' "$log" 2>/dev/null; then
      # A log can hold several programs' summaries (the verbs suite runs one after another).
      p=$(summed '^\[  PASSED  \] [0-9]+ test\(s\)\.' "$log"); passed=$((passed + p))
      f=$(summed '^\[  FAILED  \] [0-9]+ test\(s\), listed below:' "$log"); failed=$((failed + f))
      s=$(summed '^\[  SKIPPED \] [0-9]+ test\(s\), listed below:' "$log"); skipped=$((skipped + s))
      [[ $result == PASS || $f -gt 0 ]] || failed=$((failed + 1))  # crashed before its summary
    else
      # One result per script, one per case of a TAP test (the pytest suite).
      for r in $result; do
        case $r in PASS|XFAIL) passed=$((passed + 1)) ;; SKIP) skipped=$((skipped + 1)) ;; *) failed=$((failed + 1)) ;; esac
      done
      [[ -n $result ]] || failed=$((failed + 1))
    fi
  done
}

# Prints what failed under DIR...: of a CMocka log, each failed case from its "[ RUN ]" on (and the
# case it crashed in), of any other log its last 60 lines. A CI log shows little; keep it to the point.
show_failures() {
  local log
  for log in $(grep -l -E '^:test-result: (FAIL|ERROR)' $(find "$@" -name '*.trs' 2>/dev/null) /dev/null | sed 's/\.trs$/.log/'); do
    echo "==== $log"
    if grep -q '^\[ RUN      \]' "$log"; then
      awk '/^\[ RUN      \]/ { n = 0; open = 1 }
           { if (open) buf[n++] = $0 }
           /^\[  FAILED  \] [A-Za-z_]/ {
             if (open) { for (i = 0; i < n; i++) print (i < 40 || i >= n - 40) ? buf[i] : (i == 40 ? "  [...]" : ""); }
             open = 0 }
           /^\[       OK \]|^\[  SKIPPED \]/ { open = 0 }
           END { if (open) { print "  (no verdict for this case: it crashed or hung)";
                             for (i = (n > 60 ? n - 60 : 0); i < n; i++) print buf[i] } }' "$log" | grep -v '^$'
    else
      tail -n 60 "$log"
    fi
  done
}
