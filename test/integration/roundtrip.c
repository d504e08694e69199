/* SPDX-License-Identifier: BSD-3-Clause */
#include "roundtrip.h"

#include <stdarg.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

enum { FN_ADD1 = 1 };

int roundtrip_wait(naa_handle *h, naa_status *st, int round) {
  (void)round;
  return naa_wait(h, st);
}

void roundtrip_inplace(const test_server *server, size_t size, int rounds, unsigned seed,
                       roundtrip_complete complete) {
  uint8_t *buf = malloc(size);
  assert_non_null(buf);
  for (size_t i = 0; i < size; i++) buf[i] = (uint8_t)(i * seed);
  naa_param_t p = {buf, size, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  for (int r = 0; r < rounds; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(complete(&h, &st, r), NAA_SUCCESS);
    assert_int_equal(st.naa_return_code, 0);
    assert_int_equal(st.function_code, FN_ADD1);
  }
  size_t bad = 0;
  for (size_t i = 0; i < size; i++) bad += buf[i] != (uint8_t)(i * seed + rounds);
  assert_int_equal(bad, 0);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  free(buf);
}
