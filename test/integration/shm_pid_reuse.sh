#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Pids wrap around (pid_max is 32768 by default), so a long-lived naa-server meets a client with
# the pid of an earlier one. libfabric 1.17's shm listener keeps every client it has heard from
# by endpoint name, and checks a known name's region only by pid: under its own PID:UID:INDEX
# name the new client's connection request was answered into the earlier client's region and
# never sent ("nothing takes connection requests there"). libnaa names its shm endpoints with a
# random part. The test runs two clients with one pid (kernel.ns_last_pid, which needs
# CAP_SYS_ADMIN), over ofi+shm by name so that no fallback hides a failure.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm
last=/proc/sys/kernel/ns_last_pid
if ! (cat "$last" > "$last") 2> /dev/null; then
  echo "SKIP: cannot choose a pid here ($last is not writable: needs CAP_SYS_ADMIN)"; exit 77
fi
export NAA_TRANSPORT=ofi+shm
NAA_LOG_LEVEL=info start_server > "$naa_test_dir/server.log" 2>&1
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=10 NAA_LOG_LEVEL=info

# A pid no process has now, well away from the one the kernel hands out next.
max=$(cat /proc/sys/kernel/pid_max)
pid=$(( ($(cat "$last") + 5000) % max ))
[ "$pid" -ge 1000 ] || pid=$((pid + 1000))
while kill -0 "$pid" 2>/dev/null; do pid=$((pid + 1)); done

# as_pid FILE: vecadd as process $pid (exec keeps the pid through libtool's wrapper); another
# process may take the pid first, so up to 50 tries. The forks are Python's, waited for by
# their pid: the shell's job table, asked to wait for a pid that one of its earlier children
# had, lost track of the second client.
as_pid() {
  rc=0
  python3 - "$pid" "$last" "$NAA_EXAMPLES/vecadd" "$naa_test_dir/$1" <<'PY' || rc=$?
import os, sys
pid, last, prog, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
for _ in range(50):
    with open(last, "w") as f:
        f.write(str(pid - 1))
    child = os.fork()
    if child == 0:
        if os.getpid() != pid:
            os._exit(99)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(prog, [prog, "1000"])
    _, status = os.waitpid(child, 0)
    if child == pid:
        sys.exit(0 if status == 0 else 1)
sys.exit(77)
PY
  [ $rc -ne 77 ] || { echo "SKIP: could not start a process as pid $pid"; exit 77; }
  [ $rc -eq 0 ] && return 0
  cat "$naa_test_dir/$1" "$naa_test_dir/server.log"
  echo "FAIL: the $1 client, process $pid, did not connect" >&2; exit 1
}
as_pid first
as_pid second
grep -q "all 2000 elements correct" "$naa_test_dir/second" || {
  cat "$naa_test_dir/first" "$naa_test_dir/second" "$naa_test_dir/server.log"
  echo "FAIL: the second client, process $pid, computed no correct sum" >&2; exit 1
}
echo "two clients, both process $pid, one after the other: both connected over ofi+shm"
