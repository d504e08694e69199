#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Refreshes the Spack recipe's checksum of the version AC_INIT names: make dist in the build
# directory (${NAA_BUILD_DIR:-_build}), then version("X.Y.Z", sha256=...) and url in
# contrib/spack/.../package.py, a version line being added if the recipe has none for X.Y.Z.
# make dist is reproducible and leaves the recipe's checksums out of the tarball (Makefile.am),
# so after committing the result, make dist of the same tree gives the same sha256 again.
#   bash scripts/spack-checksum.sh        (contrib/spack/README.md, "Releases and checksums")
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NAA_BUILD_DIR:-$top/_build}
recipe=$top/contrib/spack/spack_repo/libnaa/packages/libnaa/package.py
version=$(sed -n 's/^AC_INIT(\[libnaa\], \[\([0-9.]*\)\].*/\1/p' "$top/configure.ac")
[[ -n $version ]] || { echo "spack-checksum: no version in configure.ac's AC_INIT" >&2; exit 1; }
make -C "$build" dist >/dev/null
tarball=$build/libnaa-$version.tar.gz
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
line="    version(\"$version\", sha256=\"$sum\")"
if grep -q "^    version(\"$version\", sha256=" "$recipe"; then
  sed -i "s|^    version(\"$version\", sha256=\"[0-9a-f]*\")|$line|" "$recipe"
else
  sed -i "/^    version(\"main\", branch=\"main\")/a\\
$line" "$recipe"
fi
sed -i "s|^    url = \".*\"|    url = \"https://github.com/libnaa/libnaa/releases/download/v$version/libnaa-$version.tar.gz\"|" "$recipe"
echo "spack-checksum: $tarball: sha256 $sum"
echo "spack-checksum: $(grep -n "version(\"$version\"" "$recipe")"
