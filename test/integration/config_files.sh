#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Configuration files are read only when regular and at most 1 MiB: NAA_CONF, NAA_AUTH_KEY_FILE
# and the plugstack.conf that slurm.conf's PlugStackConfig names, each pointed at /dev/zero
# (read without end before: memory until the OOM killer), at a FIFO nobody writes (an open
# that blocked naa_create for ever) and at a file of 2 MiB, make naa_create fail at once with
# NAA_ERR_CONFIG (11) and the reason. Each run is bounded in time (and, outside a sanitizer's
# run, in memory) so that a regression fails instead of taking the machine down.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
cause=$NAA_BUILDDIR/test/integration/create_cause
d=$naa_test_dir
limit=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" 'BEGIN { print int(20 * s) }')
mkfifo "$d/fifo"
head -c 2097152 /dev/zero | tr '\0' '#' >"$d/big"
unset NAA_SPEC NAA_CONF NAA_AUTH_KEY_FILE SLURM_SPANK_NAA_CODES
fail() { echo "config_files: FAIL: $*" >&2; exit 1; }

# run LABEL EXPECTED-CAUSE-PATTERN [create_cause args]: in the environment the caller set.
run() {
  label=$1 want=$2
  shift 2
  rc=0
  (
    [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || ulimit -v 4000000
    exec timeout "$limit" "$cause" "$@"
  ) >"$d/out" 2>"$d/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$d/out" "$d/err"; fail "$label: create_cause ended with status $rc (124: it hung)"; }
  grep -q "^11 naa_create_attr: .*$want" "$d/out" || { cat "$d/out" "$d/err"; fail "$label: no NAA_ERR_CONFIG saying \"$want\""; }
  echo "$label: $(cat "$d/out")"
}

for f in zero fifo big; do
  case $f in
    zero) path=/dev/zero want="/dev/zero is not a regular file (a character device)" ;;
    fifo) path=$d/fifo want="$d/fifo is not a regular file (a FIFO)" ;;
    big) path=$d/big want="$d/big holds more than [0-9]* bytes (2097152)" ;;
  esac
  # naa.conf of a Slurm job holding an naa licence.
  SLURM_JOB_ID=1 SLURM_JOB_LICENSES=naa:1 NAA_CONF=$path run "NAA_CONF=$f" "$want"
  # plugstack.conf, named by slurm.conf.
  echo "PlugStackConfig=$path" >"$d/slurm.conf"
  SLURM_JOB_ID=1 SLURM_JOB_LICENSES=naa:1 SLURM_CONF=$d/slurm.conf run "PlugStackConfig=$f" "$want"
  # The authentication key file, read before any connection is tried.
  NAA_AUTH_KEY_FILE=$path run "NAA_AUTH_KEY_FILE=$f" "cannot read the authentication key file: $want" 127.0.0.1:1
done
echo "config_files: /dev/zero, a FIFO and 2 MiB refused at once for all three"
