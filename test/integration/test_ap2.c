/* SPDX-License-Identifier: BSD-3-Clause */
/* The reference middleware's interface (naaice_ap2.h) against a real naa-server: the bad-input
 * matrix through the compat entry points (each failure is -1 with libnaa's code and cause in
 * naaice_last_error), and where libnaa behaves better than the reference (a finished
 * invocation is reported again at once, NAA_SPEC entries are reused, no alarm, threads). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "naaice_ap2.h"
#include "server.h"

enum { FN_ADD1 = 1, FN_VECADD = 10 };

static test_server server;

static int start_shared(void **state) {
  (void)state;
  return test_server_start_shared(&server);
}

static int stop_shared(void **state) {
  (void)state;
  return test_server_stop(&server) == 0 ? 0 : -1;
}

/* The call failed with -1, and the handle's last error is `code` with a cause naming `why`. */
#define assert_failed(call, h, code, why)                                                    \
  do {                                                                                       \
    assert_int_equal((call), -1);                                                            \
    const char *cause_ = NULL;                                                               \
    assert_int_equal(naaice_last_error((h), &cause_), (code));                               \
    assert_non_null(cause_);                                                                 \
    if (strstr(cause_, (why)) == NULL) fail_msg("cause \"%s\" lacks \"%s\"", cause_, (why)); \
  } while (0)

static uint8_t buf_a[64], buf_b[64];

static void test_create_bad_arguments(void **state) {
  (void)state;
  struct naa_handle h;
  memset(&h, 0, sizeof h);
  naa_param_t in[1] = {{buf_a, sizeof buf_a, false}}, out[1] = {{buf_a, sizeof buf_a, false}};
  test_server_use(&server, FN_ADD1, 1);

  assert_int_equal(naa_create(FN_ADD1, in, 1, out, 1, NULL), -1);
  assert_int_equal(naaice_last_error(NULL, NULL), NAAICE_ERR_INVALID_ARGUMENT);

  /* Function codes: 0, 128 and 256 + 1 (which the reference truncates to 1) are refused. */
  const naa_function_code_t bad_codes[] = {0, 128, 255, 257};
  for (size_t i = 0; i < sizeof bad_codes / sizeof bad_codes[0]; i++) {
    assert_failed(naa_create(bad_codes[i], in, 1, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                  "is not in 1..127");
    assert_int_equal(h.function_code, bad_codes[i]);
    assert_int_equal(h.naaice_session, 0);
  }

  assert_failed(naa_create(FN_ADD1, NULL, 1, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "inputs is NULL");
  assert_failed(naa_create(FN_ADD1, in, 1, NULL, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "outputs is NULL");
  assert_failed(naa_create(FN_ADD1, in, 0, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "at least one input");
  assert_failed(naa_create(FN_ADD1, in, 1, out, 0, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "at least one output");
  naa_param_t empty[1] = {{buf_b, 0, false}}, null_addr[1] = {{NULL, 8, false}};
  assert_failed(naa_create(FN_ADD1, empty, 1, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "inputs[0].size is 0");
  assert_failed(naa_create(FN_ADD1, in, 1, null_addr, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "outputs[0].addr is NULL");

  /* MAX_MRS regions of which the MRSP takes one: 32 parameters are too many. */
  static uint8_t many[MAX_MRS][8];
  naa_param_t params[MAX_MRS];
  for (int i = 0; i < MAX_MRS; i++) params[i] = (naa_param_t){many[i], sizeof many[i], false};
  assert_failed(naa_create(FN_ADD1, params, MAX_MRS, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "more than 31");
  assert_failed(naa_create(FN_ADD1, params, 16, params + 16, 16, &h), &h,
                NAAICE_ERR_INVALID_ARGUMENT, "32 distinct buffers");
}

static void test_create_bad_environment(void **state) {
  (void)state;
  struct naa_handle h;
  memset(&h, 0, sizeof h);
  naa_param_t in[2] = {{buf_a, sizeof buf_a, false}, {buf_b, sizeof buf_b, false}};
  naa_param_t out[1] = {{buf_a, sizeof buf_a, false}};
  char spec[160];

  unsetenv("NAA_SPEC");
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_NO_NAA, "NAA_SPEC");
  setenv("NAA_SPEC", "localhost:x:10:2", 1);
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_CONFIG, "port \"x\"");
  /* The reference's rule: param_count is the number of inputs, not of regions. */
  test_server_use(&server, FN_VECADD, 3);
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_INVALID_ARGUMENT,
                "takes 3 inputs, naa_create was given 2");
  test_server_use(&server, FN_ADD1, 1);
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_NO_NAA,
                "no NAA for function code 10");
  snprintf(spec, sizeof spec, "%s:%d:10:2", test_host(), test_port());
  setenv("NAA_SPEC", spec, 1);
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_CONNECTION, "naa_create");
  test_server_use(&server, FN_VECADD, 2);
  setenv("NAA_TIMEOUT", "soon", 1);
  assert_failed(naa_create(FN_VECADD, in, 2, out, 1, &h), &h, NAAICE_ERR_CONFIG, "NAA_TIMEOUT");
  test_timeout_default(); /* back to the suite's, scaled */

  /* A successful create starts the storage's record afresh. */
  assert_int_equal(naa_create(FN_VECADD, in, 2, out, 1, &h), 0);
  assert_int_equal(naaice_last_error(&h, NULL), 0);
  assert_int_equal(naa_finalize(&h), 0);
}

static void test_dead_handles(void **state) {
  (void)state;
  bool flag = true;
  naa_status st;
  struct naa_handle *h = calloc(1, sizeof(struct naa_handle)); /* never created */
  assert_non_null(h);
  assert_failed(naa_invoke(h), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_failed(naa_test(h, &flag, &st), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_false(flag);
  assert_failed(naa_wait(h, &st), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_failed(naa_finalize(h), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  memset(h, 0xa5, sizeof *h); /* garbage: refused, never followed */
  assert_failed(naa_invoke(h), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_failed(naa_finalize(h), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_int_equal(naa_invoke(NULL), -1);
  assert_int_equal(naa_test(NULL, &flag, &st), -1);
  assert_int_equal(naa_wait(NULL, &st), -1);
  assert_int_equal(naa_finalize(NULL), -1);

  /* Finalized, and a stale copy of a finalized handle. */
  naa_param_t p[1] = {{buf_a, sizeof buf_a, false}};
  test_server_use(&server, FN_ADD1, 1);
  memset(h, 0, sizeof *h);
  assert_int_equal(naa_create(FN_ADD1, p, 1, p, 1, h), 0);
  struct naa_handle copy = *h;
  assert_int_equal(naa_finalize(h), 0);
  assert_int_equal(naaice_last_error(h, NULL), 0);
  assert_failed(naa_finalize(h), h, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  assert_failed(naa_invoke(&copy), &copy, NAAICE_ERR_INVALID_HANDLE, "not a live handle");
  free(h);
}

static void test_state_errors(void **state) {
  (void)state;
  struct naa_handle h;
  memset(&h, 0, sizeof h);
  naa_param_t p[1] = {{buf_a, sizeof buf_a, false}};
  naa_status st;
  bool flag;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, p, 1, p, 1, &h), 0);
  assert_failed(naa_test(&h, NULL, &st), &h, NAAICE_ERR_INVALID_ARGUMENT, "flag is NULL");
  assert_failed(naa_wait(&h, &st), &h, NAAICE_ERR_STATE, "not valid in the handle's current state");
  assert_int_equal(naa_invoke(&h), 0);
  assert_failed(naa_invoke(&h), &h, NAAICE_ERR_STATE, "not valid in the handle's current state");
  assert_int_equal(naa_wait(&h, &st), 0);
  /* The record keeps the last failure, not the last call. */
  assert_int_equal(naaice_last_error(&h, NULL), NAAICE_ERR_STATE);
  assert_int_equal(naa_test(&h, &flag, NULL), 0);
  assert_true(flag);
  assert_int_equal(naa_finalize(&h), 0);
  assert_int_equal(naaice_last_error(&h, NULL), 0);
}

/* Finished invocations are reported again, at once, by test and wait; no alarm is armed. */
static void test_after_completion(void **state) {
  (void)state;
  struct naa_handle h;
  memset(&h, 0, sizeof h);
  memset(buf_a, 0, sizeof buf_a);
  naa_param_t p[1] = {{buf_a, sizeof buf_a, false}};
  naa_status st, again;
  bool flag = false;
  test_server_use(&server, FN_ADD1, 1);
  setenv("NAA_TIMEOUT", "20", 1);
  assert_int_equal(naa_create(FN_ADD1, p, 1, p, 1, &h), 0);
  test_timeout_default(); /* back to the suite's, scaled */
  assert_int_equal(naa_invoke(&h), 0);
  while (!flag) assert_int_equal(naa_test(&h, &flag, &st), 0);
  assert_int_equal(st.state, 30);
  assert_int_equal(st.naa_error, NAA_SUCCESS);
  assert_int_equal(buf_a[0], 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 3; i++) {
    memset(&again, 0, sizeof again);
    assert_int_equal(naa_wait(&h, &again), 0);
    assert_memory_equal(&again, &st, sizeof st);
    flag = false;
    assert_int_equal(naa_test(&h, &flag, &again), 0);
    assert_true(flag);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* The deadline is 20 s: anything near it means the wait blocked. */
  assert_true(t1.tv_sec - t0.tv_sec < 5);
  assert_int_equal(alarm(0), 0); /* no alarm was set by the library */
  /* The next invocation is waited for anew. */
  assert_int_equal(naa_invoke(&h), 0);
  assert_int_equal(naa_wait(&h, &st), 0);
  assert_int_equal(buf_a[0], 2);
  assert_int_equal(naa_finalize(&h), 0);
}

/* One NAA_SPEC entry, handle after handle and several at once (the reference serves one). */
static void test_spec_entry_reuse(void **state) {
  (void)state;
  enum { HANDLES = 4 };
  static uint8_t bufs[HANDLES][16];
  struct naa_handle h[HANDLES];
  naa_status st;
  test_server_use(&server, FN_ADD1, 1);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < HANDLES; i++) {
      naa_param_t p[1] = {{bufs[i], sizeof bufs[i], false}};
      memset(&h[i], 0, sizeof h[i]);
      assert_int_equal(naa_create(FN_ADD1, p, 1, p, 1, &h[i]), 0);
    }
    for (int i = 0; i < HANDLES; i++) assert_int_equal(naa_invoke(&h[i]), 0);
    for (int i = 0; i < HANDLES; i++) {
      assert_int_equal(naa_wait(&h[i], &st), 0);
      assert_int_equal(naa_finalize(&h[i]), 0);
      assert_int_equal(bufs[i][15], round + 1);
    }
  }
}

/* Threads, each with its own handle, as an MPI_THREAD_MULTIPLE code would. */
enum { THREADS = 4, ROUNDS = 50 };
static void *thread_body(void *arg) {
  uint8_t *buf = arg;
  struct naa_handle *h = calloc(1, sizeof(struct naa_handle));
  naa_param_t p[1] = {{buf, 32, false}};
  naa_status st;
  intptr_t bad = h == NULL || naa_create(FN_ADD1, p, 1, p, 1, h) != 0;
  for (int r = 0; r < ROUNDS && !bad; r++) bad = naa_invoke(h) || naa_wait(h, &st) || st.naa_error;
  if (h != NULL) bad |= naa_finalize(h) != 0;
  free(h);
  return (void *)bad;
}

static void test_threads(void **state) {
  (void)state;
  static uint8_t bufs[THREADS][32];
  pthread_t t[THREADS];
  test_server_use(&server, FN_ADD1, 1);
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, thread_body, bufs[i]), 0);
  for (int i = 0; i < THREADS; i++) {
    void *bad;
    assert_int_equal(pthread_join(t[i], &bad), 0);
    assert_null(bad);
    for (int b = 0; b < 32; b++) assert_int_equal(bufs[i][b], ROUNDS);
  }
}

/* The NAA killed and restarted on the same port: the invocation that meets the dead connection
 * fails (NAAICE_ERR_CONNECTION), and the handle carries on by itself, without a new naa_create
 * (libnaa reconnects; the reference's handle would be dead). */
static void test_reconnect_after_restart(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  test_server_use(&s, FN_ADD1, 1);
  static uint8_t b[16];
  naa_param_t p[1] = {{b, sizeof b, false}};
  struct naa_handle h;
  memset(&h, 0, sizeof h);
  naa_status st;
  assert_int_equal(naa_create(FN_ADD1, p, 1, p, 1, &h), 0);
  assert_int_equal(naa_invoke(&h), 0);
  assert_int_equal(naa_wait(&h, &st), 0);
  char port[16];
  snprintf(port, sizeof port, "%d", s.port);
  test_server_kill(&s);
  const char *args[] = {"--port", port, NULL};
  assert_int_equal(test_server_start(&s, args), 0);
  int failed = 0;
  for (int round = 0; round < 6; round++) {
    const uint8_t before = b[0];
    if (naa_invoke(&h) == 0 && naa_wait(&h, &st) == 0) {
      assert_int_equal(b[0], (uint8_t)(before + 1));
      continue;
    }
    const int code = naaice_last_error(&h, NULL);
    assert_true(code == NAAICE_ERR_CONNECTION || code == NAAICE_ERR_TRANSPORT);
    assert_true(round < 2);
    failed++;
  }
  printf("naa-server killed and restarted under an AP2 handle: %d of 6 invocations failed\n",
         failed);
  assert_int_equal(naa_finalize(&h), 0);
  assert_int_equal(test_server_stop(&s), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_bad_arguments),
      cmocka_unit_test(test_create_bad_environment),
      cmocka_unit_test(test_dead_handles),
      cmocka_unit_test(test_state_errors),
      cmocka_unit_test(test_after_completion),
      cmocka_unit_test(test_spec_entry_reuse),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_reconnect_after_restart),
  };
  return cmocka_run_group_tests(tests, start_shared, stop_shared);
}
