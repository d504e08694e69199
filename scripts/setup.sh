#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing (Debian 12 packages), then configures and builds libnaa out of tree
# in ${NAA_BUILD_DIR:-_build}. Sourced by demo.sh and test.sh; safe to run again.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}

packages=(g++ gcc gfortran make autoconf automake libtool pkg-config libfabric-dev libfabric-bin
          libcmocka-dev libibverbs-dev librdmacm-dev mandoc
          clang-format  # the tree follows .clang-format (test/format.sh)
          cmake  # the CMake packages' consumer test (test/install/consumer.sh)
          clang libclang-rt-14-dev  # clang + its runtime: libFuzzer for make check-fuzz
          # the Python package naa, its tests and the mpi4py example (configure PYTHON= below)
          python3-dev python3-numpy python3-pytest python3-mpi4py
          # pip install of python/ in a venv, offline (test/install/pip.sh)
          python3-venv python3-setuptools python3-wheel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  echo "setup: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cd "$top"
[[ -x configure && configure -nt configure.ac && Makefile.in -nt Makefile.am ]] || autoreconf -fi
mkdir -p "$build"
cd "$build"
# Debian's python3 (with the python3-* packages above), not the first python on PATH, which
# may be another installation without NumPy, pytest or mpi4py (pyenv's, for one).
python=${PYTHON:-/usr/bin/python3}
[[ -f Makefile && config.status -nt "$top/configure" ]] ||
  "$top/configure" --enable-werror PYTHON="$python" ${NAA_CONFIGURE_FLAGS:-}
make -j"$(nproc)"
