// SPDX-License-Identifier: BSD-3-Clause
/* A handle used in a fork()ed child: every call there fails with NAA_ERR_INVALID_HANDLE, and
 * the child's naa_finalize (and its exit) leaves the parent's connection working. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1 };

static test_server server;

static int start(void **state) {
  (void)state;
  setenv("NAA_TIMEOUT", "10", 1);
  return test_server_start(&server, NULL);
}

static int stop(void **state) {
  (void)state;
  return test_server_stop(&server) == 0 ? 0 : -1;
}

static void add1_round(naa_handle *h, uint8_t *buf, size_t size, uint8_t expect) {
  naa_status st;
  assert_int_equal(naa_invoke(h), NAA_SUCCESS);
  assert_int_equal(naa_wait(h, &st), NAA_SUCCESS);
  assert_int_equal(st.naa_return_code, 0);
  for (size_t i = 0; i < size; i++) assert_int_equal(buf[i], expect);
}

/* The child's view: each call must fail as an invalid handle; exit status = number of wrong
 * answers. It exits through exit(), so libnaa's and libfabric's exit handlers run too. */
static int child_uses_handle(naa_handle h) {
  int wrong = 0;
  bool done = true;
  naa_status st;
  wrong += naa_invoke(&h) != NAA_ERR_INVALID_HANDLE;
  wrong += naa_test(&h, &done, &st) != NAA_ERR_INVALID_HANDLE;
  wrong += done;
  wrong += naa_wait(&h, &st) != NAA_ERR_INVALID_HANDLE;
  naa_handle copy = h;
  wrong += naa_finalize(&copy) != NAA_ERR_INVALID_HANDLE;
  wrong += naa_finalize(&h) != NAA_ERR_INVALID_HANDLE;
  return wrong;
}

static void test_handle_after_fork(void **state) {
  (void)state;
  uint8_t buf[4096];
  memset(buf, 0, sizeof buf);
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  add1_round(&h, buf, sizeof buf, 1);
  for (int round = 0; round < 2; round++) { /* a second child after the first one exited */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) exit(child_uses_handle(h));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* The parent is unharmed: its connection still carries invocations and results. */
    add1_round(&h, buf, sizeof buf, (uint8_t)(2 + round));
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_handle_after_fork),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
