# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the Slurm test scripts (make check-slurm). start_slurm CONF_TEXT writes naa.conf
# ("@PORT1@" and "@PORT2@" stand for the naa-servers' ports) and starts a private single-node
# Slurm (slurm-local) whose plugstack loads the naa_spank plugin built here. Everything is torn
# down when the script exits. Missing Slurm, plugin or slurm-local: exit 77 (SKIP), saying what.
. "$NAA_SRCDIR/test/integration/lib.sh"

# NAA_REQUIRE_SLURM=1 (CI, which installs Slurm first) turns every skip into a failure.
skip() {
  if [ "${NAA_REQUIRE_SLURM:-0}" = 1 ]; then echo "FAIL (NAA_REQUIRE_SLURM=1): $*"; exit 1; fi
  echo "SKIP: $*"; exit 77
}

SLURM_LOCAL=${SLURM_LOCAL:-$NAA_SRCDIR/test/harness/slurm-local}
[ -x "$SLURM_LOCAL" ] || skip "slurm-local not found at $SLURM_LOCAL (set SLURM_LOCAL)"
[ -f "${NAA_SPANK_PLUGIN:-}" ] || skip "naa_spank.so not built (configure found no slurm/spank.h)"
for b in slurmctld slurmd munged srun sbatch salloc; do
  command -v $b >/dev/null || skip "$b not installed ('$SLURM_LOCAL install')"
done

slurm_dir=$naa_test_dir/slurm
chmod 0755 "$naa_test_dir"  # munged wants every parent of its socket searchable by all
# Servers first (lib.sh's list), then Slurm, then the directory.
trap 'SLURM_LOCAL_PORT=$slurm_port "$SLURM_LOCAL" stop "$slurm_dir" >/dev/null 2>&1
      for p in $naa_test_pids; do kill $p 2>/dev/null || :; wait $p 2>/dev/null || :; done
      rm -rf "$naa_test_dir"' EXIT

# A free port with a free successor (slurmctld, slurmd) away from the default 6817, which other
# clusters on the machine may use, and below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range), where any connection of any process (the naa-servers' clients,
# the tests before) may hold a port without listening on it, and slurmd's bind would then fail.
# No socket of any state may use either port.
free_port_pair() {
  read -r ephemeral _ < /proc/sys/net/ipv4/ip_local_port_range || ephemeral=32768
  low=10000 high=$((ephemeral - 2))
  for _ in $(seq 50); do
    p=$(( low + $(od -An -N2 -tu2 /dev/urandom) % (high - low) ))
    if ! ss -Hatun "( sport = :$p or sport = :$((p + 1)) )" | grep -q .; then
      echo $p; return
    fi
  done
  echo "no free port pair for Slurm" >&2; exit 1
}

# Two naa-servers (all kernels) for the tests to share out; each logs its clients
# ("client ... connected") to server1.log, server2.log.
start_server --verbose 2>"$naa_test_dir/server1.log"; NAA_PORT1=$NAA_TEST_PORT
start_server --verbose 2>"$naa_test_dir/server2.log"; NAA_PORT2=$NAA_TEST_PORT

# clients N: how many clients server N has logged so far.
clients() { grep -c 'client .* connected' "$naa_test_dir/server$1.log" || true; }

# job_info_rpcs: how many REQUEST_JOB_INFO_SINGLE RPCs slurmctld has served (sdiag; 0 before the
# first, when sdiag does not list the type).
job_info_rpcs() {
  n=$(sdiag | sed -n 's/^[[:space:]]*REQUEST_JOB_INFO_SINGLE[[:space:]]*([[:space:]]*[0-9]*)[[:space:]]*count:\([0-9]*\).*/\1/p')
  echo "${n:-0}"
}

start_slurm() {
  mkdir -p "$slurm_dir"
  printf '%s\n' "$1" | sed "s/@PORT1@/$NAA_PORT1/g; s/@PORT2@/$NAA_PORT2/g; s/@HOST@/$NAA_TEST_HOST/g" \
    >"$naa_test_dir/naa.conf"
  slurm_port=$(free_port_pair)
  if ! env SLURM_LOCAL_PORT=$slurm_port SLURM_LOCAL_MPI=pmix SLURM_LOCAL_TIMEOUT=60 \
      SLURM_LOCAL_SPANK="required $NAA_SPANK_PLUGIN conf=$naa_test_dir/naa.conf" \
      "$SLURM_LOCAL" start "$slurm_dir" >"$naa_test_dir/slurm.env" 2>"$naa_test_dir/slurm.err"; then
    cat "$naa_test_dir/slurm.err"
    skip "Slurm cannot start (slurm-local start failed, see above)"
  fi
  # SLURM_CONF, and as root Open MPI's run-as-root permission (mpirun refuses root otherwise;
  # tests run as root in CI's throwaway machine).
  . "$naa_test_dir/slurm.env"
}

# Runs a command with every NAA_* variable removed, so that tasks see only what the plugin and
# libnaa's Slurm resolver provide. Bounded: no Slurm command may hang a test.
clean() {
  # shellcheck disable=SC2046  # one -u NAME per variable
  timeout 180 env $(env | sed -n 's/^\(NAA_[A-Za-z0-9_]*\)=.*/-u \1/p') "$@"
}

# wait_job ID: until the job has left the queue (at most 120 s); prints its final state.
wait_job() {
  i=0
  while squeue -h -j "$1" 2>/dev/null | grep -q .; do
    i=$((i + 1)); [ $i -le 600 ] || { echo "job $1 still queued/running after 120 s" >&2; scontrol show job "$1" >&2; exit 1; }
    sleep 0.2
  done
}

# expect FILE PATTERN [COUNT]: FILE has COUNT (default 1) lines matching PATTERN.
expect() {
  n=$(grep -c -e "$2" "$1" || true)
  if [ "$n" -ne "${3:-1}" ]; then
    echo "FAIL: expected ${3:-1} line(s) matching '$2' in $1, found $n:" >&2
    cat "$1" >&2
    exit 1
  fi
}
