// SPDX-License-Identifier: BSD-3-Clause
// From the caller's naa_param_t arrays to MRSP regions, in the reference host's order:
// inputs in parameter order, then the outputs that are not also inputs. A buffer passed as an
// input and an output is one in-place region (INPUT|OUTPUT), as the reference NAAs expect.
#pragma once

#include <cstdint>
#include <vector>

#include "naa.h"

namespace naa::protocol {

struct Region {
  void *addr;
  uint32_t size;
  uint8_t flags;  // mrsp::Flag bits
};

// Throws Error(NAA_ERR_INVALID_ARGUMENT) naming the offending parameter.
std::vector<Region> layout_regions(const naa_param_t *inputs, size_t n_inputs,
                                   const naa_param_t *outputs, size_t n_outputs);

}  // namespace naa::protocol
