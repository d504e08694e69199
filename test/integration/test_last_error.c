/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors a program can read (naa_last_error(3)) against a real naa-server: the cause of a failed
 * naa_create per thread, of a failed call per handle, NAA return codes by name, the log lines in
 * the program's own handler, at info, with the rank, and a handler that calls libnaa again. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1, FN_NONE = 99 };

static test_server server;
static char server_naa[96];

/* What the log handler saw. */
static pthread_mutex_t lines_mu = PTHREAD_MUTEX_INITIALIZER;
static char lines[8192];
static int last_level = -1;

static void collect(int level, const char *line, void *arg) {
  pthread_mutex_lock(&lines_mu);
  strncat(lines, line, sizeof lines - strlen(lines) - 2);
  strcat(lines, "\n");
  last_level = level;
  *(int *)arg += 1;
  pthread_mutex_unlock(&lines_mu);
}

static void assert_contains(const char *text, const char *part) {
  if (strstr(text, part) == NULL) fail_msg("\"%s\" does not contain \"%s\"", text, part);
}

static void test_failed_create_explained(void **state) {
  (void)state;
  char cause[256];
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  /* Nothing failed yet on this thread. */
  assert_int_equal(naa_last_error(NULL, cause, sizeof cause), NAA_SUCCESS);
  /* NAA_SPEC has no entry for this function code. */
  assert_int_equal(naa_create(FN_NONE, &p, 1, &p, 1, &h), NAA_ERR_NO_NAA);
  assert_int_equal(naa_last_error(NULL, cause, sizeof cause), NAA_ERR_NO_NAA);
  assert_contains(cause, "naa_create: ");
  assert_contains(cause, "99");
  /* Nobody listens: the cause names the address. */
  char nobody[96];
  snprintf(nobody, sizeof nobody, "%s:%d", test_host(), test_port());
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = nobody;
  attr.timeout_ms = 2000;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &h), NAA_ERR_CONNECTION);
  assert_int_equal(naa_last_error(NULL, cause, sizeof cause), NAA_ERR_CONNECTION);
  assert_contains(cause, "naa_create_attr: ");
  assert_contains(cause, strchr(nobody, ':') + 1);
  /* A short buffer gets a NUL-terminated prefix; NULL gets nothing but the code. */
  char small[8];
  assert_int_equal(naa_last_error(NULL, small, sizeof small), NAA_ERR_CONNECTION);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_int_equal(naa_last_error(NULL, NULL, 0), NAA_ERR_CONNECTION);
}

static void test_per_handle(void **state) {
  (void)state;
  char cause[256];
  uint8_t a = 0, b = 0;
  naa_param_t pa = {&a, 1, false}, pb = {&b, 1, false};
  naa_handle h = NAA_HANDLE_NULL, other = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &pa, 1, &pa, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_create(FN_ADD1, &pb, 1, &pb, 1, &other), NAA_SUCCESS);
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), NAA_SUCCESS);
  bool flag;
  assert_int_equal(naa_test(&h, &flag, NULL), NAA_ERR_STATE);
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), NAA_ERR_STATE);
  assert_contains(cause, "naa_test: no invocation in flight");
  assert_int_equal(naa_last_error(&other, cause, sizeof cause), NAA_SUCCESS);
  /* A later success on the handle does not erase its last failure. */
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_int_equal(naa_last_error(&h, NULL, 0), NAA_ERR_STATE);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&other), NAA_SUCCESS);
}

/* naa-server answers 0x7f for a function code it has no kernel for: named, not a bare code. */
static void test_unknown_function_named(void **state) {
  (void)state;
  char cause[256];
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = server_naa;
  assert_int_equal(naa_create_attr(FN_NONE, &p, 1, &p, 1, &attr, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  naa_status st;
  assert_int_equal(naa_wait(&h, &st), NAA_ERR_NAA);
  assert_int_equal(st.naa_return_code, NAA_RC_UNKNOWN_FUNCTION);
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), NAA_ERR_NAA);
  assert_contains(cause, "0x7f");
  assert_contains(cause, "unknown function code");
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

static void test_rc_string(void **state) {
  (void)state;
  assert_string_equal(naa_rc_string(0), "success");
  assert_contains(naa_rc_string(NAA_RC_SOCKET_NOT_AVAILABLE), "socket not available");
  assert_contains(naa_rc_string(NAA_RC_KERNEL_TIMEOUT), "kernel timeout");
  assert_contains(naa_rc_string(NAA_RC_KERNEL_CRASHED), "crashed");
  assert_contains(naa_rc_string(NAA_RC_UNKNOWN_FUNCTION), "unknown function code");
  assert_contains(naa_rc_string(0x10), "application error 0x10");
  assert_contains(naa_rc_string(0x10), "wrong number or kind of regions");
  assert_contains(naa_rc_string(0x11), "region sizes");
  assert_contains(naa_rc_string(0x12), "application error");
  assert_contains(naa_rc_string(0x7d), "application error");
  assert_string_equal(naa_rc_string(0x05), "unknown NAA return code");
  assert_string_equal(naa_rc_string(0x80), "unknown NAA return code");
}

/* A call that fails later than the one that lost the connection keeps its own cause: the
 * naa_invoke whose reconnect fails replaces naa_wait's "the handle will reconnect", for the
 * handle and for the thread. */
static void test_failed_reconnect_explained(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  char naa[96];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), s.port);
  const char *params[] = {"NAA_RECONNECT=1", "NAA_CONNECT_TIMEOUT=5", NULL};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa;
  attr.params = params;
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  test_server_kill(&s); /* its port is free again: nobody answers the reconnect */
  char cause[512];
  /* The loss shows in the invocation it costs: at naa_wait ("the handle will reconnect"), or,
   * where naa_invoke finds the idle connection gone first, in that call's own reconnect until
   * NAA_CONNECT_TIMEOUT (naa(7), Reconnecting). */
  int rc = naa_invoke(&h);
  if (rc == NAA_SUCCESS) rc = naa_wait(&h, NULL);
  assert_int_equal(rc, NAA_ERR_CONNECTION);
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), NAA_ERR_CONNECTION);
  if (strstr(cause, "the handle will reconnect") == NULL)
    assert_contains(cause, "cannot reconnect to ");
  /* The next naa_invoke tries to reconnect and cannot: its own cause, not the stale one. */
  rc = naa_invoke(&h);
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT || rc == NAA_ERR_TIMEOUT);
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), rc);
  assert_contains(cause, "naa_invoke: ");
  assert_contains(cause, "cannot reconnect to ");
  if (strstr(cause, "will reconnect") != NULL) fail_msg("stale cause: \"%s\"", cause);
  char of_thread[512];
  assert_int_equal(naa_last_error(NULL, of_thread, sizeof of_thread), rc);
  assert_string_equal(of_thread, cause);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* naa_create(3) and naa(7): an NAA_SPEC entry that cannot be reached hands over to the next
 * one for the code, within the one deadline, logged as a warning naming both. */
static void test_create_fails_over(void **state) {
  (void)state;
  char spec[256], line[256];
  const int nobody = test_port();
  /* Rank 7 (main) of two entries starts at the second (7 mod 2): the one nobody listens on. */
  snprintf(spec, sizeof spec, "%s:%d:%d:1,%s:%d:%d:1", test_host(), server.port, FN_ADD1,
           test_host(), nobody, FN_ADD1);
  setenv("NAA_SPEC", spec, 1);
  int calls = 0;
  pthread_mutex_lock(&lines_mu);
  lines[0] = '\0';
  last_level = -1;
  pthread_mutex_unlock(&lines_mu);
  assert_int_equal(naa_set_log_handler(collect, &calls), NAA_SUCCESS);
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_set_log_handler(NULL, NULL), NAA_SUCCESS);
  snprintf(line, sizeof line,
           "warning: function code %d: failing over from %s:%d to %s:%d (NAA_SPEC entry 1)",
           FN_ADD1, test_host(), nobody, test_host(), server.port);
  pthread_mutex_lock(&lines_mu);
  assert_contains(lines, line);
  pthread_mutex_unlock(&lines_mu);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_int_equal(a, 1);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  test_server_use(&server, FN_ADD1, 1);
}

/* main sets NAA_LOG_LEVEL=info and SLURM_PROCID=7 before the first call. */
static void test_log_handler(void **state) {
  (void)state;
  int calls = 0;
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_set_log_handler(collect, &calls), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_STATE);
  pthread_mutex_lock(&lines_mu);
  assert_true(calls >= 1);
  assert_contains(lines, "no invocation in flight");
  assert_contains(lines, ", rank 7]: info: ");
  /* Returned to the caller: info, not error. */
  assert_int_equal(last_level, NAA_LOG_LEVEL_INFO);
  pthread_mutex_unlock(&lines_mu);
  /* NULL gives the lines back to stderr. */
  assert_int_equal(naa_set_log_handler(NULL, NULL), NAA_SUCCESS);
  const int before = calls;
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_STATE);
  assert_int_equal(calls, before);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* A handler that calls libnaa on the handle whose call logged, as naa_set_log_handler(3)
 * allows: naa_wait with nothing in flight logs its failure with the handle's lock held. */
static naa_handle reentry_handle;
static int reentry_calls;
static __thread int in_handler;

static void reenter(int level, const char *line, void *arg) {
  (void)level, (void)line, (void)arg;
  if (in_handler) return; /* the calls below log too */
  in_handler = 1;
  naa_handle_info_t info;
  bool flag = true;
  if (naa_handle_info(&reentry_handle, &info) == NAA_SUCCESS &&
      naa_test(&reentry_handle, &flag, NULL) == NAA_ERR_STATE &&
      naa_cancel(&reentry_handle) == NAA_SUCCESS)
    reentry_calls++;
  in_handler = 0;
}

static void deadlocked(int sig) {
  (void)sig;
  static const char msg[] = "test_log_handler_reentry: the handler's call deadlocked\n";
  if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* exiting anyway */
  }
  _exit(1);
}

static void test_log_handler_reentry(void **state) {
  (void)state;
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  reentry_handle = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &reentry_handle), NAA_SUCCESS);
  assert_int_equal(naa_set_log_handler(reenter, NULL), NAA_SUCCESS);
  signal(SIGALRM, deadlocked);
  alarm(60);
  assert_int_equal(naa_wait(&reentry_handle, NULL), NAA_ERR_STATE);
  alarm(0);
  /* The call's lines reached the handler before it returned, and its calls worked. */
  assert_true(reentry_calls >= 1);
  assert_int_equal(naa_set_log_handler(NULL, NULL), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&reentry_handle), NAA_SUCCESS);
}

int main(void) {
  setenv("NAA_LOG_LEVEL", "info", 1);
  setenv("SLURM_PROCID", "7", 1);
  if (test_server_start_shared(&server) != 0) return 99;
  test_server_use(&server, FN_ADD1, 1);
  snprintf(server_naa, sizeof server_naa, "%s:%d", test_host(), server.port);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_create_explained),
      cmocka_unit_test(test_per_handle),
      cmocka_unit_test(test_unknown_function_named),
      cmocka_unit_test(test_rc_string),
      cmocka_unit_test(test_log_handler),
      cmocka_unit_test(test_failed_reconnect_explained),
      cmocka_unit_test(test_create_fails_over),
      cmocka_unit_test(test_log_handler_reentry),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_server_stop(&server);
  return failed;
}
