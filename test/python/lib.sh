# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the Python tests after test/integration/lib.sh: python_site makes the package naa of
# the build tree importable ($naa_test_dir/site/naa: the sources' __init__.py beside the built
# extension) and sets PYTHONPATH and LD_LIBRARY_PATH for it; a test that cannot run exits 77
# (or prints a TAP skip plan with tap=1) saying why. Under an ASan build it preloads the
# sanitizer's runtime and sets python_malloc (the PYTHONMALLOC for the tests) to malloc_debug.
python=${NAA_PYTHON:-}

python_skip() {
  if [ "${tap:-0}" = 1 ]; then echo "1..0 # SKIP $1"; exit 0; fi
  echo "SKIP: $1"
  exit 77
}

# python_site MODULE...: skips unless the package was built and $python imports each MODULE.
python_site() {
  [ "${NAA_HAVE_PYTHON:-no}" = yes ] && [ -n "$python" ] ||
    python_skip "configure did not build the Python package naa (see its summary; PYTHON=/usr/bin/python3 on Debian)"
  for m in "$@"; do
    "$python" -c "import $m" 2>/dev/null ||
      python_skip "$python cannot import $m (Debian: python3-$m; configure PYTHON=/usr/bin/python3, which has Debian's packages)"
  done
  mkdir -p "$naa_test_dir/site/naa"
  ln -s "$NAA_SRCDIR/python/naa/__init__.py" "$NAA_SRCDIR/python/naa/__init__.pyi" \
    "$NAA_BUILDDIR/python/naa/.libs/_naa.so" "$naa_test_dir/site/naa/"
  PYTHONPATH=$naa_test_dir/site${PYTHONPATH:+:$PYTHONPATH}
  LD_LIBRARY_PATH=$NAA_BUILDDIR/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  PYTHONDONTWRITEBYTECODE=1  # the sources may be read-only (make distcheck)
  export PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE
  # An extension built with AddressSanitizer (scripts/sanitize.sh) needs the runtime it links
  # loaded before the interpreter's own libraries: preloaded, and the C++ library with it
  # (else ASan finds no __cxa_throw to intercept and aborts at libnaa's first exception), and
  # UBSan's runtime where it links that too (the transport modules libnaa loads later resolve
  # its handlers only from the global scope: the extension's own libraries are not in it),
  # with leak checks off (the interpreter keeps objects until it exits), and Python's objects
  # taken from malloc (python_malloc) so that ASan sees a use of a freed one.
  python_malloc=debug
  asan_runtime=$(ldd "$NAA_BUILDDIR/python/naa/.libs/_naa.so" 2>/dev/null |
    awk '$1 ~ /^libasan/ { asan = $3 } $1 ~ /^libubsan/ { ubsan = ":" $3 } $1 ~ /^libstdc\+\+/ { cxx = $3 }
         END { if (asan != "") print asan ubsan ":" cxx }')
  if [ -n "$asan_runtime" ]; then
    LD_PRELOAD=$asan_runtime${LD_PRELOAD:+:$LD_PRELOAD}
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
    python_malloc=malloc_debug
    export LD_PRELOAD ASAN_OPTIONS
  fi
}
