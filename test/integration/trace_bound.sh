#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_TRACE streams: with NAA_TRACE_BUFFER=64, a process that made 400 invocations (about 3,200
# events) has written all but at most 64 of them to its file before it exits, so that no
# more than 64 wait in memory however long it runs; the file, written in many blocks, is one
# that naa-trace --check accepts with all 400 invocations. A process whose file cannot grow
# (RLIMIT_FSIZE, as a full disk) logs it once, runs on and exits 0, and naa-trace reads the
# complete events of the cut file, saying it is cut.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "trace_bound: SKIP: python3 is not installed"; exit 77; }
start_server
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:3:1"
NAA_TIMEOUT=60
NAA_TRANSPORT=ofi+tcp
export NAA_SPEC NAA_TIMEOUT NAA_TRANSPORT
d=$naa_test_dir
client=$NAA_BUILDDIR/test/integration/trace_bound
naa_trace=$NAA_SRCDIR/tools/naa-trace/naa-trace
fail() { echo "trace_bound: FAIL: $*" >&2; exit 1; }

NAA_TRACE="$d/t" NAA_TRACE_BUFFER=64 "$client" 400 >"$d/out" 2>&1 || { cat "$d/out"; fail "the client"; }
cat "$d/out"
written=$(sed -n 's/^events written: //p' "$d/out")
f=$(echo "$d"/t/naa-trace.p*.json)
python3 - "$f" "$written" <<'PY' || fail "more events waited in memory than NAA_TRACE_BUFFER"
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] != "M"]
invokes = sum(1 for e in events if e["name"] == "naa_invoke")
assert invokes == 400, "%d naa_invoke events, not 400" % invokes
written = int(sys.argv[2])
# All but naa_finalize's event were recorded before the client counted.
waiting = len(events) - 1 - written
print("trace_bound: %d events in all, %d written before exit, %d waiting in memory" % (len(events), written, waiting))
sys.exit(0 if 0 <= waiting <= 64 else 1)
PY
python3 "$naa_trace" --check "$d/t" >"$d/summary" 2>&1 || { cat "$d/summary"; fail "naa-trace --check"; }
cat "$d/summary"
grep -q "^pid [0-9]*: function 3 at .*: 400 invocations" "$d/summary" || fail "no summary of the 400 invocations"

# A file that cannot grow past 32 blocks (ulimit -f): a write fails (EFBIG; SIGXFSZ ignored,
# as a full disk sends none), logged once.
mkdir "$d/full"
NAA_TRACE="$d/full" NAA_TRACE_BUFFER=64 sh -c 'trap "" XFSZ; ulimit -f 32; exec "$0" 400' "$client" \
  >"$d/out" 2>&1 || { cat "$d/out"; fail "the client whose trace cannot grow"; }
cat "$d/out"
[ "$(grep -c "NAA_TRACE: writing .* failed: File too large; the trace of this process ends there" "$d/out")" -eq 1 ] ||
  fail "not one warning for the failed write"
python3 "$naa_trace" "$d/full" >"$d/summary" 2>&1 || { cat "$d/summary"; fail "naa-trace on the cut file"; }
cat "$d/summary"
grep -q "^naa-trace: $d/full/naa-trace.p[0-9]*.json is cut short (.*): read its [1-9][0-9]* complete events" "$d/summary" ||
  fail "the cut file not read as such"
echo "trace_bound: at most NAA_TRACE_BUFFER events in memory; a file that cannot grow is read as far as it goes"
