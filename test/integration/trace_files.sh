#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The files of NAA_TRACE and the figures of NAA_STATS: a trace file is created at the first
# call, mode 0600, never through a link or over an existing file (naa_create fails, naming
# it, and the link's target is untouched); its name carries the job, step, rank and pid, so
# two steps of one rank keep both; a missing NAA_TRACE directory is created (0700), one that
# cannot be fails naa_create with the reason; a fork()ed child that exits writes neither the
# parent's trace nor its statistics again; naa-trace reads what it can of a directory with a
# cut file in it and names the file it skipped.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "trace_files: SKIP: python3 is not installed"; exit 77; }
start_server
NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2"
NAA_TIMEOUT=60
export NAA_SPEC NAA_TIMEOUT
d=$naa_test_dir
fail() { echo "trace_files: FAIL: $*" >&2; exit 1; }

# A link planted where the process's file goes (the name is predictable: sh's pid is the
# program's after exec).
mkdir "$d/planted"
echo "precious" >"$d/target"
chmod 600 "$d/target"
if NAA_TRACE="$d/planted" sh -c 'ln -s "$1" "$2/naa-trace.p$$.json"; exec "$3" 10' sh \
  "$d/target" "$d/planted" "$NAA_EXAMPLES/vecadd" >"$d/out" 2>&1; then
  cat "$d/out"; fail "traced through a planted link"
fi
[ "$(cat "$d/target")" = precious ] || fail "the link's target was overwritten"
grep -q "NAA_TRACE: cannot create $d/planted/naa-trace.p[0-9]*.json: File exists" "$d/out" ||
  { cat "$d/out"; fail "no cause naming the file"; }

# Names per job, step and rank; mode 0600.
for step in 0 1; do
  NAA_TRACE="$d/steps" SLURM_JOB_ID=77 SLURM_STEP_ID=$step SLURM_PROCID=0 "$NAA_EXAMPLES/vecadd" 10 \
    >"$d/out" 2>&1 || { cat "$d/out"; fail "traced step $step"; }
done
ls "$d/steps"
for step in 0 1; do
  f=$(echo "$d"/steps/naa-trace.j77.s$step.r0.p*.json)
  [ -f "$f" ] || fail "no file for step $step"
  [ "$(stat -c %a "$f")" = 600 ] || fail "$f has mode $(stat -c %a "$f")"
done
# The directory was missing: created, 0700, as mkdir -p does.
[ "$(stat -c %a "$d/steps")" = 700 ] || fail "the trace directory has mode $(stat -c %a "$d/steps")"
NAA_TRACE="$d/deep/er" "$NAA_EXAMPLES/vecadd" 10 >"$d/out" 2>&1 || { cat "$d/out"; fail "traced into a new path"; }
[ -f "$(echo "$d"/deep/er/naa-trace.p*.json)" ] || fail "no file in the new directory"

# A directory that cannot be: naa_create fails, saying why.
: >"$d/plain"
if NAA_TRACE="$d/plain/sub" "$NAA_EXAMPLES/vecadd" 10 >"$d/out" 2>&1; then
  cat "$d/out"; fail "ran without its trace"
fi
grep -q "naa_create failed: .*NAA_TRACE: cannot create the directory $d/plain/sub: Not a directory" "$d/out" ||
  { cat "$d/out"; fail "no cause for the directory"; }

# fork(): the child's exit writes nothing of the parent's.
mkdir "$d/fork"
NAA_TRACE="$d/fork" NAA_STATS=1 "$NAA_BUILDDIR/test/integration/fork_after_calls" >"$d/out" 2>"$d/err" ||
  { cat "$d/out" "$d/err"; fail "fork_after_calls"; }
cat "$d/out" "$d/err"
child=$(sed -n 's/^child //p' "$d/out")
[ "$(ls "$d/fork" | wc -l)" -eq 1 ] || { ls -l "$d/fork"; fail "not one trace file after the fork"; }
grep -q "^naa-stats\[$child\]" "$d/err" && fail "the child printed the parent's statistics"
grep -q "^naa-stats\[[0-9]*\]: function 10 at .*: 5 invocations" "$d/err" || fail "the parent's 5 invocations"
python3 - "$d"/fork/naa-trace.p*.json <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
n = sum(1 for e in events if e.get("name") == "naa_invoke")
assert n == 5, "%d naa_invoke events, not 5" % n
PY

# naa-trace: a cut file among good ones is skipped, by name.
cp "$d"/steps/naa-trace.j77.s0.r0.p*.json "$d/steps/naa-trace.j77.s2.r0.p1.json"
truncate -s 100 "$d/steps/naa-trace.j77.s2.r0.p1.json"
python3 "$NAA_SRCDIR/tools/naa-trace/naa-trace" "$d/steps" >"$d/out" 2>"$d/err" ||
  { cat "$d/out" "$d/err"; fail "naa-trace failed over a cut file"; }
cat "$d/out" "$d/err"
grep -q "^naa-trace: skipped $d/steps/naa-trace.j77.s2.r0.p1.json: " "$d/err" || fail "the cut file not named"
grep -q "^naa-trace: 2 files, " "$d/out" || fail "the readable files not read"
echo "trace_files: links, names, modes, directories, fork and a cut file as they should be"
