// SPDX-License-Identifier: BSD-3-Clause
#include "config/count.hpp"

#include <cstring>

#include "config/number.h"

namespace naa::config {

bool parse_count(const char *text, uint64_t max, uint64_t *out, bool suffix) {
  size_t len = std::strlen(text);
  unsigned shift = 0;
  if (suffix && len > 0) {
    switch (text[len - 1]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) --len;
  }
  uint64_t v = 0;
  if (naa_parse_number(text, len, 0, max >> shift, &v) != 0) return false;
  *out = v << shift;
  return true;
}

}  // namespace naa::config
