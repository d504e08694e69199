// SPDX-License-Identifier: BSD-3-Clause
// The tools' count parser (lib/config/count.cpp): what naa-server and naa-bench accept as numbers.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <setjmp.h>

extern "C" {
#include <cmocka.h>
}

#include "config/count.hpp"

using naa::config::parse_count;

static void plain_counts(void **) {
  uint64_t v = 0;
  assert_true(parse_count("0", 10, &v));
  assert_int_equal(v, 0);
  assert_true(parse_count("65535", 65535, &v));
  assert_int_equal(v, 65535);
  assert_false(parse_count("65536", 65535, &v));
  for (const char *bad :
       {"", "-1", "+1", " 1", "1 ", "0x10", "1k", "abc", "99999999999999999999999"})
    assert_false(parse_count(bad, UINT64_MAX, &v));
}

static void suffixes(void **) {
  uint64_t v = 0;
  assert_true(parse_count("4k", UINT64_MAX, &v, true));
  assert_int_equal(v, 4096);
  assert_true(parse_count("64M", UINT64_MAX, &v, true));
  assert_int_equal(v, uint64_t{64} << 20);
  assert_true(parse_count("1G", UINT64_MAX, &v, true));
  assert_int_equal(v, uint64_t{1} << 30);
  assert_false(parse_count("4KB", UINT64_MAX, &v, true));
  assert_false(parse_count("4T", UINT64_MAX, &v, true));
  assert_false(parse_count("17179869184G", UINT64_MAX, &v, true));  // 2^34 G overflows 64 bits
  assert_false(parse_count("5G", UINT32_MAX, &v, true));            // beyond max after scaling
}

int main() {
  const CMUnitTest tests[] = {cmocka_unit_test(plain_counts), cmocka_unit_test(suffixes)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
