#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-info lists the transports and the NAAs of NAA_SPEC; --ping tells reachable from not.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
info="$NAA_TOOLS/naa-info/naa-info"
start_server
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 9)
export NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2,$NAA_TEST_HOST:$dead:3:1" NAA_TIMEOUT=10

"$info" > "$naa_test_dir/plain"
cat "$naa_test_dir/plain"
grep -q "^libnaa " "$naa_test_dir/plain"
grep -q "NAA_TRANSPORT=${NAA_TRANSPORT:-auto} -> " "$naa_test_dir/plain"
grep -q "function code  10  $NAA_TEST_HOST:$NAA_TEST_PORT  2 input(s)  (NAA_SPEC entry 1)" "$naa_test_dir/plain"
grep -q "function code   3  $NAA_TEST_HOST:$dead  1 input(s)  (NAA_SPEC entry 2)" "$naa_test_dir/plain"

"$info" --ping --function 10 | tee "$naa_test_dir/ping10"
grep -q "reachable, connect + MRSP [0-9.]* ms, transport .*, pacing 0 us" "$naa_test_dir/ping10"

# A function code NAA_SPEC has no entry for: said, and a failure.
if "$info" --ping --function 99 > "$naa_test_dir/ping99"; then
  echo "naa-info --ping --function 99 exited 0 with no entry for 99" >&2; exit 1
fi
grep -q "none: NAA_SPEC has no entry for function code 99" "$naa_test_dir/ping99"

if "$info" --ping > "$naa_test_dir/pingall" 2>&1; then
  echo "naa-info --ping succeeded although an NAA is unreachable" >&2; exit 1
fi
cat "$naa_test_dir/pingall"
grep -q "UNREACHABLE" "$naa_test_dir/pingall"

# --params: every parameter with its value and source, the key's length only, exit 1 for a
# malformed one (naming it).
NAA_AUTH_KEY=not-for-your-eyes "$info" --params > "$naa_test_dir/params"
grep -q "^NAA_TIMEOUT=10$" "$naa_test_dir/params"
grep -A1 "^NAA_TIMEOUT=" "$naa_test_dir/params" | grep -q "source: environment"
grep -q "^NAA_AUTH_KEY=(17 bytes, not shown)$" "$naa_test_dir/params"
if grep -q "not-for-your-eyes" "$naa_test_dir/params"; then echo "--params showed the key" >&2; exit 1; fi
if NAA_PACING_US=soon "$info" --params > "$naa_test_dir/badparams"; then
  echo "naa-info --params exited 0 with a malformed NAA_PACING_US" >&2; exit 1
fi
grep -q "MALFORMED: NAA_PACING_US 'soon' is not 0..10000000" "$naa_test_dir/badparams"

# --job without Slurm: NAA_SPEC's table of which rank uses which NAA.
env -u SLURM_JOB_ID -u SLURM_NTASKS NAA_SPEC=a:1:10:2,b:2:10:2,c:3:11:1 "$info" --job --ranks 5 > "$naa_test_dir/job"
cat "$naa_test_dir/job"
grep -q "^job (none): 5 rank(s) (--ranks), codes from NAA_SPEC, NAA_SPREAD=rank: " "$naa_test_dir/job"
grep -q "^  0  a:1  2 input(s)  (NAA_SPEC)  ranks 0 2 4$" "$naa_test_dir/job"
grep -q "^  1  b:2  2 input(s)  (NAA_SPEC)  ranks 1 3$" "$naa_test_dir/job"
grep -q "^  0  c:3  1 input(s)  (NAA_SPEC)  ranks 0 1 2 3 4$" "$naa_test_dir/job"
if env -u SLURM_JOB_ID -u NAA_SPEC "$info" --job 2> "$naa_test_dir/nojob"; then
  echo "naa-info --job exited 0 outside a job without NAA_SPEC" >&2; exit 1
fi
grep -q "not inside a Slurm allocation" "$naa_test_dir/nojob"

# A port that accepts TCP connections and never answers: NAA_CONNECT_TIMEOUT bounds --ping's
# connect, not NAA_TIMEOUT, and the reason names it (naa-info(1)).
# Over ofi+tcp, which a build without libfabric lacks.
if ! have_provider tcp; then
  echo "left out: no ofi+tcp here, so no silent TCP port to ping"
  exit 0
fi
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(3600)
' "$naa_test_dir/silent.port" &
naa_test_pids="$naa_test_pids $!"
until [ -s "$naa_test_dir/silent.port" ]; do sleep 0.1; done
start=$(date +%s)
if NAA_TRANSPORT=ofi+tcp NAA_TIMEOUT=600 NAA_CONNECT_TIMEOUT=1 \
  NAA_SPEC="127.0.0.1:$(cat "$naa_test_dir/silent.port"):10:2" "$info" --ping > "$naa_test_dir/silent" 2>&1; then
  echo "naa-info --ping succeeded against a port that never answers" >&2; exit 1
fi
took=$(($(date +%s) - start))
grep UNREACHABLE "$naa_test_dir/silent"
[ "$took" -lt 300 ] || { echo "naa-info --ping took $took s: NAA_TIMEOUT (600 s) bounded it, not NAA_CONNECT_TIMEOUT (1 s)" >&2; exit 1; }
grep -q "UNREACHABLE: connection to 127.0.0.1:[0-9]* timed out (NAA_CONNECT_TIMEOUT: 1000 ms)" "$naa_test_dir/silent"
