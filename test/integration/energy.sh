#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_ENERGY=powercap with examples/vecadd (2 invocations) against naa-server, reading a directory
# laid out as /sys/class/powercap (a package and its DRAM zone): the NAA_STATS block names the
# source and gives the joules of the 2 invocation windows; NAA_TRACE holds a "host energy"
# counter event at each end of each window and the window's joules on the span's end, which
# naa-trace --check accepts and summarises (and refuses once a counter goes back). A missing tree
# is said once, with the reason, and counts nothing; without NAA_ENERGY, no energy at all.
# Against a naa-server that measures the tree too, the NAA's joules come with each reply
# (doc/protocol.md §3.5): an NAA line beside the host's in NAA_STATS, NAA_J on the trace's
# invocation ends and an "NAA energy" counter; against one that does not, only the host's.
# The joules themselves are checked by test_energy, which advances the counters.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "energy: SKIP: python3 is not installed"; exit 77; }
start_server
tree=$naa_test_dir/powercap
mkdir -p "$tree/intel-rapl:0" "$tree/intel-rapl:0:0"
printf 'package-0\n' >"$tree/intel-rapl:0/name"
printf 'dram\n' >"$tree/intel-rapl:0:0/name"
for z in intel-rapl:0 intel-rapl:0:0; do
  printf '262143328850\n' >"$tree/$z/max_energy_range_uj"
  printf '123456789\n' >"$tree/$z/energy_uj"
done
fail() { echo "energy: FAIL: $*" >&2; exit 1; }
run() {
  env SLURM_PROCID=0 NAA_STATS=1 NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" \
    NAA_TIMEOUT=60 "$@" "$NAA_EXAMPLES/vecadd" 1000 >"$naa_test_dir/out" 2>"$naa_test_dir/err" ||
    { cat "$naa_test_dir/out" "$naa_test_dir/err"; exit 1; }
}
who='^naa-stats\[[0-9]*, rank 0\]: '
mkdir "$naa_test_dir/trace"
run NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$tree" NAA_TRACE="$naa_test_dir/trace"
cat "$naa_test_dir/err"
grep -q "${who}host energy: powercap (package-0, dram of package-0)\$" "$naa_test_dir/err" ||
  fail "the block does not name the source"
grep -q "${who}function 10 at $NAA_TEST_HOST:$NAA_TEST_PORT: host [0-9.]* J over 2 invocation windows of [0-9.]* ms: [0-9.]* J per invocation, [0-9.]* J per GB\$" \
  "$naa_test_dir/err" || fail "no energy line for function 10"
# This naa-server measures nothing: only the host's joules, and no error.
if grep -q "${who}function 10 at [^ ]*: NAA " "$naa_test_dir/err"; then fail "NAA joules from an NAA that measures none"; fi
grep -q "${who}errors: none\$" "$naa_test_dir/err" || fail "errors against an NAA without energy"
# One process, one file (named per job, step, rank and pid: doc/tracing.md).
trace= n=0
for f in "$naa_test_dir"/trace/naa-trace.*.json; do [ -f "$f" ] && trace=$f n=$((n + 1)); done
[ "$n" -eq 1 ] || fail "$n trace files, not one, in $naa_test_dir/trace"
python3 - "$trace" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] != "M"]
counters = [e for e in events if e["ph"] == "C"]
assert len(counters) == 4 and all(e["name"] == "host energy" for e in counters), counters
assert all(e["args"]["J"] >= 0 for e in counters), counters
ends = [e for e in events if e["ph"] == "e" and e["name"] == "invocation"]
assert len(ends) == 2 and all(e["args"]["host_J"] >= 0 for e in ends), ends
PY
python3 "$NAA_SRCDIR/tools/naa-trace/naa-trace" --check "$naa_test_dir/trace" >"$naa_test_dir/summary"
cat "$naa_test_dir/summary"
grep -q "host energy [0-9.]* J over 2 windows" "$naa_test_dir/summary" || fail "naa-trace summary without energy"
# A counter that goes back is a broken trace.
python3 - "$trace" "$naa_test_dir/bad.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
c = [e for e in t["traceEvents"] if e.get("ph") == "C"]
c[0]["args"]["J"] = c[-1]["args"]["J"] + 1  # the first reading above the last
json.dump(t, open(sys.argv[2], "w"))
PY
if python3 "$NAA_SRCDIR/tools/naa-trace/naa-trace" --check "$naa_test_dir/bad.json" >"$naa_test_dir/bad" 2>&1; then
  fail "naa-trace --check accepted a counter that goes back"
fi
grep -q "counter host energy goes back" "$naa_test_dir/bad" || { cat "$naa_test_dir/bad"; fail "no reason"; }
# No tree: said once, with the reason; nothing counted.
run NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$naa_test_dir/absent"
cat "$naa_test_dir/err"
[ "$(grep -c 'NAA_ENERGY: no energy is measured: powercap: .*absent: No such file or directory' "$naa_test_dir/err")" -eq 1 ] ||
  fail "the missing tree is not reported once"
grep -q "${who}host energy: not measured: powercap: " "$naa_test_dir/err" || fail "the block does not say why"
if grep -q " J over " "$naa_test_dir/err"; then fail "joules without a source"; fi
# Off (the default): no energy.
run NAA_POWERCAP_ROOT="$tree"
if grep -q "energy" "$naa_test_dir/err"; then fail "energy lines without NAA_ENERGY"; fi
# naa-bench: joules per round trip and per GB beside the latency, or a note why not.
bench="$NAA_TOOLS/naa-bench/naa-bench"
args="--host $NAA_TEST_HOST --port $NAA_TEST_PORT --tests latency --sizes 1,4K --iters 20"
NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$tree" "$bench" $args >"$naa_test_dir/bench" 2>&1 ||
  { cat "$naa_test_dir/bench"; fail "naa-bench"; }
cat "$naa_test_dir/bench"
grep -q '^# host energy: powercap (package-0, dram of package-0), ' "$naa_test_dir/bench" || fail "naa-bench names no source"
# host_naa_rows HOST NAA: the latency rows whose host and NAA joules columns match the patterns.
host_naa_rows() {
  awk -v host="$1" -v naa="$2" '/^#Size/ {on = $(NF-7) == "Host" && $(NF-6) == "J/RT" && $(NF-3) == "NAA" && $NF == "J/GB"; next}
    on && /^[0-9]/ && $(NF-3) ~ host && $(NF-2) ~ host && $(NF-1) ~ naa && $NF ~ naa {n++} END {print n + 0}' "$naa_test_dir/bench"
}
# This naa-server measures nothing: the host's joules, "-" for the NAA's.
[ "$(host_naa_rows '^[0-9.]+$' '^-$')" -eq 2 ] || fail "naa-bench latency rows without host joules"
grep -q '^# NAA energy: ' "$naa_test_dir/bench" || fail "naa-bench without the NAA energy note"
NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$naa_test_dir/absent" "$bench" $args >"$naa_test_dir/bench" 2>&1
grep -q '^# host energy: not measured: powercap: ' "$naa_test_dir/bench" || fail "naa-bench does not say why"
if grep -q 'Host J/RT' "$naa_test_dir/bench"; then fail "naa-bench host columns without a source"; fi
"$bench" $args >"$naa_test_dir/bench" 2>&1
grep -q '^# host energy: off' "$naa_test_dir/bench" || fail "naa-bench without the note"
# naa-server measures its node over each kernel run and says so when it stops.
NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$tree" "$NAA_SERVER" --address "$NAA_TEST_HOST" --port 0 \
  --ready-file "$naa_test_dir/port2" 2>"$naa_test_dir/server2" &
server2=$!
naa_test_pids="$naa_test_pids $server2"
i=0
while [ ! -s "$naa_test_dir/port2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
port2=$(cat "$naa_test_dir/port2")
mkdir "$naa_test_dir/trace2"
run NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$tree" NAA_TRACE="$naa_test_dir/trace2" \
  NAA_SPEC="$NAA_TEST_HOST:$port2:10:2"
cat "$naa_test_dir/err"
NAA_ENERGY=powercap NAA_POWERCAP_ROOT="$tree" "$bench" $args --port "$port2" >"$naa_test_dir/bench" 2>&1 ||
  { cat "$naa_test_dir/bench"; fail "naa-bench against the measuring naa-server"; }
cat "$naa_test_dir/bench"
[ "$(host_naa_rows '^[0-9.]+$' '^[0-9.]+$')" -eq 2 ] || fail "naa-bench latency rows without the NAA's joules"
kill -TERM $server2
wait $server2 || :
cat "$naa_test_dir/server2"
grep -q '^naa-server: energy: powercap (package-0, dram of package-0), read before and after each kernel run$' \
  "$naa_test_dir/server2" || fail "naa-server names no source"
grep -q '^naa-server: kernel 10 ([a-z0-9_]*): 2 runs, [0-9.]* J over [0-9.]* ms of kernel time, [0-9.]* J per run$' \
  "$naa_test_dir/server2" || fail "naa-server has no energy line for kernel 10"
# ... and sends the joules of each run with its reply: the NAA's line beside the host's.
grep -q "${who}function 10 at $NAA_TEST_HOST:$port2: NAA [0-9.]* J over 2 kernel runs (powercap (package-0, dram of package-0)): [0-9.]* J per invocation, [0-9.]* J per GB\$" \
  "$naa_test_dir/err" || fail "no NAA energy line for function 10"
grep -q "${who}function 10 at $NAA_TEST_HOST:$port2: host [0-9.]* J over 2 invocation windows" \
  "$naa_test_dir/err" || fail "no host energy line beside the NAA's"
trace=$(ls "$naa_test_dir"/trace2/naa-trace.*.json)
python3 - "$trace" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] != "M"]
naa = [e for e in events if e["ph"] == "C" and e["name"] == "NAA energy"]
assert len(naa) == 2 and all(e["args"]["J"] >= 0 for e in naa), naa
ends = [e for e in events if e["ph"] == "e" and e["name"] == "invocation"]
assert len(ends) == 2 and all(e["args"]["NAA_J"] >= 0 and e["args"]["host_J"] >= 0 for e in ends), ends
PY
python3 "$NAA_SRCDIR/tools/naa-trace/naa-trace" --check "$naa_test_dir/trace2" >"$naa_test_dir/summary"
cat "$naa_test_dir/summary"
grep -q "host energy [0-9.]* J over 2 windows, [0-9.]* J each; NAA energy [0-9.]* J over 2 kernel runs" \
  "$naa_test_dir/summary" || fail "naa-trace summary without the NAA's energy"
echo "energy: the source named, 2 windows counted and traced; a missing tree said once; off by default;" \
  "the NAA's joules beside the host's where it measures them"
