#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# naa-info --kernels (doc/protocol.md §3.6) over ofi+tcp and ofi+shm: against naa-server with the
# test plugin it lists exactly the table `naa-server --list-kernels` prints, built-in and plugin
# kernels told apart, for the NAA given and for the NAAs of NAA_SPEC; against the conformance NAA
# (which, as the reference NAAs, never names itself naa-server and never sees the ask) it says
# the NAA does not list its kernels and exits 3 at once, with NAA_CONNECT_TIMEOUT and NAA_TIMEOUT
# far beyond the bound it is held to. With NAA_TRANSPORT=verbs, over verbs alone. A transport that libfabric here lacks is said and left
# out; with neither, the test is skipped.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
info="$NAA_TOOLS/naa-info/naa-info"
plugin=${NAA_TEST_KERNEL_PLUGIN:?the test plugin (make check sets NAA_TEST_KERNEL_PLUGIN)}
scale=${NAA_TEST_TIME_SCALE:-1}
fail() {
  echo "FAIL: $1" >&2
  for f in "$naa_test_dir"/*.log "$naa_test_dir"/*.out; do [ -f "$f" ] && { echo "---- $f"; cat "$f"; }; done >&2
  exit 1
}

# The server's own table, "CODE NAME" per line.
"$NAA_SERVER" --kernel "$plugin" --list-kernels | awk '{print $1, $2}' > "$naa_test_dir/table"
grep -q "^100 xor_ff$" "$naa_test_dir/table" || fail "naa-server --list-kernels lacks the plugin's kernels"

# listed OUT: the rows naa-info printed in OUT as "CODE NAME", compared with the server's table.
listed() {
  sed -n '/^  code  name/,$p' "$1" | tail -n +2 | awk '{print $1, $2}' > "$1.rows"
  cmp -s "$naa_test_dir/table" "$1.rows" || {
    diff "$naa_test_dir/table" "$1.rows" >&2 || true
    fail "$NAA_TRANSPORT: naa-info's list in $1 differs from naa-server --list-kernels"
  }
}

kernels() {
  export NAA_TRANSPORT=$1
  t=${1#ofi+}
  start_server -v --kernel "$plugin" 2> "$naa_test_dir/server-$t.log"
  naa=$NAA_TEST_HOST:$NAA_TEST_PORT
  "$info" --kernels "$naa" > "$naa_test_dir/given-$t.out" 2>&1 || fail "$1: naa-info --kernels $naa failed"
  listed "$naa_test_dir/given-$t.out"
  grep -q "^kernels of $naa (command line): $(wc -l < "$naa_test_dir/table"), via " "$naa_test_dir/given-$t.out" ||
    fail "$1: no heading with the number of kernels"
  grep -Eq "^ +1  add1 +built-in$" "$naa_test_dir/given-$t.out" || fail "$1: add1 not listed as built-in"
  grep -Eq "^ +100  xor_ff +plugin$" "$naa_test_dir/given-$t.out" || fail "$1: xor_ff not listed as a plugin kernel"
  grep -q "asks for the kernels from function code 1: listed" "$naa_test_dir/server-$t.log" ||
    fail "$1: naa-server did not log the ask"
  # The NAAs of NAA_SPEC, each once, only those serving --function's code.
  NAA_SPEC="$naa:10:2,$naa:1:1" "$info" --kernels > "$naa_test_dir/spec-$t.out" 2>&1 ||
    fail "$1: naa-info --kernels for NAA_SPEC failed"
  listed "$naa_test_dir/spec-$t.out"
  [ "$(grep -c '^kernels of ' "$naa_test_dir/spec-$t.out")" -eq 1 ] || fail "$1: an NAA of NAA_SPEC listed twice"
  grep -q "(NAA_SPEC entry 1)" "$naa_test_dir/spec-$t.out" || fail "$1: NAA_SPEC's entry not named"
  # Behind the energy's ask and answer (§3.5), where both ends measure: the same list.
  tree=$naa_test_dir/powercap
  mkdir -p "$tree/intel-rapl:0"
  printf 'package-0\n' > "$tree/intel-rapl:0/name"
  printf '262143328850\n' > "$tree/intel-rapl:0/max_energy_range_uj"
  printf '123456789\n' > "$tree/intel-rapl:0/energy_uj"
  NAA_ENERGY=powercap NAA_POWERCAP_ROOT=$tree start_server -v --kernel "$plugin" 2> "$naa_test_dir/server-energy-$t.log"
  NAA_LOG_LEVEL=info NAA_ENERGY=powercap NAA_POWERCAP_ROOT=$tree "$info" --kernels "$NAA_TEST_HOST:$NAA_TEST_PORT" \
    > "$naa_test_dir/energy-$t.out" 2> "$naa_test_dir/energy-$t.log" || fail "$1: naa-info --kernels with NAA_ENERGY failed"
  listed "$naa_test_dir/energy-$t.out"
  grep -q "reports the energy of each kernel run" "$naa_test_dir/energy-$t.log" ||
    fail "$1: the energy's answer did not come with the list"
  echo "ok: $1: naa-info --kernels lists naa-server's $(wc -l < "$naa_test_dir/table") kernels, also behind the energy's answer"

  # The conformance NAA: reached, no list, exit 3, and no wait for a deadline.
  start_conformance "$1" --window-us 50
  reference=$NAA_TEST_HOST:$NAA_CONFORMANCE_PORT
  start=$(date +%s)
  rc=0
  NAA_CONNECT_TIMEOUT=600 NAA_TIMEOUT=600 "$info" --kernels "$reference" \
    > "$naa_test_dir/reference-$t.out" 2>&1 || rc=$?
  took=$(($(date +%s) - start))
  [ "$rc" -eq 3 ] || fail "$1: naa-info --kernels against the conformance NAA exited $rc, not 3"
  grep -q "^kernels of $reference (command line): this NAA does not list its kernels (a reference NAA" \
    "$naa_test_dir/reference-$t.out" || fail "$1: naa-info did not say the conformance NAA lists no kernels"
  [ "$took" -lt $((30 * scale)) ] || fail "$1: naa-info took $took s against the conformance NAA: a deadline, not the answer, ended it"
  echo "ok: $1: the conformance NAA does not list its kernels: said, exit 3, in $took s"
}

# The verbs suite (test/rdma/suite.sh) runs it with NAA_TRANSPORT=verbs: there the ask and the
# answer travel by message.
if [ "${NAA_TRANSPORT:-}" = verbs ]; then
  kernels verbs
  exit 0
fi
each_ofi_transport kernels
