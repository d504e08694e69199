#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# examples/vecadd_cpp, the C++ (naa.hpp) twin of vecadd, against a naa-server (see examples.sh).
set -eu
exec sh "$NAA_SRCDIR/test/integration/examples.sh" vecadd_cpp
