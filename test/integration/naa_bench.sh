#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-bench runs every test against a real naa-server and prints the rows it should; --raw runs
# its own raw peer. Only the shape of the output is checked, never a timing.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
bench="$NAA_TOOLS/naa-bench/naa-bench"
start_server
export NAA_TIMEOUT=20
args="--host $NAA_TEST_HOST --port $NAA_TEST_PORT --sizes 1,4K --iters 8 --min-iters 4 --setup-iters 2 --inflight 1,2"

"$bench" $args --raw > "$naa_test_dir/table"
cat "$naa_test_dir/table"
for test in latency throughput setup; do
  grep -q "^# $test: " "$naa_test_dir/table" || { echo "no $test table" >&2; exit 1; }
done
# The overlap test: one table per progress mode, busy and idle host in each, each with its own
# plain round trip, the wake-up floor and the progress thread's CPU share (18 fields a row; the
# share is "-" without a progress thread).
for mode in spin-then-block thread; do
  grep -q "^# overlap with NAA_PROGRESS=$mode: " "$naa_test_dir/table" || { echo "no overlap table for $mode" >&2; exit 1; }
done
[ "$(awk '/^# overlap with/ {on = 1; next} /^$/ {on = 0} on && /^[0-9]/ && NF == 18 {n++} END {print n + 0}' "$naa_test_dir/table")" -eq 4 ] ||
  { echo "overlap rows lack the busy or the idle host" >&2; exit 1; }
[ "$(awk '/^# overlap with NAA_PROGRESS=thread:/ {on = 1; next} /^$/ {on = 0} on && /^[0-9]/ && $0 !~ / - / {n++} END {print n + 0}' "$naa_test_dir/table")" -eq 2 ] ||
  { echo "the thread mode's overlap rows lack a measurement (the progress thread's CPU share?)" >&2; exit 1; }
# Per table one row per size (3 tests and 2 overlap tables, x 2 sizes), each starting with the
# size and its count.
[ "$(grep -c -E '^(1|4096) +[0-9]+ ' "$naa_test_dir/table")" -eq 10 ] || { echo "wrong row count" >&2; exit 1; }
# The latency rows carry the mean, the CPU time per round trip, the raw columns (with theirs)
# and both ratios: 13 numbers, none missing.
[ "$(awk '/^# latency:/ {on = 1; next} /^$/ {on = 0} on && /^[0-9]/ && NF == 13 && $0 !~ / - / {n++} END {print n + 0}' "$naa_test_dir/table")" -eq 2 ] ||
  { echo "latency rows lack the raw measurements" >&2; exit 1; }
# The raw pattern runs over the transport libnaa's handles use (auto: the one it picked), and
# the header names both.
line=$(grep '^# --raw: libnaa over ' "$naa_test_dir/table") || { echo "no --raw transport header" >&2; exit 1; }
lib_transport=$(echo "$line" | sed -e 's/^# --raw: libnaa over \(.*\), raw client and raw peer over .*$/\1/' -e 's/^auto: //')
raw_transport=$(echo "$line" | sed -e 's/^.*, raw client and raw peer over //')
[ -n "$raw_transport" ] && [ "$lib_transport" = "$raw_transport" ] ||
  { echo "--raw compares two transports: $line" >&2; exit 1; }
grep -q -F "raw peer over $raw_transport" "$naa_test_dir/table"

# --load and --load-clients: the header says the load, the latency rows add the load clients'
# round trips per second and everybody's (9 numbers), all measured (over 8 round trips the
# load clients may have been descheduled throughout: theirs may be 0).
"$bench" $args --tests latency --load 1 --load-clients 2 > "$naa_test_dir/load"
cat "$naa_test_dir/load"
grep -q -E '^# load: 1 busy threads, 2 load clients; [0-9]+ CPUs online' "$naa_test_dir/load"
[ "$(awk '/^# latency:/ {on = 1; next} /^$/ {on = 0} on && /^[0-9]/ && NF == 9 && $0 !~ / - / && $9 > 0 && $9 >= $8 {n++} END {print n + 0}' "$naa_test_dir/load")" -eq 2 ] ||
  { echo "latency rows under --load-clients lack the clients' round trips" >&2; exit 1; }
grep -q "Dbuf/serial" "$naa_test_dir/table"

"$bench" $args --tests latency --csv > "$naa_test_dir/csv"
cat "$naa_test_dir/csv"
grep -q '^latency,libnaa,4096,median_us,[0-9.]*$' "$naa_test_dir/csv"
# The mean round trip: fi_pingpong prints half of it as usec/xfer (--fi-pingpong doubles it).
grep -q '^latency,libnaa,4096,mean_us,[0-9.]*$' "$naa_test_dir/csv"
if grep -v -q -E '^[a-z]+,[a-z0-9_/]+,[0-9]+,[a-z0-9_]+,[0-9.]+$' "$naa_test_dir/csv"; then
  echo "--csv printed a line that is not test,variant,size,metric,value" >&2; exit 1
fi

"$bench" --memcpy --sizes 4K --iters 4 --min-iters 4 | grep -q -E '^4096 +4 +[0-9.]+$'

# Without a server to name, it must say so instead of guessing.
if env -u NAA_SPEC "$bench" --tests latency > "$naa_test_dir/none" 2>&1; then
  echo "naa-bench ran without a server" >&2; exit 1
fi
grep -q "no naa-server given" "$naa_test_dir/none"

# --compare gives each handle its own value through naa_attr_t.params, the environment
# untouched: a median and a mean column per value; a name that is no runtime parameter is refused.
"$bench" $args --compare NAA_SPIN_US=0,20,- > "$naa_test_dir/compare"
cat "$naa_test_dir/compare"
grep -q '^# compare: NAA_SPIN_US per handle' "$naa_test_dir/compare"
grep -q -E '^#Size +Iters +0 med\(us\) +0 mean\(us\) +0 MB/s +0 cpu\(us\) +20 med' "$naa_test_dir/compare"
[ "$(grep -c -E '^(1|4096) +[0-9]+ ' "$naa_test_dir/compare")" -eq 2 ] || { echo "wrong --compare rows" >&2; exit 1; }
# --turn: the handles take turns of N round trips.
"$bench" $args --compare NAA_PROGRESS=-,block --turn 7 > "$naa_test_dir/turns"
cat "$naa_test_dir/turns"
grep -q '^# compare: NAA_PROGRESS per handle, turns of 7 round trips alternating' "$naa_test_dir/turns"
[ "$(grep -c -E '^(1|4096) +[0-9]+ ' "$naa_test_dir/turns")" -eq 2 ] || { echo "wrong --turn rows" >&2; exit 1; }
# --fresh-handles: each turn on new handles, one connection per value and turn: 8 round trips
# in turns of 7 are 2 turns, for 2 values and 2 sizes 8 connections (4 without the option),
# counted by a server of its own that logs each one.
NAA_LOG_LEVEL=info "$NAA_SERVER" --address "$NAA_TEST_HOST" --port 0 \
  --ready-file "$naa_test_dir/fresh.port" 2> "$naa_test_dir/fresh-server.log" &
naa_test_pids="$naa_test_pids $!"
i=0
until [ -s "$naa_test_dir/fresh.port" ]; do
  i=$((i + 1)); [ $i -le 6000 ] || { echo "naa-server did not start" >&2; exit 1; }
  sleep 0.01
done
fresh_args=$(echo "$args" | sed "s/--port $NAA_TEST_PORT/--port $(cat "$naa_test_dir/fresh.port")/")
"$bench" $fresh_args --compare NAA_PROGRESS=-,block --turn 7 --fresh-handles > "$naa_test_dir/fresh"
cat "$naa_test_dir/fresh"
connections=$(grep -c 'client .* connected' "$naa_test_dir/fresh-server.log" || true)
[ "$connections" -eq 8 ] || { echo "--fresh-handles made $connections connections, not 8" >&2; exit 1; }
grep -q '^# compare: NAA_PROGRESS per handle, turns of 7 round trips alternating between the handles, each turn on a new handle' "$naa_test_dir/fresh"
[ "$(grep -c -E '^(1|4096) +[0-9]+ ' "$naa_test_dir/fresh")" -eq 2 ] || { echo "wrong --fresh-handles rows" >&2; exit 1; }
if "$bench" $args --compare NAA_NO_SUCH_THING=1,2 > "$naa_test_dir/badcompare" 2>&1; then
  echo "naa-bench --compare accepted a name that is no parameter" >&2; exit 1
fi
grep -q "NAA_NO_SUCH_THING=1' is not NAME=value of a runtime parameter" "$naa_test_dir/badcompare"

# fi_connect_floor, the libfabric floor under a warm naa_create (doc/performance.md): its server
# takes a free port and its client times connections with one exchange each.
floor="$NAA_TOOLS/naa-bench/fi_connect_floor"
"$floor" -s 0 > "$naa_test_dir/floor_server" &
naa_test_pids="$naa_test_pids $!"
tries=0
until grep -q "^listening on port " "$naa_test_dir/floor_server"; do
  tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "fi_connect_floor did not listen" >&2; exit 1; }
  sleep 0.1
done
floor_port=$(awk '/^listening on port / {print $4}' "$naa_test_dir/floor_server")
timeout 60 "$floor" -c "$floor_port" 20 | tee "$naa_test_dir/floor"
grep -q -E '^tcp connection \+ one exchange, 20: median [0-9.]+ us' "$naa_test_dir/floor"

# Standard output not a terminal: with --status-every, a line on standard error per row (at
# most every SEC seconds; a tiny SEC makes every row due), none with 0 and none on stdout.
"$bench" --host "$NAA_TEST_HOST" --port "$NAA_TEST_PORT" --tests latency --sizes 1,4 --iters 4 \
  --status-every 0.000001 > "$naa_test_dir/status.out" 2> "$naa_test_dir/status.err"
cat "$naa_test_dir/status.err"
grep -q "^naa-bench: latency: 1 bytes done, [0-9]* s since the start$" "$naa_test_dir/status.err" &&
  grep -q "^naa-bench: latency: 4 bytes done, " "$naa_test_dir/status.err" ||
  { echo "no status line on stderr per latency row" >&2; exit 1; }
if grep -q "bytes done" "$naa_test_dir/status.out"; then echo "status lines went to stdout" >&2; exit 1; fi
"$bench" --host "$NAA_TEST_HOST" --port "$NAA_TEST_PORT" --tests latency --sizes 1,4 --iters 4 \
  --status-every 0 > "$naa_test_dir/status.out" 2> "$naa_test_dir/status.err"
if grep -q "bytes done" "$naa_test_dir/status.err"; then echo "--status-every 0 still said" >&2; exit 1; fi
