/* SPDX-License-Identifier: BSD-3-Clause */
#include "config/number.h"

int naa_parse_number(const char *text, size_t len, uint64_t min, uint64_t max, uint64_t *value) {
  uint64_t v = 0;
  if (len == 0) return -1;
  for (size_t i = 0; i < len; i++) {
    if (text[i] < '0' || text[i] > '9') return -1;
    const uint64_t digit = (uint64_t)(text[i] - '0');
    if (digit > max || v > (max - digit) / 10) return -1; /* v * 10 + digit > max */
    v = v * 10 + digit;
  }
  if (v < min) return -1;
  *value = v;
  return 0;
}
