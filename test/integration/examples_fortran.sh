#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/vecadd_f, the Fortran twin of vecadd, against a naa-server (see examples.sh).
# Skipped when configure did not build the Fortran binding.
set -eu
if [ "${NAA_HAVE_FORTRAN:-no}" != yes ]; then
  echo "SKIP: the Fortran binding is not built (no gfortran found, or --disable-fortran)"
  exit 77
fi
exec sh "$NAA_SRCDIR/test/integration/examples.sh" vecadd_f
