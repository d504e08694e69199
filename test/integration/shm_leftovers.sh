#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What killed libnaa processes leave in /dev/shm (an endpoint's 16 MiB region, its bell, a
# killed server's listener object) is removed when naa-server's shm listener starts, and
# nothing else is: not the objects of a live process, not a live server's listener object, not
# a listener object just made, not names libnaa does not make
# (lib/transport/ofi/shm/leftovers.hpp).
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
require_shm

# A pid no process has now.
pid=$(( ($(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 3000) + 7000) % $(cat /proc/sys/kernel/pid_max) ))
[ "$pid" -ge 1000 ] || pid=$((pid + 1000))
while kill -0 "$pid" 2>/dev/null; do pid=$((pid + 1)); done
hex=0123456789abcdef
dead="$pid-$hex:0:0 $pid-$hex:0:0.bell $pid-fedcba9876543210"
live="$$-$hex:0:0 $$-$hex:0:0.bell"
other="$pid-$hex.other $pid-0123 $pid-${hex}extra"
# A live server first, whose listener object (locked, and made older than a minute) stays.
start_server
first=$NAA_TEST_PORT
uid=$(id -u)
touch -d '-2 minutes' "/dev/shm/naa-$uid-$first"
dead="$dead naa-$uid-99$$"   # a killed server's listener object, made two minutes ago
other="$other naa-$uid-98$$"  # one made just now: perhaps a server starting
for f in $dead $live $other; do
  head -c 4096 /dev/zero > "/dev/shm/$f"
  naa_test_files="$naa_test_files /dev/shm/$f"
done
touch -d '-2 minutes' "/dev/shm/naa-$uid-99$$"
# A dead process's region stamped after a live server's last read of its queue stays (its request
# may wait there: shm_auto.sh); these were stamped before the first server's object says it read.
for f in $dead; do case $f in naa-*) ;; *) touch -d '-3 minutes' "/dev/shm/$f" ;; esac; done

NAA_LOG_LEVEL=info start_server > "$naa_test_dir/server.log" 2>&1
live="$live naa-$uid-$first"
status=0
for f in $dead; do
  if [ -e "/dev/shm/$f" ]; then echo "FAIL: $f, left by a process that is gone, is still there" >&2; status=1; fi
done
for f in $live $other; do
  if [ ! -e "/dev/shm/$f" ]; then echo "FAIL: $f was removed" >&2; status=1; fi
done
# make -j check starts other servers meanwhile, and any of them may have removed them first.
grep "that processes which died left in /dev/shm" "$naa_test_dir/server.log" ||
  echo "note: this server logged no removal (another test's server came first)"

NAA_TRANSPORT=ofi+shm NAA_SPEC="127.0.0.1:$first:10:2" "$NAA_EXAMPLES/vecadd" 1000 > "$naa_test_dir/vecadd" 2>&1 &&
  grep -q "all 2000 elements correct" "$naa_test_dir/vecadd" ||
  { cat "$naa_test_dir/vecadd"; echo "FAIL: the first server no longer serves over ofi+shm" >&2; status=1; }
[ $status -ne 0 ] || echo "the objects of dead process $pid and of a dead server removed; live, young and foreign ones kept"
exit $status
