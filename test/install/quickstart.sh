# SPDX-License-Identifier: BSD-3-Clause
# Sourced by test/install/consumer.sh once everything else passed: doc/quickstart.md followed
# word for word against the staged installation, as a user with an installation in PREFIX
# would. The staged tree stands for PREFIX ($root$prefix): its .pc files are pointed there
# (what `./configure --prefix=$root$prefix && make install` would have written), and the
# quick start's shell blocks run in order in a fresh bash with nothing of the build in the
# environment; only the block of the install itself is left out (make install did it) and
# the port 12345 becomes a free one. The program must print the output the page shows on the
# first try; then, with the NAA stopped, the failure the page shows. Uses consumer.sh's
# $root, $prefix, $stage, $top_srcdir, $staged_modules and fail().

quickstart() {
  page=$top_srcdir/doc/quickstart.md
  dir=$stage/quickstart
  mkdir -p "$dir"
  if [ ! -f "$root$prefix/lib/pkgconfig/naa.pc" ]; then
    echo "consumer: quickstart: SKIP: this build installs naa.pc elsewhere than PREFIX/lib/pkgconfig (libdir $(makevar libdir)), which the quick start assumes"
    return 0
  fi
  command -v bash >/dev/null 2>&1 || { echo "consumer: quickstart: SKIP: no bash"; return 0; }
  if [ -n "$(makevar SANITIZE_FLAGS)" ]; then
    echo "consumer: quickstart: SKIP: a sanitizer build's libnaa needs -fsanitize on the user's command line, which the quick start does not have"
    return 0
  fi
  [ -n "$(find "$root" -path '*/doc/libnaa/quickstart.md')" ] ||
    fail "make install installed no doc/libnaa/quickstart.md"
  for pc in "$root$prefix"/lib/pkgconfig/*.pc; do
    sed "s|^\\([a-z_]*\\)=$prefix|\\1=$root$prefix|" "$pc" >"$pc.tmp" && mv "$pc.tmp" "$pc"
  done
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # The blocks: ```sh ones into run.sh (but the one after the install marker), ```c NAME into
  # NAME, ```text ones into expected.N (but the one after the diagram marker).
  python3 - "$page" "$dir" "$port" <<'PY' || fail "doc/quickstart.md cannot be read into a script"
import os, re, sys
page, out, port = sys.argv[1:]
script, texts, skip, diagram, block, kind = [], [], False, False, None, None
for line in open(page):
    if block is None:
        if line.startswith("<!-- quickstart-test: install -->"):
            skip = True
        if line.startswith("<!-- quickstart-test: diagram -->"):
            diagram = True
        m = re.match(r"```(\w+)\s*(\S*)", line)
        if m:
            block, kind, name = [], m.group(1), m.group(2)
        continue
    if not line.startswith("```"):
        block.append(line.replace("12345", port))
        continue
    text = "".join(block)
    if kind == "sh" and not skip:
        script.append(text)
    elif kind == "sh":
        skip = False
    elif kind == "c":
        open(os.path.join(out, name), "w").write(text)
    elif kind == "text" and diagram:
        diagram = False
    elif kind == "text":
        texts.append(text)
    block = None
# Whatever fails, the NAA the blocks start does not outlive them.
open(os.path.join(out, "run.sh"), "w").write("set -e\ntrap 'kill %1 2>/dev/null || :' EXIT\n" +
                                             "".join(script))
for i, t in enumerate(texts):
    open(os.path.join(out, "expected.%d" % i), "w").write(t)
PY
  [ -f "$dir/first.c" ] && [ -f "$dir/expected.0" ] && [ -f "$dir/expected.1" ] ||
    fail "doc/quickstart.md has no first.c or no expected output"
  echo "consumer: quickstart: the shell blocks of doc/quickstart.md, PREFIX=$root$prefix, port $port"
  sed 's/^/  | /' "$dir/run.sh"
  # A user's shell: the system's PATH, none of the build's variables.
  rc=0
  (cd "$dir" && env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin PREFIX="$root$prefix" $staged_modules \
    bash run.sh >out 2>err) || rc=$?
  sed 's/^/  > /' "$dir/out" "$dir/err"
  [ $rc -eq 0 ] || fail "the quick start's commands failed (status $rc)"
  grep -qxF "$(cat "$dir/expected.0")" "$dir/out" || fail "./first did not print $(cat "$dir/expected.0")"
  # Every kernel of the table is one naa-server lists.
  for kernel in $(sed -n 's/^| \([0-9][0-9]*\) | \([a-z0-9_]*\) |.*/\1:\2/p' "$page"); do
    grep -Eq "^ *${kernel%%:*}[^0-9].*${kernel#*:}" "$dir/out" ||
      fail "the quick start's kernel ${kernel#*:} (${kernel%%:*}) is not in naa-server --list-kernels"
  done
  # With the NAA stopped (kill %1), the failure reads as the page says; first its port is
  # closed (SIGTERM stops naa-server cleanly, not at once).
  python3 - "$port" <<'PY' || fail "naa-server still listens on $port 60 s after kill %1"
import socket, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
    except ConnectionRefusedError:
        sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
  rc=0
  (cd "$dir" && env -i PATH=/usr/bin:/bin $staged_modules NAA_SPEC="127.0.0.1:$port:10:2" ./first >fail.out 2>fail.err) || rc=$?
  cat "$dir/fail.err"
  [ $rc -eq 1 ] || fail "./first without an NAA exited with $rc, not 1"
  cmp -s "$dir/fail.err" "$dir/expected.1" || fail "./first without an NAA did not say what the page shows"
  echo "consumer: quickstart: PASS"
}
quickstart
