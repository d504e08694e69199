/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_handle_info(3) against a real naa-server: the NAA, transport, function code, regions,
 * pacing, timeout and progress mode a handle chose; a dead handle is refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "naa.h"
#include "server.h"

enum { FN_VECADD = 10 };

static test_server server;

static void test_handle_info(void **state) {
  (void)state;
  double a[4], b[4], c[4];
  naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, true}};
  naa_param_t out[1] = {{c, sizeof c, false}};
  naa_handle h = NAA_HANDLE_NULL;
  char naa[96];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), server.port);
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa;
  attr.transport = "ofi+tcp";
  attr.timeout_ms = 12345;
  attr.progress = "block";
  assert_int_equal(naa_create_attr(FN_VECADD, in, 2, out, 1, &attr, &h), NAA_SUCCESS);
  naa_handle_info_t info;
  memset(&info, 0xff, sizeof info);
  assert_int_equal(naa_handle_info(&h, &info), NAA_SUCCESS);
  assert_string_equal(info.naa, naa);
  assert_string_equal(info.transport, "ofi+tcp");
  assert_int_equal(info.function_code, FN_VECADD);
  assert_int_equal(info.regions, 3);
  assert_int_equal(info.pacing_us, 0); /* naa-server is a libnaa server: no pacing */
  assert_int_equal(info.timeout_ms, 12345);
  assert_string_equal(info.progress, "block");
  assert_int_equal(naa_handle_info(&h, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(naa_handle_info(&h, &info), NAA_ERR_INVALID_HANDLE);
}

int main(void) {
  if (test_server_start_shared(&server) != 0) return 99;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_handle_info)};
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_server_stop(&server);
  return failed;
}
