#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# NAA_TRACE=DIR: two ranks of examples/vecadd (2 invocations each) write naa-trace.r0.pPID.json
# and naa-trace.r1.pPID.json; each is valid JSON (python3 -m json.tool), in time order, with one
# invocation span per invocation that begins with its naa_invoke and holds the calls that
# completed it, and its transfer then the NAA's service; naa-trace merges them and summarises both ranks. Without NAA_TRACE, no file.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "trace: SKIP: python3 is not installed"; exit 77; }
start_server
mkdir "$naa_test_dir/trace"
for rank in 0 1; do
  NAA_TRACE="$naa_test_dir/trace" NAA_STATS=1 SLURM_PROCID=$rank NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" \
    NAA_TIMEOUT=60 "$NAA_EXAMPLES/vecadd" 1000 >"$naa_test_dir/out.$rank" 2>&1 ||
    { cat "$naa_test_dir/out.$rank"; exit 1; }
done
for rank in 0 1; do
  f=$(echo "$naa_test_dir"/trace/naa-trace.r$rank.p*.json)
  python3 -m json.tool "$f" >/dev/null || { echo "trace: FAIL: $f is not valid JSON" >&2; exit 1; }
  python3 - "$f" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] != "M"]
ts = [e["ts"] for e in events]
assert ts == sorted(ts), "events not in time order"
begins = [e for e in events if e["ph"] == "b" and e["name"] == "invocation"]
ends = [e for e in events if e["ph"] == "e" and e["name"] == "invocation"]
invokes = [e for e in events if e["name"] == "naa_invoke"]
assert len(begins) == len(ends) == len(invokes) == 2, "not one span per invocation: %d %d %d" % (len(begins), len(ends), len(invokes))
for b, e, i in zip(begins, ends, invokes):
    assert b["ts"] == i["ts"], "span does not begin with its naa_invoke"
    assert b["args"]["function_code"] == 10 and b["args"]["handle"] == i["args"]["handle"]
    assert e["ts"] >= i["ts"] + i["dur"], "span ends before its naa_invoke"
    inside = [c for c in events if c["ph"] == "X" and b["ts"] <= c["ts"] < e["ts"]]
    assert {c["name"] for c in inside} >= {"naa_invoke"}
    for c in inside:
        assert c["ts"] + c["dur"] <= e["ts"] + 0.001, "%s sticks out of its span" % c["name"]
    # The transfer, then the NAA's service, one after the other inside the span.
    stages = [s for s in events if s["ph"] in "be" and s["name"] in ("transfer", "NAA service")
              and b["ts"] <= s["ts"] <= e["ts"]]
    assert [(s["name"], s["ph"]) for s in stages] == [("transfer", "b"), ("transfer", "e"),
        ("NAA service", "b"), ("NAA service", "e")], "stages: %s" % stages
    assert all(s["id"] == b["id"] for s in stages), "a stage of another handle"
    assert b["ts"] <= stages[0]["ts"] and stages[1]["ts"] <= stages[2]["ts"] and stages[3]["ts"] <= e["ts"]
    assert stages[3]["ts"] > stages[2]["ts"], "no NAA service time"
assert [b["args"]["bytes_out"] for b in begins] == [16000, 8000], "bytes"
names = [e["name"] for e in events if e["ph"] == "X"]
assert names[0] == "naa_create" and names[-1] == "naa_finalize", names
PY
done
python3 "$NAA_SRCDIR/tools/naa-trace/naa-trace" --check -o "$naa_test_dir/merged.json" "$naa_test_dir/trace" \
  >"$naa_test_dir/summary"
cat "$naa_test_dir/summary"
python3 -m json.tool "$naa_test_dir/merged.json" >/dev/null
for rank in 0 1; do
  grep -q "^rank $rank: function 10 at $NAA_TEST_HOST:$NAA_TEST_PORT: 2 invocations, .* (transfer .* us, NAA service .* us), 24000 bytes out, 16000 back" \
    "$naa_test_dir/summary" || { echo "trace: FAIL: no summary line for rank $rank" >&2; exit 1; }
done
# The summary's times are NAA_STATS' of the same run: naa_test counts the time inside the
# calls (not the span of a run of polls), and the transfer and the NAA's service agree.
for rank in 0 1; do
  python3 - "$naa_test_dir/out.$rank" "$naa_test_dir/summary" "$rank" <<'PY'
import re, sys
stats = re.search(r"naa-stats\[.*rank %s\]: function 10 .*naa_invoke ([0-9.]+) ms, naa_wait \d+ calls "
                  r"([0-9.]+) ms, naa_test \d+ polls ([0-9.]+) ms; transfer ([0-9.]+) ms, NAA service "
                  r"([0-9.]+) ms" % sys.argv[3], open(sys.argv[1]).read())
trace = re.search(r"^rank %s: .*\(transfer ([0-9.]+) us, NAA service ([0-9.]+) us\).*naa_invoke "
                  r"([0-9.]+) us, naa_wait ([0-9.]+) us, naa_test ([0-9.]+) us" % sys.argv[3],
                  open(sys.argv[2]).read(), re.M)
assert stats and trace, "no NAA_STATS or naa-trace line for rank " + sys.argv[3]
s = dict(zip(("invoke", "wait", "test", "transfer", "service"), (float(x) * 1000 for x in stats.groups())))
n = 2  # the summary gives the transfer and the service per invocation
t = dict(zip(("transfer", "service", "invoke", "wait", "test"), map(float, trace.groups())))
t["transfer"] *= n
t["service"] *= n
for k in s:
    assert abs(s[k] - t[k]) <= 1.5, "rank %s: %s is %.1f us in NAA_STATS, %.1f us in naa-trace" % (sys.argv[3], k, s[k], t[k])
print("trace: rank %s: NAA_STATS and naa-trace agree: %s" % (sys.argv[3], ", ".join("%s %.1f us" % kv for kv in sorted(s.items()))))
PY
done
mkdir "$naa_test_dir/none"
(cd "$naa_test_dir/none" && NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" "$NAA_EXAMPLES/vecadd" 1000 >/dev/null)
[ -z "$(ls "$naa_test_dir/none")" ] || { echo "trace: FAIL: a file without NAA_TRACE" >&2; exit 1; }
echo "trace: two ranks traced, checked and merged"
