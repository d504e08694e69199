/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_cancel from another thread (naa_cancel(3)): thread A waits for an invocation whose
 * kernel sleeps for longer than the test lasts (naa-server with the test kernel plugin's
 * nap_fill), the main thread cancels it once A is asleep inside the wait (the test reads A's
 * system call from /proc, so no timing decides it): A's call ends with NAA_ERR_CANCELED
 * within a bound far below NAA_TIMEOUT, naa_cancel does not wait for A's wait to time out,
 * and an invocation started after the cancel is never reported to A's call. Over the
 * transport NAA_TRANSPORT names (transports.sh runs it over ofi+tcp and ofi+shm). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "nap_fill.h"
#include "server.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Thread A: one naa_wait, or one naa_waitany over the handle. */
typedef struct waiter {
  naa_handle *h;
  int any;
  _Atomic pid_t tid;
  int rc, index;
  double ended;
} waiter;

static void *wait_in_thread(void *arg) {
  waiter *w = arg;
  atomic_store(&w->tid, test_thread_id());
  naa_status st;
  w->rc = w->any ? naa_waitany(1, w->h, &w->index, &st) : naa_wait(w->h, &st);
  w->ended = now_s();
  return NULL;
}

/* Until thread A sleeps in the wait's ppoll(2): it then has joined the wait on the handle
 * (nothing else of A's blocks between its start and that call). */
static void until_asleep(waiter *w, double limit_s) {
  const double give_up = now_s() + limit_s;
  while (atomic_load(&w->tid) == 0) sleep_ms(1);
  for (;;) {
    const long nr = test_thread_syscall(atomic_load(&w->tid));
    if (nr == SYS_ppoll) return;
    if (nr == -2) fail_msg("thread A's wait returned before it slept");
    if (now_s() > give_up)
      fail_msg("thread A never went to sleep in its wait (system call %ld)", nr);
    sleep_ms(1);
  }
}

/* Thread A started on `w`, once asleep in its wait. */
static pthread_t waiting(waiter *w, double limit_s) {
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_in_thread, w), 0);
  until_asleep(w, limit_s);
  return t;
}

/* Joins A by `deadline` (CLOCK_REALTIME seconds from now), failing if it is still waiting. */
static void join_by(pthread_t t, double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const double end = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + seconds;
  ts.tv_sec = (time_t)end;
  ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
  if (pthread_timedjoin_np(t, NULL, &ts) != 0)
    fail_msg("thread A is still in its wait %.1f s after naa_cancel returned", seconds);
}

typedef struct fixture {
  test_server server;
  double timeout; /* NAA_TIMEOUT, seconds */
  uint8_t in[8], out[4096];
  naa_handle h;
} fixture;

/* A handle on nap_fill, invoked with a kernel that sleeps for 1.5 NAA_TIMEOUT: A's wait can
 * only end by the cancel (or, without it, by NAA_TIMEOUT). */
static void start(fixture *f, const char *progress) {
  const char *args[] = {"--kernel", plugin_or_skip(), NULL};
  if (test_thread_syscall(test_thread_id()) == -2) {
    fprintf(stderr, "/proc/self/task/TID/syscall is not readable here: test skipped\n");
    skip();
  }
  assert_int_equal(test_server_start(&f->server, args), 0);
  test_server_use(&f->server, FN_NAP_FILL, 1);
  f->timeout = 6.0 * test_time_scale();
  char text[32];
  snprintf(text, sizeof text, "%.3f", f->timeout);
  setenv("NAA_TIMEOUT", text, 1);
  if (progress != NULL) setenv("NAA_PROGRESS", progress, 1);
  naa_param_t pi = {f->in, sizeof f->in, false}, po = {f->out, sizeof f->out, false};
  assert_int_equal(naa_create(FN_NAP_FILL, &pi, 1, &po, 1, &f->h), NAA_SUCCESS);
  unsetenv("NAA_PROGRESS");
  nap_request(f->in, (uint32_t)(1500 * f->timeout), 0x11);
  memset(f->out, 0xaa, sizeof f->out);
  assert_int_equal(naa_invoke(&f->h), NAA_SUCCESS);
}

/* The handle works on: a following invocation, waited for here, gets its own result. */
static void finish(fixture *f, uint8_t fill, int already_invoked) {
  if (!already_invoked) {
    nap_request(f->in, 0, fill);
    assert_int_equal(naa_invoke(&f->h), NAA_SUCCESS);
  }
  assert_int_equal(naa_wait(&f->h, NULL), NAA_SUCCESS);
  assert_true(all_bytes(f->out, sizeof f->out, fill));
  assert_int_equal(naa_finalize(&f->h), NAA_SUCCESS);
  test_server_kill(&f->server); /* its kernel still sleeps */
  setenv("NAA_TIMEOUT", "30", 1);
}

/* A sleeps in naa_wait; naa_cancel from the main thread ends it with NAA_ERR_CANCELED and
 * returns long before A's NAA_TIMEOUT would have ended the wait. */
static void cancel_wakes_wait(const char *progress) {
  fixture f;
  start(&f, progress);
  waiter w = {&f.h, 0, 0, -1, -1, 0};
  const pthread_t t = waiting(&w, f.timeout / 2);
  const double t0 = now_s();
  assert_int_equal(naa_cancel(&f.h), NAA_SUCCESS);
  const double took = now_s() - t0;
  join_by(t, f.timeout / 2);
  printf(
      "NAA_PROGRESS=%s: naa_cancel took %.1f ms, thread A's naa_wait ended %.1f ms after "
      "the cancel began with %s\n",
      progress != NULL ? progress : "(default)", 1e3 * took, 1e3 * (w.ended - t0),
      naa_strerror(w.rc));
  if (took > f.timeout / 2)
    fail_msg("naa_cancel waited %.1f s, for thread A's wait to end (NAA_TIMEOUT %.1f s)", took,
             f.timeout);
  assert_int_equal(w.rc, NAA_ERR_CANCELED);
  assert_int_equal(naa_wait(&f.h, NULL), NAA_ERR_STATE); /* nothing in flight any more */
  finish(&f, 0x21, 0);
}

static void test_cancel_wakes_wait(void **state) {
  (void)state;
  cancel_wakes_wait(NULL);
}

static void test_cancel_wakes_wait_progress_thread(void **state) {
  (void)state;
  cancel_wakes_wait("thread");
}

/* A sleeps in naa_waitany; the main thread cancels and at once invokes again: A's call ends
 * with NAA_ERR_CANCELED for the cancelled invocation, never with the result of the new one,
 * which the main thread's naa_wait gets. */
static void test_cancel_then_invoke_during_waitany(void **state) {
  (void)state;
  fixture f;
  start(&f, NULL);
  waiter w = {&f.h, 1, 0, -1, -1, 0};
  const pthread_t t = waiting(&w, f.timeout / 2);
  assert_int_equal(naa_cancel(&f.h), NAA_SUCCESS);
  nap_request(f.in, 0, 0x33);
  assert_int_equal(naa_invoke(&f.h), NAA_SUCCESS);
  join_by(t, f.timeout / 2);
  printf("thread A's naa_waitany: %s, index %d\n", naa_strerror(w.rc), w.index);
  assert_int_equal(w.rc, NAA_ERR_CANCELED);
  assert_int_equal(w.index, 0);
  finish(&f, 0x33, 1);
}

int main(void) {
  setenv("NAA_TIMEOUT", "30", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cancel_wakes_wait),
      cmocka_unit_test(test_cancel_wakes_wait_progress_thread),
      cmocka_unit_test(test_cancel_then_invoke_during_waitany),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
