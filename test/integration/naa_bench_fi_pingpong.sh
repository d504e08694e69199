#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-bench --fi-pingpong runs fi_pingpong on loopback over the provider the handle uses and adds
# its round trip and libnaa's ratios to it, over ofi+tcp and ofi+shm. Apart from naa_bench.sh so
# that a machine without fi_pingpong counts it as skipped, not the rest. Only the shape and
# the sign of the numbers are checked, never a timing.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
if ! command -v fi_pingpong >/dev/null 2>&1; then
  echo "SKIP: fi_pingpong is not installed (Debian: libfabric-bin)"
  exit 77
fi
require_shm
bench="$NAA_TOOLS/naa-bench/naa-bench"
start_server
export NAA_TIMEOUT=20
args="--host $NAA_TEST_HOST --port $NAA_TEST_PORT --tests latency --sizes 64 --iters 20 --min-iters 20 --fi-pingpong"

for transport in ofi+tcp ofi+shm; do
  NAA_TRANSPORT=$transport "$bench" $args > "$naa_test_dir/table"
  cat "$naa_test_dir/table"
  grep -q 'fi_pp RT(us) *Med/fi_pp *Mean/fi_pp$' "$naa_test_dir/table" ||
    { echo "$transport: no fi_pingpong columns" >&2; exit 1; }
  # Size, Iters, median, p99, mean, MB/s, then fi_pingpong's round trip and both ratios.
  [ "$(awk '/^# latency:/ {on = 1; next} on && /^64 / && NF == 9 && $7 > 0 && $0 !~ / - / {n++} END {print n + 0}' "$naa_test_dir/table")" -eq 1 ] ||
    { echo "$transport: the latency row lacks a positive fi_pingpong round trip or a ratio" >&2; exit 1; }

  # The ratios are libnaa's median and mean over fi_pingpong's round trip (to their 3 decimals:
  # on a loaded machine one of them may print as 0.000).
  NAA_TRANSPORT=$transport "$bench" $args --csv > "$naa_test_dir/csv"
  cat "$naa_test_dir/csv"
  awk -F, '$1 == "latency" && $3 == 64 { v[$2 "," $4] = $5 }
    END {
      if (!("fi_pingpong,round_trip_us" in v) || !("libnaa/fi_pingpong,median_ratio" in v) ||
          !("libnaa/fi_pingpong,mean_ratio" in v) || v["fi_pingpong,round_trip_us"] <= 0) {
        print "no positive fi_pingpong round_trip_us, or a ratio missing" > "/dev/stderr"; exit 1
      }
      rt = v["fi_pingpong,round_trip_us"]
      d1 = v["libnaa/fi_pingpong,median_ratio"] - v["libnaa,median_us"] / rt
      d2 = v["libnaa/fi_pingpong,mean_ratio"] - v["libnaa,mean_us"] / rt
      if (d1 * d1 > 1e-5 || d2 * d2 > 1e-5) {
        print "the ratios are not libnaa median and mean over round_trip_us" > "/dev/stderr"; exit 1
      }
    }' "$naa_test_dir/csv"
done

# Not without the latency test, and only to a naa-server on this host.
if "$bench" --host "$NAA_TEST_HOST" --port "$NAA_TEST_PORT" --tests setup --fi-pingpong > "$naa_test_dir/err" 2>&1; then
  echo "--fi-pingpong ran without the latency test" >&2; exit 1
fi
grep -q "add latency to --tests" "$naa_test_dir/err"
if "$bench" --host 192.0.2.1 --tests latency --fi-pingpong > "$naa_test_dir/err" 2>&1; then
  echo "--fi-pingpong ran against a remote host" >&2; exit 1
fi
grep -q "fi_pingpong is compared only over ofi+tcp/ofi+shm on this host" "$naa_test_dir/err"
