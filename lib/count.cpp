// SPDX-License-Identifier: BSD-3-Clause
#include "count.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace naa {

bool parse_count(const char *text, uint64_t max, uint64_t *out, bool suffix) {
  if (!std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  if (suffix) {
    switch (*end) {
      case 'k': case 'K': shift = 10; ++end; break;
      case 'm': case 'M': shift = 20; ++end; break;
      case 'g': case 'G': shift = 30; ++end; break;
      default: break;
    }
  }
  if (*end != '\0' || v > (UINT64_MAX >> shift)) return false;
  uint64_t value = static_cast<uint64_t>(v) << shift;
  if (value > max) return false;
  *out = value;
  return true;
}

}  // namespace naa
