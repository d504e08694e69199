#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Makes doc/naa-trace-mpi.png and the figures of doc/tracing.md: examples/mpi_offload with 4
# Open MPI ranks against one naa-server on this host, NAA_STATS=1 and NAA_TRACE=DIR, merged and
# drawn by naa-trace. Usage: doc/trace-picture.sh BUILDDIR [OUTDIR] (OUTDIR: a new temporary
# directory); prints the stats blocks and naa-trace's summary, leaves job.json and the PNG in
# OUTDIR.
set -eu
build=$(cd "${1:?usage: trace-picture.sh BUILDDIR [OUTDIR]}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$(mktemp -d /tmp/naa-trace-picture-XXXXXX)}
mkdir -p "$out/trace"
"$build/tools/naa-server/naa-server" --address 127.0.0.1 --port 0 --ready-file "$out/port" \
  2>"$out/server.log" &
server=$!
trap 'kill $server 2>/dev/null || :' EXIT
while [ ! -s "$out/port" ]; do sleep 0.1; done
# Outside any Slurm job; mpirun refuses root without the two OMPI_ALLOW variables.
env -u SLURM_JOB_ID -u SLURM_PROCID -u SLURM_JOBID OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NAA_SPEC="127.0.0.1:$(cat "$out/port"):10:2" \
  mpirun --oversubscribe -np 4 -x NAA_SPEC -x NAA_STATS=1 -x NAA_TRACE="$out/trace" \
  "$build/examples/mpi_offload" >"$out/mpi.out" 2>"$out/mpi.err"
cat "$out/mpi.out"
grep '^naa-stats' "$out/mpi.err" | sort -t' ' -k3,3
python3 "$src/tools/naa-trace/naa-trace" --check -o "$out/job.json" --png "$out/naa-trace-mpi.png" \
  "$out/trace"
echo "trace-picture: $out/naa-trace-mpi.png, $out/job.json"
