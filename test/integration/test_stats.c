/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_stats_get(3) against a real naa-server: N invocations of an S-byte in-place buffer give
 * N invocations, N*S bytes each way, N waits, the transfer and the NAA's service of each
 * within it; a failed call is counted by its code. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1, N = 7, S = 4096 };

static test_server server;
static uint8_t buf[S];

/* Seconds of CLOCK_MONOTONIC, the clock of the stages. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_off(void **state) {
  (void)state;
  /* main left NAA_STATS unset: off until a handle's params turn it on. */
  naa_stats_t t;
  assert_int_equal(naa_stats_get(&t, NULL, 0), NAA_ERR_STATE);
}

static void test_known_workload(void **state) {
  (void)state;
  naa_param_t p = {buf, S, false};
  naa_handle h = NAA_HANDLE_NULL;
  const char *const params[] = {"NAA_STATS=1", NULL};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.params = params;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &h), NAA_SUCCESS);
  const double t0 = now_s();
  for (int i = 0; i < N; i++) {
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  }
  const double wall = now_s() - t0;
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_STATE);
  assert_int_equal(buf[0], N);
  naa_stats_t t;
  naa_stats_function_t f[2];
  memset(f, 0xff, sizeof f);
  assert_int_equal(naa_stats_get(&t, f, 2), NAA_SUCCESS);
  assert_int_equal(t.creates, 1);
  assert_true(t.create_s > 0);
  assert_int_equal(t.n_functions, 1);
  assert_int_equal(t.errors[NAA_ERR_STATE], 1);
  assert_int_equal(f[0].function_code, FN_ADD1);
  char naa[96];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), server.port);
  assert_string_equal(f[0].naa, naa);
  assert_int_equal(f[0].invocations, N);
  assert_int_equal(f[0].bytes_out, (uint64_t)N * S);
  assert_int_equal(f[0].bytes_back, (uint64_t)N * S);
  assert_int_equal(f[0].waits, N + 1);
  assert_int_equal(f[0].tests, 0);
  assert_true(f[0].invoke_s > 0 && f[0].wait_s > 0);
  /* Each invocation's stages were seen, and lie inside it (naa_invoke to naa_wait's return):
   * inside the loop's time, whatever the scheduler did between the calls. */
  assert_int_equal(f[0].served, N);
  assert_true(f[0].transfer_s > 0);
  assert_true(f[0].service_s > 0);
  assert_true(f[0].transfer_s + f[0].service_s <= wall);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* Over ofi+shm, where the NAA's reply is often seen before our writes' completion, each
 * invocation of 1 MiB is still divided into a transfer and an NAA service that both last and
 * lie inside the round trips. Where the transfer ends in either order of the two is proven by
 * test/unit/test_stats, with stages given rather than timed. */
static void test_shm_stages_seen(void **state) {
  (void)state;
  if (strcmp(test_host(), "127.0.0.1") != 0) skip(); /* shm reaches a same-host server */
  enum { BIG = 1 << 20, ROUNDS = 5 };
  static uint8_t in[BIG], out[BIG];
  naa_param_t pi = {in, BIG, false}, po = {out, BIG, false};
  naa_handle h = NAA_HANDLE_NULL;
  char naa[96];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), server.port);
  const char *const params[] = {"NAA_STATS=1", NULL};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa;
  attr.transport = "ofi+shm";
  attr.params = params;
  assert_int_equal(naa_create_attr(FN_ADD1, &pi, 1, &po, 1, &attr, &h), NAA_SUCCESS);
  naa_stats_function_t before, after;
  assert_int_equal(naa_stats_get(NULL, &before, 1), NAA_SUCCESS);
  const double t0 = now_s();
  for (int i = 0; i < ROUNDS; i++) {
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  }
  const double wall = now_s() - t0;
  assert_int_equal(naa_stats_get(NULL, &after, 1), NAA_SUCCESS);
  const double transfer = after.transfer_s - before.transfer_s;
  const double service = after.service_s - before.service_s;
  printf("ofi+shm, %d x %d bytes in %.3f ms: transfer %.3f ms, NAA service %.3f ms\n", ROUNDS, BIG,
         1e3 * wall, 1e3 * transfer, 1e3 * service);
  assert_int_equal(after.served - before.served, ROUNDS);
  assert_true(transfer > 0 && service > 0);
  assert_true(transfer + service <= wall);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

int main(void) {
  unsetenv("NAA_STATS");
  if (test_server_start_shared(&server) != 0) return 99;
  test_server_use(&server, FN_ADD1, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off),
      cmocka_unit_test(test_known_workload),
      cmocka_unit_test(test_shm_stages_seen),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_server_stop(&server);
  return failed;
}
