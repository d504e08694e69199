// SPDX-License-Identifier: BSD-3-Clause
// naa-info --kernels: the kernels an NAA serves, as it lists them (doc/protocol.md §3.6).
#pragma once

#include <string>

namespace naa_info {

// Exit status of --kernels for an NAA that was reached but does not list its kernels (a
// reference NAA, an earlier naa-server), where none was unreachable (1).
inline constexpr int kNotListed = 3;

// Prints the kernels of the NAA at `naa` ("HOST[:PORT]"), or, where it is empty, of each NAA
// of NAA_SPEC (only those serving function code `only`, unless it is -1). Returns the exit
// status: 0 all listed, 1 an NAA unreachable or none to ask, kNotListed as above, 2 a
// malformed `naa`.
int show_kernels(const std::string &naa, long only);

}  // namespace naa_info
