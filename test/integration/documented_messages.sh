#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The failure causes the man pages quote are those libnaa gives: each case provokes a failure
# for real (nothing listening, another service talking on the port, naa-server's memory limit,
# malformed naa_attr_t fields, no NAA_SPEC entry), reads the cause from naa_last_error(3)
# (create_cause) and matches it against the text quoted in the page, taken from the page
# itself (host:port, N, M and "..." there stand for what varies). Changing either side alone
# fails this test.
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "documented_messages: SKIP: python3 is not installed"; exit 77; }
cause=$NAA_BUILDDIR/test/integration/create_cause
failed=0
# check PAGE KEY CODE OUTPUT: the quoted line of man/PAGE holding KEY (.It Dq, .Dq or .Dl)
# must match the cause in OUTPUT ("CODE cause"), whose code must be CODE.
check() {
  if python3 - "$NAA_SRCDIR/man/$1" "$2" "$3" "$4" <<'PY'
import re, sys
page, key, code, output = sys.argv[1:]
quoted = None
for line in open(page):
    if line.startswith((".It Dq ", ".Dl ", ".Dq ")) and key in line:
        quoted = line.split(" ", 2 if line.startswith(".It") else 1)[-1].rstrip("\n")
        quoted = quoted.replace("\\e", "\\").rstrip(" ;")
        break
if quoted is None:
    sys.exit("%s: no quoted line holding %r" % (page, key))
pattern = re.escape(quoted)
for placeholder, regex in (("host:port", r"\S+:\S+"), ("127.0.0.1:40000", r"\S+:\d+"), ("...", ".*")):
    pattern = pattern.replace(re.escape(placeholder), regex)
pattern = re.sub(r"\b[NMX]\b", r"\\d+", pattern)
got_code, _, got = output.partition(" ")
if got_code != code or not re.search(pattern, got):
    sys.exit("%s quotes %r (code %s)\n  libnaa said %r (code %s)" % (page, quoted, code, got, got_code))
PY
  then echo "documented_messages: $1 agrees on: $2"
  else failed=1
  fi
}

# Nothing listens: a port that was free a moment ago.
free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
check naa.7 "nothing listens there" 4 "$("$cause" "127.0.0.1:$free_port" ofi+tcp)"
check naa_last_error.3 "naa_create_attr: connection to" 4 "$("$cause" "127.0.0.1:$free_port" ofi+tcp)"

# Another service that talks first (as SSH does) owns the port. (A greeting shorter than
# libfabric's connection response reads as a refusal: naa(7).)
python3 -c '
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
def serve(c):
    c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
    while c.recv(4096): pass
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
' "$naa_test_dir/talker.tmp" &
naa_test_pids="$naa_test_pids $!"
until [ -s "$naa_test_dir/talker.tmp" ]; do sleep 0.1; done
check naa.7 "what answers there is not an NAA" 4 "$("$cause" "127.0.0.1:$(cat "$naa_test_dir/talker.tmp")" ofi+tcp)"

# naa-server's memory limit.
start_server --client-memory 1K
check naa.7 "exceed the NAA's memory limit" 8 "$("$cause" "$NAA_TEST_HOST:$NAA_TEST_PORT" "" 4096)"

# naa_attr_t fields, named.
check naa_create_attr.3 "naa_attr_t.transport" 1 "$("$cause" "$NAA_TEST_HOST:$NAA_TEST_PORT" tcp)"
check naa_create_attr.3 "naa_attr_t.naa" 1 "$("$cause" 10.0.0.7:12345:10:2)"

# No NAA_SPEC entry for the code.
check naa.7 "no NAA for function code" 3 "$(NAA_SPEC=127.0.0.1:1:11:1 "$cause")"

exit $failed
