# SPDX-License-Identifier: BSD-3-Clause
# Sourced by test/install/consumer.sh after quickstart.sh (whose .pc files name the staged
# tree): the Python package naa installed by pip against the staged libnaa, offline, as CI and
# a machine without a package index must, with Debian's python3 and its python3-setuptools:
#   python3 -m venv --system-site-packages v
#   v/bin/pip install --no-index --no-build-isolation ./python
# pkg-config finds libnaa (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig); the extension gets a run-time
# path to it, so `import naa` needs no LD_LIBRARY_PATH. Then it offloads a NumPy vecadd to the
# installed naa-server and uses cancel(), last_error(), stats(), info() and rc_string().
# Uses consumer.sh's $root, $prefix, $stage, $top_srcdir, $server, $staged_modules and fail().

pip_install() {
  python=/usr/bin/python3
  if [ -n "${ASAN_OPTIONS:-}" ] || [ -n "$(makevar SANITIZE_FLAGS)" ]; then
    echo "consumer: pip: SKIP: a sanitizer build's libnaa needs its runtime loaded first"
    return 0
  fi
  [ -f "$root$prefix/lib/pkgconfig/naa.pc" ] ||
    { echo "consumer: pip: SKIP: naa.pc is not in PREFIX/lib/pkgconfig"; return 0; }
  for m in venv setuptools wheel numpy ensurepip; do
    "$python" -c "import $m" 2>/dev/null ||
      { echo "consumer: pip: SKIP: $python cannot import $m (scripts/setup.sh installs python3-venv, python3-setuptools, python3-wheel, python3-numpy)"; return 0; }
  done
  # A copy: pip builds in the directory it is given.
  rm -rf "$stage/pip-src" && cp -r "$top_srcdir/python" "$stage/pip-src"
  chmod -R u+w "$stage/pip-src"
  echo "consumer: pip: $python -m venv --system-site-packages v && v/bin/pip install --no-index --no-build-isolation python"
  "$python" -m venv --system-site-packages "$stage/v" >"$stage/pip.log" 2>&1 ||
    { cat "$stage/pip.log"; fail "python3 -m venv failed"; }
  env -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH="$root$prefix/lib/pkgconfig" \
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$stage/v/bin/pip" install --no-index --no-build-isolation \
    "$stage/pip-src" >>"$stage/pip.log" 2>&1 || { cat "$stage/pip.log"; fail "pip install of python/ failed"; }
  tail -n 1 "$stage/pip.log"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$server" --address 127.0.0.1 --port "$port" --ready-file "$stage/pip-ready" &
  pip_server=$!
  naa_test_pids="$naa_test_pids $pip_server"
  until [ -s "$stage/pip-ready" ]; do sleep 0.1; done
  # Not the sources, not the build: only what pip installed into the venv.
  (cd "$stage" && env -i PATH=/usr/bin:/bin $staged_modules NAA_STATS=1 NAA_SPEC="127.0.0.1:$port:10:2,127.0.0.1:$port:3:1" \
    "$stage/v/bin/python" - "$stage/v" "$version" <<'PY') || fail "the pip-installed package naa does not work"
import sys
import numpy as np
import naa
assert naa.__file__.startswith(sys.argv[1]), naa.__file__
assert naa.version() == sys.argv[2], naa.version()
a, b, c = np.arange(1e5), np.ones(100_000), np.empty(100_000)
with naa.Handle(10, inputs=[a, b], outputs=[c]) as h:
    h.invoke()
    h.wait()
    assert h.info()["function_code"] == 10, h.info()
    h.invoke()
    h.cancel()               # nothing can be written into c any more
    h.invoke()               # connects again
    h.wait()
np.testing.assert_array_equal(c, a + b)
try:
    naa.Handle(99, [bytearray(1)], [bytearray(1)])
except naa.Error as e:
    code, cause = naa.last_error()
    assert code == e.code == naa.ERR_NO_NAA and cause.split(": ", 1)[1] in e.cause, (code, cause, e.cause)
else:
    raise AssertionError("no NAA serves 99, yet naa.Handle succeeded")
s = naa.stats()
assert s["functions"][0]["invocations"] == 3, s
assert naa.rc_string(0x7F).startswith("unknown function code"), naa.rc_string(0x7F)
print("consumer: pip: import naa:", naa.__file__, naa.version(), "vecadd offloaded, cancel, last_error, stats")
PY
  kill "$pip_server"
  wait "$pip_server" 2>/dev/null || :
}
pip_install
