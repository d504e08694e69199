#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The installed library as its users see it. Installs the build into a temporary staging
# directory (make install DESTDIR=...), lints and renders the installed man pages, then builds
# examples/vecadd.c, examples/vecadd.cpp (naa.hpp, as -std=c++17), the reference-style
# test/ap2/ap2_style.c (naaice_ap2.h) and, if the Fortran binding is built,
# examples/vecadd.f90 with nothing but the compiler and pkg-config (naa.pc, naa-fortran.pc,
# found through PKG_CONFIG_LIBDIR + PKG_CONFIG_SYSROOT_DIR); then vecadd.c with CMake's
# find_package(naa) and ap2_style.c with find_package(naaice); and runs them all against the
# installed naa-server.
#
# make check runs it (after the other tests), make installcheck too; by hand:
#   sh test/install/consumer.sh [BUILDDIR]      (default: $NAA_BUILDDIR, else .)
set -eu
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
builddir=$(cd "${1:-${NAA_BUILDDIR:-.}}" && pwd)

fail() { echo "consumer: FAIL: $*" >&2; exit 1; }
makevar() { sed -n "s/^$1 = //p" "$builddir/Makefile"; }

[ -f "$builddir/Makefile" ] && [ -f "$builddir/config.status" ] ||
  { echo "consumer: $builddir is not a configured libnaa build directory" >&2; exit 99; }
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config is not installed"; exit 77; }
cc=$(makevar CC)
cxx=$(makevar CXX)
fc=$(makevar FC)
have_fortran=$(makevar have_fortran)
# A sanitizer build (--enable-sanitizers) installs a libnaa that needs its runtime: consumers
# of that build must be compiled with the same -fsanitize flags, as a user of it would.
sanitize=$(makevar SANITIZE_FLAGS)
if [ -n "$sanitize" ]; then cc="$cc $sanitize" cxx="$cxx $sanitize" fc="$fc $sanitize"; fi
version=$(makevar PACKAGE_VERSION)
prefix=$(makevar prefix)

# lib.sh gives the staging directory ($naa_test_dir, removed on exit with the server it
# starts) and wants NAA_SERVER now; the staged naa-server is known only after make install.
NAA_SERVER=${NAA_SERVER:-naa-server}
. "$top_srcdir/test/integration/lib.sh"
stage=$naa_test_dir
root=$stage/root

# A fresh make, not a sub-make of whatever runs this test: under make -j the jobserver of a
# parent make is not ours to use.
echo "consumer: make install DESTDIR=$root"
(unset MAKEFLAGS MFLAGS MAKELEVEL; ${NAA_MAKE:-make} -C "$builddir" install DESTDIR="$root") \
  >"$stage/install.log" 2>&1 || { cat "$stage/install.log"; fail "make install failed"; }

pc=$(find "$root" -name naa.pc)
[ -n "$pc" ] || fail "make install installed no naa.pc"
PKG_CONFIG_LIBDIR=$(dirname "$pc")  # only the staged .pc files, never the system's
PKG_CONFIG_PATH=
PKG_CONFIG_SYSROOT_DIR=$root        # the .pc files name the real prefix; the files are here
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
echo "consumer: $pc"

# Every -I and -L a .pc file gives must lead into the staged installation.
check_flags() {
  for flag in $(pkg-config --cflags-only-I --libs-only-L "$1"); do
    case $flag in
      -I"$root"/* | -L"$root"/*) ;;
      *) fail "pkg-config --cflags/--libs $1 gives $flag, which is not in the installation" ;;
    esac
  done
}

got=$(pkg-config --modversion naa) || fail "pkg-config cannot read naa.pc"
[ "$got" = "$version" ] || fail "naa.pc says version $got, the build is $version"
check_flags naa
libdir=$(pkg-config --libs-only-L naa | sed 's/^ *-L//; s/ .*//')
[ -f "$libdir/libnaa.so" ] || fail "no libnaa.so in $libdir (from pkg-config --libs naa)"
server=$(find "$root" -path '*/bin/naa-server' -type f)
[ -n "$server" ] || fail "make install installed no bin/naa-server"

# The transport modules go to PKGLIBDIR; a staged installation is a relocated one, whose
# programs find them through NAA_MODULE_DIR (naa(7)). Built in (--enable-builtin-transports),
# there are none.
staged_modules=
if [ "$(makevar builtin_transports)" != yes ]; then
  modules=$libdir/$(makevar PACKAGE)  # PKGLIBDIR: LIBDIR/PACKAGE
  ls "$modules"/libnaa-*.so >/dev/null 2>&1 || fail "make install installed no transport module in $modules"
  needed=$(readelf -d "$libdir/libnaa.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E 'fabric|ibverbs|rdmacm' || true)
  [ -z "$needed" ] || fail "the installed libnaa.so needs" $needed
  NAA_MODULE_DIR=$modules
  export NAA_MODULE_DIR
  staged_modules=NAA_MODULE_DIR=$modules  # for the env -i of quickstart.sh and pip.sh
  echo "consumer: transport modules:" $(cd "$modules" && ls libnaa-*.so)
fi

# Every page in man/ is installed (man-lint.sh checks that they all are in dist_man_MANS), and
# the installed files lint and render cleanly as man(1) would show them.
pages=$(find "$root" -path '*/man/man[1-9]/*' -type f | sort)
n_installed=$(printf '%s\n' $pages | grep -c . || true)
n_source=$(find "$top_srcdir"/man -name '*.[1-9]' -type f | wc -l)  # links are installed as links
[ "$n_installed" -eq "$n_source" ] || fail "make install installed $n_installed man pages, man/ has $n_source"
if command -v mandoc >/dev/null 2>&1; then
  # shellcheck disable=SC2086 # one argument per page
  sh "$top_srcdir/test/man-lint.sh" $pages || fail "the installed man pages do not lint or render cleanly"
else
  echo "consumer: mandoc is not installed: the $n_installed installed man pages are not rendered"
fi

# uses_staged_libnaa PROGRAM: the program loads libnaa.so from the staged installation, or a
# byte-identical one from the real libdir when the compiler gave it an RPATH there: Spack's
# compiler wrapper adds the package's own prefix as DT_RPATH, which wins over LD_LIBRARY_PATH,
# and under `spack install --test=root` that prefix holds this very build, installed.
uses_staged_libnaa() {
  command -v ldd >/dev/null 2>&1 || return 0
  got=$(LD_LIBRARY_PATH=$libdir ldd "$1" | sed -n 's/.*libnaa\.so[^ ]* => \([^ ]*\) .*/\1/p')
  case $got in "$libdir"/*) return 0 ;; esac
  real=${libdir#"$root"}
  if [ "${got%/*}" = "$real" ] && command -v readelf >/dev/null 2>&1 &&
    readelf -d "$1" | grep -q "(RPATH).*$real" && cmp -s "$got" "$libdir/${got##*/}"; then
    echo "consumer: $1 has an RPATH to $real (as Spack's compiler wrapper adds), which wins over LD_LIBRARY_PATH: it loads the installed $got, identical to the staged one"
    return 0
  fi
  fail "$1 does not load libnaa.so from $libdir: ${got:-none}"
}

# run_vecadd PROGRAM: run a vecadd example against the installed naa-server.
run_vecadd() {
  rc=0
  NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 LD_LIBRARY_PATH=$libdir \
    "$1" 1000000 >"$1.out" || rc=$?
  cat "$1.out"
  [ $rc -eq 0 ] || fail "$1 exited with status $rc"
  grep -q "all 2000000 elements correct" "$1.out" || fail "$1 did not report all elements correct"
}

# build_and_run NAME COMPILER PKG SOURCE: compile SOURCE as a user would, check that the
# program uses the staged libnaa, and run it against the installed naa-server. COMPILER may
# carry flags ("g++ -std=c++17").
build_and_run() {
  echo "consumer: $2 \$(pkg-config --cflags $3) -o $1 $4 \$(pkg-config --libs $3)"
  echo "          = $2 $(pkg-config --cflags $3) -o $1 $4 $(pkg-config --libs $3)"
  # shellcheck disable=SC2046,SC2086 # word splitting of the compiler and flags is intended
  $2 $(pkg-config --cflags "$3") -o "$stage/$1" "$4" $(pkg-config --libs "$3") ||
    fail "$1 does not build with the flags of $3.pc"
  uses_staged_libnaa "$stage/$1"
  run_vecadd "$stage/$1"
}

# run_ap2 PROGRAM: the reference-style program against a naa-server of the installation.
run_ap2() {
  LD_LIBRARY_PATH=$libdir NAA_SERVER=$server sh "$top_srcdir/test/ap2/ap2.sh" "$1" 100 ||
    fail "$1 (the reference-style program) failed"
}

# cmake_build NAME PROJECT [-DVAR=VALUE...]: configure and build the CMake project in
# directory PROJECT against the staged installation only; the program is $stage/NAME/NAME.
cmake_build() {
  name=$1 project=$2
  shift 2
  # shellcheck disable=SC2086 # the compiler's first word is the compiler, the rest flags
  set -- $cc "$@"
  compiler=$1
  shift
  flags=
  while [ $# -gt 0 ] && [ "${1#-D}" = "$1" ]; do flags="$flags $1"; shift; done
  echo "consumer: cmake -S $project -DCMAKE_PREFIX_PATH=$root$prefix $*"
  cmake -S "$project" -B "$stage/$name" -DCMAKE_C_COMPILER="$compiler" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_PREFIX_PATH="$root$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF -DNAA_SOURCE_DIR="$top_srcdir" "$@" \
    >"$stage/$name.cmake.log" 2>&1 || return 1
  cmake --build "$stage/$name" >>"$stage/$name.cmake.log" 2>&1 ||
    { cat "$stage/$name.cmake.log"; fail "CMake project $project does not build"; }
  for dir in $(sed -n 's/^naa\(ice\)*_DIR:PATH=//p' "$stage/$name/CMakeCache.txt"); do
    case $dir in
      "$root"/*) ;;
      *) fail "CMake took a package from $dir, not from the installation" ;;
    esac
  done
}

# The headers the compilers pick must be the staged ones, not ones installed elsewhere.
# shellcheck disable=SC2046
$cc $(pkg-config --cflags naa) -M "$top_srcdir/examples/vecadd.c" | grep -q "$root/.*/naa\.h" ||
  fail "the compiler does not take naa.h from the installation"
# shellcheck disable=SC2046
$cxx -std=c++17 $(pkg-config --cflags naa) -M "$top_srcdir/examples/vecadd.cpp" |
  grep -q "$root/.*/naa\.hpp" || fail "the C++ compiler does not take naa.hpp from the installation"

NAA_SERVER=$server
start_server
build_and_run vecadd "$cc" naa "$top_srcdir/examples/vecadd.c"
# The C++ layer is header-only: naa.pc is all it needs, and C++17 is all it asks of the user.
build_and_run vecadd_cpp "$cxx -std=c++17" naa "$top_srcdir/examples/vecadd.cpp"

# Programs of the NAAICE reference middleware: naaice_ap2.h (also as <naaice/naaice_ap2.h>)
# with the flags of naa.pc, unchanged.
# shellcheck disable=SC2046
printf '#include <naaice/naaice_ap2.h>\n' | $cc $(pkg-config --cflags naa) -M -x c - |
  grep -q "$root/.*/naaice/naaice_ap2\.h" || fail "<naaice/naaice_ap2.h> is not the installed one"
# shellcheck disable=SC2046
printf '#include <naaice_ap2.h>\nint main() { naa_status s{}; return s.naa_error + s.state; }\n' |
  $cxx $(pkg-config --cflags naa) -fsyntax-only -x c++ - || fail "naaice_ap2.h does not compile as C++"
# shellcheck disable=SC2046
if printf '#include <naa.h>\n#include <naaice_ap2.h>\n' |
  $cc $(pkg-config --cflags naa) -fsyntax-only -x c - 2>"$stage/both.err"; then
  fail "naa.h and naaice_ap2.h compile in one translation unit; their names collide"
fi
grep -q "cannot be included in one translation unit" "$stage/both.err" ||
  { cat "$stage/both.err"; fail "naa.h with naaice_ap2.h does not fail with the header's #error"; }
echo "consumer: $cc \$(pkg-config --cflags naa) -o ap2_style test/ap2/ap2_style.c \$(pkg-config --libs naa)"
# shellcheck disable=SC2046,SC2086
$cc $(pkg-config --cflags naa) -o "$stage/ap2_style" "$top_srcdir/test/ap2/ap2_style.c" \
  $(pkg-config --libs naa) || fail "the reference-style program does not build with naa.pc"
uses_staged_libnaa "$stage/ap2_style"
run_ap2 "$stage/ap2_style"

# The CMake packages: find_package(naa) -> naa::naa, find_package(naaice) ->
# naaice::middleware, each with its version file.
if command -v cmake >/dev/null 2>&1; then
  [ -n "$(find "$root" -path '*/cmake/naa/naaConfigVersion.cmake')" ] &&
    [ -n "$(find "$root" -path '*/cmake/naaice/naaiceConfigVersion.cmake')" ] ||
    fail "make install installed no version file of the naa or naaice CMake package"
  cmake_build vecadd_cmake "$top_srcdir/test/install/cmake" ||
    { cat "$stage/vecadd_cmake.cmake.log"; fail "find_package(naa 0.1) fails"; }
  uses_staged_libnaa "$stage/vecadd_cmake/vecadd"
  run_vecadd "$stage/vecadd_cmake/vecadd"
  if cmake_build too_new "$top_srcdir/test/install/cmake" -DNAA_REQUEST=99; then
    fail "find_package(naa 99) accepts version $version"
  fi
  grep -q "naaConfig.cmake, version: $version" "$stage/too_new.cmake.log" ||
    { cat "$stage/too_new.cmake.log"; fail "find_package(naa 99) did not fail for the version"; }
  cmake_build ap2_cmake "$top_srcdir/test/ap2" ||
    { cat "$stage/ap2_cmake.cmake.log"; fail "find_package(naaice) fails"; }
  uses_staged_libnaa "$stage/ap2_cmake/ap2_style"
  run_ap2 "$stage/ap2_cmake/ap2_style"
else
  fail "cmake is not installed (scripts/setup.sh installs it): the CMake packages are untested"
fi

# The Python package: where the README says, `import naa` finds the staged one and offloads.
# Not under ASan: the interpreter does not load the sanitizer's runtime first.
if [ -n "${ASAN_OPTIONS:-}" ]; then
  echo "consumer: the installed Python package is not imported under ASan (the interpreter does not load its runtime first)"
elif [ "$(makevar have_python)" = yes ]; then
  python=$(makevar PYTHON)
  init=$(find "$root" -path '*/site-packages/naa/__init__.py' -o -path '*/dist-packages/naa/__init__.py')
  [ -n "$init" ] || fail "make install installed no Python package naa"
  site=$(dirname "$(dirname "$init")")
  echo "consumer: PYTHONPATH=$site $python -c 'import naa'"
  PYTHONPATH=$site LD_LIBRARY_PATH=$libdir NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:1:1" \
    "$python" -c '
import sys, naa
assert naa.__file__.startswith(sys.argv[1]), naa.__file__
assert naa.version() == sys.argv[2], naa.version()
buf = bytearray(b"\x00\x01\x02")
with naa.Handle(1, [buf], [buf]) as h:  # add1, in place
    h.invoke()
    h.wait()
assert buf == bytearray(b"\x01\x02\x03"), buf
print("consumer: import naa:", naa.__file__, naa.version(), "offloaded")
' "$site/naa/" "$version" || fail "the installed Python package naa does not import or offload"
  find "$site/naa" -name '_naa*.so' | grep -q . || fail "no extension module _naa in $site/naa"
  [ -f "$site/naa/__init__.pyi" ] && [ -f "$site/naa/py.typed" ] ||
    fail "the type hints of naa (__init__.pyi, py.typed) are not installed"
else
  echo "consumer: the Python package is not built; not tested"
fi

if [ "$have_fortran" = yes ]; then
  pkg-config --exists naa-fortran || fail "the Fortran binding is built but naa-fortran.pc is not installed"
  got=$(pkg-config --modversion naa-fortran)
  [ "$got" = "$version" ] || fail "naa-fortran.pc says version $got, the build is $version"
  check_flags naa-fortran
  build_and_run vecadd_f "$fc" naa-fortran "$top_srcdir/examples/vecadd.f90"
else
  echo "consumer: the Fortran binding is not built; tested the C and C++ consumers only"
fi
# doc/quickstart.md, word for word (last: it points the staged .pc files at the staged tree).
. "$top_srcdir/test/install/quickstart.sh"
# The Python package built by pip against that installation (python/pyproject.toml).
. "$top_srcdir/test/install/pip.sh"
echo "consumer: PASS"
