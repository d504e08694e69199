// SPDX-License-Identifier: BSD-3-Clause
// The wire's integers (doc/protocol.md §1: big-endian), `bytes` of them at p.
#pragma once

#include <cstddef>
#include <cstdint>

namespace naa::wire {

inline void put_be(uint8_t *p, uint64_t value, size_t bytes) {
  for (size_t i = bytes; i-- > 0; value >>= 8) p[i] = static_cast<uint8_t>(value);
}

inline uint64_t get_be(const uint8_t *p, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

}  // namespace naa::wire
