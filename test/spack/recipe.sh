#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Spack recipe against configure (test/spack/check_recipe.py has the list). Skipped
# (exit 77) without python3.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/../..}
if ! command -v python3 >/dev/null 2>&1; then
  echo "spack-recipe: SKIP: python3 is not installed, so the recipe cannot be loaded"
  exit 77
fi
exec python3 "$srcdir/test/spack/check_recipe.py" "$srcdir"
