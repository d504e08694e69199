#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A libnaa process ends by the signal it is sent. Debian's libfabric loads libinfinipath, whose
# constructor gives SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT a handler that calls
# exit(1) (lib/diag/signal_defaults.hpp): a client sent SIGTERM ended with status 1, or hung
# for good when the signal came while libfabric initialised; a crash left no core. libnaa
# gives those signals their default actions back when it is loaded, naa-server when it starts.
# Here clients holding connected handles over ofi+tcp and ofi+shm are sent SIGTERM and SIGSEGV,
# and so is naa-server: each must end by that signal within 10 s.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
ulimit -c 0  # the SIGSEGV cases dump no core

# ended_by PID SIGNAL WHAT: sends SIGNAL to PID, a child of this shell, which must end by it.
ended_by() {
  kill -"$2" "$1"
  i=0
  while running "$1" && [ $i -lt 1000 ]; do i=$((i + 1)); sleep 0.01; done
  if running "$1"; then
    kill -KILL "$1"; wait "$1" 2>/dev/null || :
    echo "FAIL: $3 did not end within 10 s of SIG$2" >&2; return 1
  fi
  rc=0; wait "$1" || rc=$?
  want=$((128 + $(kill -l "$2")))
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $3 sent SIG$2 ended with status $rc, not $want (by the signal)" >&2; return 1
  fi
  echo "$3 ended by SIG$2 (status $rc)"
}

transports=ofi+tcp
if have_provider shm; then transports="$transports ofi+shm"; fi
start_server
server_pid=${naa_test_pids##* }
# Under AddressSanitizer SIGSEGV is the sanitizer's (it reports and exits with 1): those cases
# run in the plain build only.
signals="TERM SEGV"
if grep -q -E "libasan|libtsan" "/proc/$server_pid/maps"; then
  signals=TERM; echo "note: a sanitizer handles SIGSEGV in this build: the SIGSEGV cases are not run"
fi
export NAA_SPEC="127.0.0.1:$NAA_TEST_PORT:3:1" NAA_TIMEOUT=10 NAA_LOG_LEVEL=info
status=0
for transport in $transports; do
  for sig in $signals; do
    start_idle_clients 2 "$transport"
    taken=no
    grep -q libinfinipath "/proc/$idle_client/maps" 2>/dev/null && taken=yes
    ended_by "$idle_client" $sig "a client with 2 handles over $transport" || status=1
    exec 3>&-
    # Where libinfinipath is loaded, the client says which signals it gave back (naa(7)).
    if [ $taken = yes ] && ! grep "SIGTERM.* back to their default actions: libinfinipath" "$naa_test_dir/client.log"; then
      cat "$naa_test_dir/client.log"; echo "FAIL: no log line on the signals given back" >&2; status=1
    fi
  done
done

# naa-server itself, which served all of them: a crash ends it by the signal (SIGTERM is its
# own: it stops cleanly).
if ! running "$server_pid"; then
  rc=0; wait "$server_pid" || rc=$?
  echo "FAIL: naa-server ended (status $rc) while its clients were killed" >&2; exit 1
fi
[ "$signals" = TERM ] || ended_by "$server_pid" SEGV "naa-server" || status=1
exit $status
