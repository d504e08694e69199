#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The build configurations beside the full one (scripts/test.sh builds and tests that, with
# every transport): each is configured and built in its own directory and runs a fast subset,
# its unit tests and the vecadd example over each transport it has. Prints "stage NAME: S s"
# per step (scripts/stage.sh). Usage: config-matrix.sh [CONFIG...], CONFIG one of
#   verbs   --without-libfabric --with-verbs   (_build-verbs): unit tests, modules.sh. Its vecadd
#           needs an RDMA device, which a plain machine lacks: NAA_MATRIX_RDMA=1 runs a subset of
#           the verbs suite (scripts/test-rdma.sh, Soft-RoCE in test/harness/rdma-vm) against
#           this build too: vecadd and the other examples, naa-info, test_offload, auto and a
#           default naa-server, all over the verbs module alone (NAA_MATRIX_VERBS_TESTS, an
#           extended regular expression over the suite's test names, changes the subset). The
#           full build runs the whole suite.
#   ofi     --with-libfabric --without-verbs   (_build-ofi): unit tests, modules.sh, vecadd over
#           ofi+tcp and ofi+shm.
#   builtin --enable-builtin-transports        (_build-builtin): both transports linked into
#           libnaa instead of loaded as modules: unit tests, modules.sh (which says SKIP there),
#           vecadd over ofi+tcp and ofi+shm.
# Default: all of them. Exits non-zero if any step of any configuration failed.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$top/scripts/stage.sh"
jobs=$(nproc)
# The optional parts add nothing to what differs between these configurations.
verbs_subset='^verbs-(examples|naa_info|test_offload|auto|default_server)$'
common=(--enable-werror --disable-fortran --disable-python --without-slurm --without-pmix --without-mpi)

NAA_BUILD_DIR=$top/_build bash "$top/scripts/setup.sh" > /dev/null  # packages + autoreconf

configure_and_build() {  # configure_and_build DIR CONFIGURE-ARGS...
  local dir=$1
  shift
  mkdir -p "$dir"
  (cd "$dir" &&
    { [[ -f Makefile && config.status -nt "$top/configure" ]] ||
      "$top/configure" "${common[@]}" "$@" > configure.out; } &&
    make -j"$jobs" > make.out)
}

# check DIR [VAR=VALUE...]: make check of the unit tests, or with TESTS=... of those, building
# only the test programs they run ($programs, default the unit tests): the integration tests'
# programs, which none of these steps runs, took most of a step's time.
check() {
  local dir=$1
  shift
  (cd "$dir" && env "$@" make -j"$jobs" check TESTS="${tests:-\$(unit_tests)}" \
    check_PROGRAMS="${programs:-\$(unit_tests)}" VERBOSE=yes)
}

# vecadd DIR TRANSPORT: the README's example against a naa-server, both over TRANSPORT.
vecadd() {
  tests=test/integration/examples.sh programs=test/integration/free_port check "$1" NAA_TRANSPORT="$2" &&
    sed -n 's/^naa-server: listening on /config-matrix: naa-server listened on /p' \
      "$1/test/integration/examples.log"
}

# modules.sh's clients.
modules_programs='test/integration/strerror_only test/integration/create_cause'
status=0
configs=("$@")
((${#configs[@]})) || configs=(verbs ofi builtin)
for config in "${configs[@]}"; do
  dir=$top/_build-$config
  case $config in
    verbs)
      stage "matrix-$config-build" configure_and_build "$dir" --without-libfabric --with-verbs || {
        status=1
        continue
      }
      stage "matrix-$config-unit" check "$dir" || status=1
      tests=test/integration/modules.sh programs="$modules_programs" stage "matrix-$config-modules" check "$dir" || status=1
      if [[ ${NAA_MATRIX_RDMA:-0} == 1 ]]; then
        NAA_BUILD_DIR=$dir NAA_VERBS_TESTS=${NAA_MATRIX_VERBS_TESTS:-$verbs_subset} \
          stage "matrix-$config-rdma" bash "$top/scripts/test-rdma.sh" || status=1
      else
        echo "config-matrix: verbs-only: no vecadd without an RDMA device (NAA_MATRIX_RDMA=1 runs the verbs suite in rdma-vm)"
      fi
      ;;
    ofi)
      stage "matrix-$config-build" configure_and_build "$dir" --with-libfabric --without-verbs || {
        status=1
        continue
      }
      stage "matrix-$config-unit" check "$dir" || status=1
      tests=test/integration/modules.sh programs="$modules_programs" stage "matrix-$config-modules" check "$dir" || status=1
      stage "matrix-$config-vecadd-tcp" vecadd "$dir" ofi+tcp || status=1
      stage "matrix-$config-vecadd-shm" vecadd "$dir" ofi+shm || status=1
      ;;
    builtin)
      stage "matrix-$config-build" configure_and_build "$dir" --enable-builtin-transports || {
        status=1
        continue
      }
      stage "matrix-$config-unit" check "$dir" || status=1
      tests=test/integration/modules.sh programs="$modules_programs" stage "matrix-$config-modules" check "$dir" || status=1
      stage "matrix-$config-vecadd-tcp" vecadd "$dir" ofi+tcp || status=1
      stage "matrix-$config-vecadd-shm" vecadd "$dir" ofi+shm || status=1
      ;;
    *)
      echo "config-matrix: unknown configuration '$config' (verbs, ofi, builtin)" >&2
      exit 2
      ;;
  esac
done
exit $status
