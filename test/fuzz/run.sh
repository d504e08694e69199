#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs each libFuzzer target for FUZZ_SECONDS (default 45) on a scratch copy of its seed
# corpus (the repository's seeds stay as they are) and prints how many inputs it executed.
# Usage: run.sh CORPUS_DIR TARGET...   (the seeds of test/fuzz/fuzz_X are in CORPUS_DIR/X)
set -eu
corpus=$1
shift
seconds=${FUZZ_SECONDS:-45}
total=0
for target in "$@"; do
  name=$(basename "$target")
  name=${name#fuzz_}
  work=$(mktemp -d)
  cp "$corpus/$name"/* "$work"/
  log=$target.log
  echo "check-fuzz: $target for $seconds s (log: $log)"
  if ! "$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$target-" "$work" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "check-fuzz: $target FAILED; the crashing input is $target-crash-* (see $log)" >&2
    rm -rf "$work"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "check-fuzz: $target: $runs executions, $(ls "$work" | wc -l) corpus inputs, no findings"
  total=$((total + runs))
  rm -rf "$work"
done
echo "check-fuzz: $total executions in all"
