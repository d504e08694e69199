#!/bin/sh
# The installed library as its users see it. Installs the build into a temporary staging
# directory (make install DESTDIR=...), lints and renders the installed man pages, then builds
# examples/vecadd.c, examples/vecadd.cpp (naa.hpp, as -std=c++17) and, if the Fortran binding
# is built, examples/vecadd.f90 with nothing but the compiler and pkg-config (naa.pc,
# naa-fortran.pc, found through PKG_CONFIG_LIBDIR + PKG_CONFIG_SYSROOT_DIR), and runs them
# against the installed naa-server.
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

# Every page in man/ is installed (man-lint.sh checks that they all are in dist_man_MANS), and
# the installed files lint and render cleanly as man(1) would show them.
pages=$(find "$root" -path '*/man/man[1-9]/*' -type f | sort)
n_installed=$(printf '%s\n' $pages | grep -c . || true)
n_source=$(ls "$top_srcdir"/man/*.[1-9] | wc -l)
[ "$n_installed" -eq "$n_source" ] || fail "make install installed $n_installed man pages, man/ has $n_source"
if command -v mandoc >/dev/null 2>&1; then
  # shellcheck disable=SC2086 # one argument per page
  sh "$top_srcdir/test/man-lint.sh" $pages || fail "the installed man pages do not lint or render cleanly"
else
  echo "consumer: mandoc is not installed: the $n_installed installed man pages are not rendered"
fi

# build_and_run NAME COMPILER PKG SOURCE: compile SOURCE as a user would, check that the
# program uses the staged libnaa, and run it against the installed naa-server. COMPILER may
# carry flags ("g++ -std=c++17").
build_and_run() {
  echo "consumer: $2 \$(pkg-config --cflags $3) -o $1 $4 \$(pkg-config --libs $3)"
  echo "          = $2 $(pkg-config --cflags $3) -o $1 $4 $(pkg-config --libs $3)"
  # shellcheck disable=SC2046,SC2086 # word splitting of the compiler and flags is intended
  $2 $(pkg-config --cflags "$3") -o "$stage/$1" "$4" $(pkg-config --libs "$3") ||
    fail "$1 does not build with the flags of $3.pc"
  if command -v ldd >/dev/null 2>&1; then
    LD_LIBRARY_PATH=$libdir ldd "$stage/$1" | grep -q "libnaa\.so.* => $libdir/" ||
      fail "$1 does not load libnaa.so from $libdir: $(LD_LIBRARY_PATH=$libdir ldd "$stage/$1" | grep libnaa)"
  fi
  rc=0
  NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" NAA_TIMEOUT=60 LD_LIBRARY_PATH=$libdir \
    "$stage/$1" 1000000 >"$stage/$1.out" || rc=$?
  cat "$stage/$1.out"
  [ $rc -eq 0 ] || fail "$1 exited with status $rc"
  grep -q "all 2000000 elements correct" "$stage/$1.out" || fail "$1 did not report all elements correct"
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

if [ "$have_fortran" = yes ]; then
  pkg-config --exists naa-fortran || fail "the Fortran binding is built but naa-fortran.pc is not installed"
  got=$(pkg-config --modversion naa-fortran)
  [ "$got" = "$version" ] || fail "naa-fortran.pc says version $got, the build is $version"
  check_flags naa-fortran
  build_and_run vecadd_f "$fc" naa-fortran "$top_srcdir/examples/vecadd.f90"
else
  echo "consumer: the Fortran binding is not built; tested the C and C++ consumers only"
fi
echo "consumer: PASS"
