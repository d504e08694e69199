// SPDX-License-Identifier: BSD-3-Clause
// Counts and sizes given on the command line of the tools (naa-server, naa-bench) and in
// numeric NAA_* variables.
#pragma once

#include <cstdint>

namespace naa::config {

// Decimal digits only (no sign, blanks or hex), then with `suffix` an optional K, M or G
// (powers of 1024); true with the value in `out` when it is at most `max`, false otherwise,
// overflow included.
bool parse_count(const char *text, uint64_t max, uint64_t *out, bool suffix = false);

}  // namespace naa::config
