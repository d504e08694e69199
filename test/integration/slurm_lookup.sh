#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa_create in a Slurm job whose environment does not say what it asked for (no --naa, no
# SLURM_JOB_LICENSES) asks libslurm, in a child process: an unusable slurm.conf (libslurm's
# fatal() exits the process it runs in) fails the call with the reason, and the program goes
# on; a missing one (libslurm retries it for 60 s) fails it with NAA_ERR_TIMEOUT once
# NAA_CONNECT_TIMEOUT has passed; where the environment answers, libslurm is not asked.
# Needs libnaa built with the Slurm headers and libslurm installed; no slurmctld.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
cause=$NAA_BUILDDIR/test/integration/create_cause
d=$naa_test_dir
scale=${NAA_TEST_TIME_SCALE:-1}
: >"$d/empty.conf"
unset NAA_SPEC SLURM_SPANK_NAA_CODES SLURM_JOB_LICENSES
SLURM_JOB_ID=1
export SLURM_JOB_ID
fail() { echo "slurm_lookup: FAIL: $*" >&2; exit 1; }

# An empty slurm.conf: libslurm's fatal() ends the child, not the program.
SLURM_CONF=$d/empty.conf "$cause" >"$d/out" 2>"$d/err" || { rc=$?; cat "$d/out" "$d/err"; fail "the program was ended (status $rc)"; }
cat "$d/out" "$d/err"
grep -q "built without Slurm headers" "$d/out" && { echo "slurm_lookup: SKIP: libnaa was built without the Slurm headers (libslurm-dev)"; exit 77; }
grep -q "cannot load libslurm" "$d/out" && { echo "slurm_lookup: SKIP: libslurm is not installed"; exit 77; }
grep -q "^3 naa_create_attr: Slurm job 1: libslurm exited with status 1 in the process asking it" "$d/out" ||
  fail "no NAA_ERR_NO_NAA naming libslurm's exit"

# A missing slurm.conf: no longer than NAA_CONNECT_TIMEOUT (libslurm would retry for 60 s).
limit=$(awk -v s="$scale" 'BEGIN { print int(2 * s + 0.999) }')
start=$(date +%s)
SLURM_CONF=$d/missing.conf NAA_CONNECT_TIMEOUT=$limit "$cause" >"$d/out" 2>"$d/err" ||
  { rc=$?; cat "$d/out" "$d/err"; fail "the program was ended (status $rc)"; }
took=$(( $(date +%s) - start ))
cat "$d/out"
grep -q "^6 naa_create_attr: Slurm job 1: libslurm did not answer within NAA_CONNECT_TIMEOUT ($((limit * 1000)) ms)" "$d/out" ||
  fail "no NAA_ERR_TIMEOUT"
[ "$took" -lt $((limit + 20)) ] || fail "took $took s with NAA_CONNECT_TIMEOUT=$limit"

# The environment answers: libslurm is not asked (it would complain on stderr).
SLURM_CONF=$d/missing.conf SLURM_JOB_LICENSES=scratch:1 "$cause" >"$d/out" 2>"$d/err" || fail "licences from the environment"
grep -q "^3 .*has neither --naa nor an naa licence (licences: scratch:1)" "$d/out" || { cat "$d/out"; fail "the environment's licences"; }
[ ! -s "$d/err" ] || { cat "$d/err"; fail "libslurm was asked although the environment answered"; }
echo "slurm_lookup: libslurm's exit and its 60 s retry stay in the child; the environment spares it"
