// SPDX-License-Identifier: BSD-3-Clause
// The waitany test: what waiting on many handles at once costs over waiting on one.
#pragma once

#include <cstdio>

#include "report.hpp"
#include "settings.hpp"

namespace naa::bench {

// Needs a server with a kernel that naps for the milliseconds in the first 4 bytes of its
// input (the test plugin's nap_fill, function code 105) for the handles that stay in flight.
void run_waitany(const Settings &s, FILE *out);

}  // namespace naa::bench
