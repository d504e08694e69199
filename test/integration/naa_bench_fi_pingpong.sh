#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-bench --fi-pingpong runs fi_pingpong on loopback over the provider the handle uses and adds
# its round trip and libnaa's ratios to it, over ofi+tcp and ofi+shm, in 5 runs that alternate
# with libnaa's iterations (seen through a wrapper on PATH that logs each fi_pingpong command).
# Apart from naa_bench.sh so that a machine without fi_pingpong counts it as skipped, not the
# rest. Only the shape and the sign of the numbers are checked, never a timing.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
if ! command -v fi_pingpong >/dev/null 2>&1; then
  echo "SKIP: fi_pingpong is not installed (Debian: libfabric-bin)"
  exit 77
fi
require_shm
bench="$NAA_TOOLS/naa-bench/naa-bench"
real=$(command -v fi_pingpong)
mkdir "$naa_test_dir/bin"
cat > "$naa_test_dir/bin/fi_pingpong" <<EOF
#!/bin/sh
echo "\$*" >> "$naa_test_dir/commands"
exec "$real" "\$@"
EOF
chmod +x "$naa_test_dir/bin/fi_pingpong"
PATH=$naa_test_dir/bin:$PATH
start_server
export NAA_TIMEOUT=20
args="--host $NAA_TEST_HOST --port $NAA_TEST_PORT --tests latency --sizes 64 --iters 20 --min-iters 20 --fi-pingpong"

for transport in ofi+tcp ofi+shm; do
  rm -f "$naa_test_dir/commands"
  NAA_TRANSPORT=$transport "$bench" $args > "$naa_test_dir/table"
  cat "$naa_test_dir/table"
  # 20 iterations: 5 runs of 4, each a server (-B) and a client (-P, retried while refused).
  cat "$naa_test_dir/commands"
  [ "$(grep -c -- '-B .* -S 64 -I 4$' "$naa_test_dir/commands")" -eq 5 ] ||
    { echo "$transport: not 5 fi_pingpong runs of 4 iterations" >&2; exit 1; }
  ! grep -q -- '-I 20' "$naa_test_dir/commands" || { echo "$transport: one run of all iterations" >&2; exit 1; }
  grep -q 'fi_pp RT(us) *Med/fi_pp *Mean/fi_pp$' "$naa_test_dir/table" ||
    { echo "$transport: no fi_pingpong columns" >&2; exit 1; }
  # Size, Iters, median, p99, mean, MB/s, CPU per round trip, then fi_pingpong's round trip and both ratios.
  [ "$(awk '/^# latency:/ {on = 1; next} on && /^64 / && NF == 10 && $8 > 0 && $0 !~ / - / {n++} END {print n + 0}' "$naa_test_dir/table")" -eq 1 ] ||
    { echo "$transport: the latency row lacks a positive fi_pingpong round trip or a ratio" >&2; exit 1; }

  # The ratios are medians of each run's: positive where the round trip is (to their 3
  # decimals: on a loaded machine one of them may print as 0.000).
  NAA_TRANSPORT=$transport "$bench" $args --csv > "$naa_test_dir/csv"
  cat "$naa_test_dir/csv"
  awk -F, '$1 == "latency" && $3 == 64 { v[$2 "," $4] = $5 }
    END {
      if (!("fi_pingpong,round_trip_us" in v) || !("libnaa/fi_pingpong,median_ratio" in v) ||
          !("libnaa/fi_pingpong,mean_ratio" in v) || v["fi_pingpong,round_trip_us"] <= 0 ||
          v["libnaa/fi_pingpong,median_ratio"] < 0 || v["libnaa/fi_pingpong,mean_ratio"] < 0) {
        print "no positive fi_pingpong round_trip_us, or a ratio missing" > "/dev/stderr"; exit 1
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
