# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the integration test scripts: start_server [ARGS...] runs $NAA_SERVER on a
# free_port of $NAA_TEST_HOST (loopback unless set; over verbs an address with an RDMA device),
# sets NAA_TEST_PORT, and stops the server when the script exits. require_shm skips the script
# (exit 77) where libfabric offers no usable shm provider. start_idle_clients N TRANSPORT
# connects N idle handles (idle_handles) to NAA_SPEC; running PID tells whether a process has
# not ended; stops_within PID MS WHAT sends SIGTERM and fails unless the server ends cleanly
# within MS ms. start_conformance TRANSPORT [ARGS...] runs $NAA_CONFORMANCE_NAA likewise and
# sets NAA_CONFORMANCE_PORT; each_ofi_transport FUNC runs FUNC ofi+tcp and FUNC ofi+shm, each
# where libfabric here has it, and skips the script where it has neither. settle QUIET_MS
# COUNTER PID waits until the threads COUNTER counts have been asleep and not woken for QUIET_MS
# ms.
: "${NAA_SERVER:?run through make check}"
NAA_TEST_HOST=${NAA_TEST_HOST:-127.0.0.1}
naa_test_dir=$(mktemp -d /tmp/naa-test-XXXXXX)
naa_test_pids=
naa_test_files=  # outside naa_test_dir (a test's /dev/shm objects), removed after the processes
# A process the test stopped (SIGSTOP) acts on SIGTERM only once continued: else the wait hangs.
# SIGCONT goes first: sent after SIGTERM it can reach a process already exiting, and it discards
# the SIGSTOP that ASan's leak check at exit sends its own threads (the check then waits forever).
trap 'for p in $naa_test_pids; do kill -CONT $p 2>/dev/null || :; kill $p 2>/dev/null || :; wait $p 2>/dev/null || :; done; rm -rf "$naa_test_dir" $naa_test_files' EXIT

# free_port: a port for a server, from the range only tests take, in turn (test_port in
# server.h): a test that stops its server and expects nobody to answer at that port is not
# answered by another test's server, as a port 0 the kernel handed out again could be.
free_port() {
  NAA_TEST_HOST=$NAA_TEST_HOST "$NAA_BUILDDIR/test/integration/free_port" || {
    echo "FAIL: no port for a server" >&2
    exit 1
  }
}

start_server() {
  rm -f "$naa_test_dir/port"
  "$NAA_SERVER" --address "$NAA_TEST_HOST" --port "$(free_port)" \
    --ready-file "$naa_test_dir/port" "$@" &
  naa_test_pids="$naa_test_pids $!"
  i=0
  until [ -s "$naa_test_dir/port" ]; do
    i=$((i + 1)); [ $i -le 6000 ] || { echo "naa-server did not start" >&2; exit 1; }
    kill -0 $! 2>/dev/null || { echo "naa-server exited" >&2; exit 1; }
    sleep 0.01
  done
  NAA_TEST_PORT=$(cat "$naa_test_dir/port")
}

start_conformance() {
  naa_conformance_transport=$1
  shift
  rm -f "$naa_test_dir/conformance.port"
  "$NAA_CONFORMANCE_NAA" --transport "$naa_conformance_transport" --address "$NAA_TEST_HOST" \
    --port "$(free_port)" --ready-file "$naa_test_dir/conformance.port" "$@" \
    2> "$naa_test_dir/conformance-${naa_conformance_transport#ofi+}.log" &
  naa_test_pids="$naa_test_pids $!"
  i=0
  until [ -s "$naa_test_dir/conformance.port" ]; do
    i=$((i + 1))
    [ $i -le 6000 ] || { echo "FAIL: $naa_conformance_transport: conformance-naa did not start" >&2; exit 1; }
    sleep 0.01
  done
  NAA_CONFORMANCE_PORT=$(cat "$naa_test_dir/conformance.port")
}

# have_provider NAME: whether libnaa's ofi transport here has libfabric's provider NAME (tcp,
# shm), as naa-info lists it; never in a build without libfabric (--without-libfabric).
have_provider() {
  "$NAA_TOOLS/naa-info/naa-info" 2> /dev/null | grep -q "^          $1  "
}

each_ofi_transport() {
  naa_ofi_ran=0
  for naa_ofi_t in tcp shm; do
    if have_provider "$naa_ofi_t"; then
      "$1" "ofi+$naa_ofi_t"
      naa_ofi_ran=$((naa_ofi_ran + 1))
    else
      echo "left out: libfabric here has no usable $naa_ofi_t provider"
    fi
  done
  if [ $naa_ofi_ran -eq 0 ]; then
    echo "SKIP: libfabric here has neither a usable tcp nor shm provider"
    exit 77
  fi
}

# shm_regions PID: sets naa_regions to the shm regions (not bells) process PID has in /dev/shm,
# which are removed with their bells when the script ends.
shm_regions() {
  naa_regions=$(ls /dev/shm | grep "^$1-" | grep -v '[.]bell$' || :)
  for r in $naa_regions; do naa_test_files="$naa_test_files /dev/shm/$r /dev/shm/$r.bell"; done
}

# resume_after_sweep PID PORT REGION...: a server started now, whose shm listener removes what
# dead processes left in /dev/shm, keeps each REGION, which the stopped server PID (listening on
# PORT) has yet to map when it reads a dead client's request; continued, PID serves vecadd over
# ofi+shm and lives (libfabric 1.17's shm crashes it where a region is gone).
resume_after_sweep() {
  resumed_pid=$1
  resumed_port=$2
  shift 2
  start_server
  for r in "$@"; do
    [ -e "/dev/shm/$r" ] ||
      { echo "FAIL: a starting server removed $r, which the stopped server has yet to map" >&2; exit 1; }
  done
  echo "a server starting meanwhile kept the region the stopped server has yet to map: $*"
  kill -CONT "$resumed_pid"
  NAA_TRANSPORT=ofi+shm NAA_SPEC="127.0.0.1:$resumed_port:10:2" "$NAA_EXAMPLES/vecadd" 1000 \
    > "$naa_test_dir/resumed" 2>&1 ||
    { cat "$naa_test_dir/resumed"; echo "FAIL: the resumed server did not serve" >&2; exit 1; }
  kill -0 "$resumed_pid" || { echo "FAIL: the resumed server died" >&2; exit 1; }
  echo "the server, resumed, serves the next client"
}

require_shm() {
  if ! have_provider shm; then
    echo "SKIP: libfabric here has no usable shm provider"
    exit 77
  fi
}

# N handles over TRANSPORT to the NAA of NAA_SPEC, each having run one invocation, idle until
# descriptor 3 (their stdin) is closed; the process is idle_client. Fails the script when they
# do not all connect.
start_idle_clients() {
  rm -f "$naa_test_dir/ready" "$naa_test_dir/hold"
  mkfifo "$naa_test_dir/hold"
  NAA_TRANSPORT=$2 "$NAA_BUILDDIR/test/integration/idle_handles" "$1" "$naa_test_dir/ready" \
    < "$naa_test_dir/hold" > "$naa_test_dir/client.log" 2>&1 &
  idle_client=$!
  naa_test_pids="$naa_test_pids $idle_client"
  exec 3> "$naa_test_dir/hold"
  i=0
  until [ -s "$naa_test_dir/ready" ]; do
    i=$((i + 1))
    if [ $i -gt 6000 ] || ! kill -0 $idle_client 2>/dev/null; then
      cat "$naa_test_dir/client.log"
      echo "FAIL: $1 clients over $2 did not connect" >&2
      exit 1
    fi
    sleep 0.01
  done
}

# Whether process $1 has not ended: a child of this shell stays a zombie, which kill -0 still
# finds, until it is waited for. The shell may reap it while this reads its state (waiting for
# the command substitution's child): a state that cannot be read is an ended process. The state
# is the field after the name in parentheses, which may hold spaces.
running() {
  proc_state=$(sed -n 's/.*) \([A-Za-z]\) .*/\1/p' /proc/"$1"/stat 2>/dev/null)
  [ -n "$proc_state" ] && [ "$proc_state" != Z ] && [ "$proc_state" != X ]
}

now_ms() { awk '{ print int($1 * 1000) }' /proc/uptime; }

# SIGTERM to naa-server $1, which must end cleanly within $2 ms ($3 says what it was doing);
# false, with the cause on standard error, when it does not.
stops_within() {
  t0=$(now_ms)
  kill -TERM "$1"
  while running "$1" && [ $(($(now_ms) - t0)) -le "$2" ]; do sleep 0.01; done
  if running "$1"; then
    echo "FAIL: SIGTERM did not end naa-server $3 within $2 ms" >&2
    kill -KILL "$1"
    return 1
  fi
  wait "$1" || { echo "FAIL: naa-server $3 did not stop cleanly on SIGTERM" >&2; return 1; }
  echo "SIGTERM ended naa-server $3 in $(($(now_ms) - t0)) ms"
}

# The wake-ups (voluntary context switches) of the threads whose /proc status files are on
# standard input, how many threads, and how many of them are not asleep (state other than S or
# D: running, or ready and waiting for a CPU).
thread_wakeups() {
  awk '/^State:/ { if ($2 != "S" && $2 != "D") a++ }
       /^voluntary_ctxt_switches/ { n += $2; k++ } END { print n + 0, k + 0, a + 0 }'
}

# settle QUIET_MS COUNTER PID: COUNTER PID prints what thread_wakeups prints for some threads of
# process PID. Waits until, sampled every 50 ms, those threads were all asleep and did not wake
# for QUIET_MS ms: the state an idle test measures from, reached on a loaded machine as on a
# quiet one, only later. False when that took longer than 30 s times NAA_TEST_TIME_SCALE. A
# thread ready but starved of the CPU counts as awake, so a busy machine never fakes the quiet.
settle() {
  settle_limit=$(awk -v s="${NAA_TEST_TIME_SCALE:-1}" 'BEGIN { print int(30000 * s) }')
  settle_t0=$(now_ms)
  settle_since=$settle_t0 settle_last=
  while :; do
    settle_now=$(now_ms)
    set -- "$1" "$2" "$3" $("$2" "$3")
    if [ "$4" != "$settle_last" ] || [ "$6" -ne 0 ]; then
      settle_last=$4 settle_since=$settle_now
    elif [ $((settle_now - settle_since)) -ge "$1" ]; then
      echo "settled: no wake-up for $1 ms, $((settle_now - settle_t0)) ms after the wait began"
      return 0
    fi
    [ $((settle_now - settle_t0)) -le "$settle_limit" ] || return 1
    set -- "$1" "$2" "$3"
    sleep 0.05
  done
}
