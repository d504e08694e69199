#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: a software NAA on loopback and the vector-addition offload, checked.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
bash "$top/scripts/setup.sh"

dir=$(mktemp -d /tmp/naa-demo-XXXXXX)
"$build/tools/naa-server/naa-server" --address 127.0.0.1 --port 0 --ready-file "$dir/port" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1000); do [[ -s $dir/port ]] && break; sleep 0.01; done
[[ -s $dir/port ]] || { echo "demo: naa-server did not start" >&2; exit 1; }

export NAA_SPEC="127.0.0.1:$(cat "$dir/port"):10:2"   # function code 10 = vecadd_f64, 2 inputs
echo "demo: NAA_SPEC=$NAA_SPEC"
"$build/examples/vecadd" 1000000
