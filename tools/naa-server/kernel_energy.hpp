// SPDX-License-Identifier: BSD-3-Clause
// naa-server's energy per kernel (NAA_ENERGY, naa(7) ENERGY): the node's counters read before
// and after each kernel run, summed per function code and printed when the server stops. The
// counters are the node's: kernels running at once on several connections each count their
// common time, and so do the server's other threads and every other process on the node.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace naa::server::kernel_energy {

struct Window {
  bool read;  // the meter was read at the start (NAA_ENERGY on, a source, the read succeeded)
  uint64_t t0_ns, uj0;
};

// Before a kernel run; costs one relaxed load when NAA_ENERGY is off.
Window begin();
// After it: the run of the kernel `code` (name) that began with w. Its microjoules into *uj,
// or false where they are unknown (energy off, no source, a failed read).
bool end(const Window &w, uint8_t code, const char *name, uint64_t *uj);
// Whether kernel runs are measured (NAA_ENERGY on and a source found), and what is counted.
bool measuring(std::string *source);
// What is counted (or why nothing is), as one line, when NAA_ENERGY is on.
void print_source(FILE *out);
// One line per function code that ran while measured.
void print(FILE *out);

}  // namespace naa::server::kernel_energy
