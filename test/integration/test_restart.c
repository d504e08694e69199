/* SPDX-License-Identifier: BSD-3-Clause */
/* naa-server killed and started again, over and over, while a client invokes (NAA_RECONNECT
 * on, the default): each restart that completes within NAA_CONNECT_TIMEOUT is invisible to the
 * application, whose naa_invoke waits for the NAA instead of failing. The test orders every
 * restart: it kills the server while the handle is idle, starts an invocation in another
 * thread, and starts the server again (on the same port) only once that thread sleeps in the
 * pause between two reconnect attempts (its system call, read from /proc), so the invocation
 * is certainly inside its reconnect loop, with an attempt failed, when the NAA comes back.
 * A second case is the loop a user runs: NAA_TEST_RESTART_INVOCATIONS (default 300) checked
 * vecadd invocations 20 ms apart while another thread SIGKILLs naa-server every 1.5 s
 * (NAA_TEST_RESTART_KILLS times at most; default no limit) and starts it again 0.5 s later. A kill
 * can cost at most the invocation it finds in flight (at-most-once, naa(7)); every other invocation
 * waits for the NAA, and no result is ever wrong. It prints the figures (ok, failed, wrong, kills).
 * Over the transport NAA_TRANSPORT names (transports.sh runs both over ofi+tcp and ofi+shm, the
 * verbs suite over verbs). */
#define _POSIX_C_SOURCE 200809L
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

#include "naa.h"
#include "nap_fill.h"
#include "server.h"

enum { FN_VECADD = 10, N = 1024, CYCLES = 5 };

static double a[N], b[N], c[N];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { WRONG = -1 }; /* a result computed wrong, reported as NAA_SUCCESS */

/* vecadd of round `round` (any thread): its code, WRONG for a wrong result. */
static int checked_vecadd(naa_handle *h, int round) {
  for (int i = 0; i < N; i++) a[i] = round + i, c[i] = -1;
  int rc = naa_invoke(h);
  if (rc == NAA_SUCCESS) rc = naa_wait(h, NULL);
  for (int i = 0; rc == NAA_SUCCESS && i < N; i++)
    if (c[i] != round + i + 0.5 * i) rc = WRONG;
  return rc;
}

typedef struct invoker {
  naa_handle *h;
  int round, rc;
  double took;
  _Atomic pid_t tid;
} invoker;

static void *invoke_in_thread(void *arg) {
  invoker *v = arg;
  atomic_store(&v->tid, test_thread_id());
  const double t0 = now_s();
  v->rc = checked_vecadd(v->h, v->round);
  v->took = now_s() - t0;
  return NULL;
}

/* naa-server started, its port written to port[16], and a vecadd handle *h connected to it. */
static void vecadd_handle(test_server *s, char port[16], naa_handle *h) {
  assert_int_equal(test_server_start(s, NULL), 0);
  test_server_use(s, FN_VECADD, 2);
  snprintf(port, 16, "%d", s->port);
  for (int i = 0; i < N; i++) b[i] = 0.5 * i;
  naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, true}};
  naa_param_t out[1] = {{c, sizeof c, false}};
  assert_int_equal(naa_create(FN_VECADD, in, 2, out, 1, h), NAA_SUCCESS);
}

static void test_restart_loop(void **state) {
  (void)state;
  test_server s;
  char port[16];
  naa_handle h;
  vecadd_handle(&s, port, &h);
  const char *args[] = {"--port", port, NULL};
  const double limit = 10.0 * test_time_scale();
  if (test_thread_syscall(test_thread_id()) == -2) {
    fprintf(stderr, "/proc/self/task/TID/syscall is not readable here: test skipped\n");
    skip();
  }
  int round = 0;
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    assert_int_equal(checked_vecadd(&h, round++), NAA_SUCCESS);
    test_server_kill(&s); /* waits for the process: its connections are closed */
    sleep_ms(2);          /* idle: naa_invoke looks at the connection after 1 ms */
    invoker v = {&h, round++, NAA_ERR_INTERNAL, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, invoke_in_thread, &v), 0);
    /* The thread sleeps only in naa_invoke's pause between two reconnect attempts. */
    const double give_up = now_s() + limit;
    long nr = -1;
    while (now_s() < give_up) {
      const pid_t tid = atomic_load(&v.tid);
      if (tid != 0 && (nr = test_thread_syscall(tid)) == SYS_clock_nanosleep) break;
      if (nr == -2) break; /* the thread is gone: naa_invoke returned */
      sleep_ms(1);
    }
    if (nr != SYS_clock_nanosleep) {
      assert_int_equal(test_server_start(&s, args), 0); /* let the thread end */
      pthread_join(t, NULL);
      fail_msg("cycle %d: naa_invoke never retried its reconnect (it returned %s)", cycle,
               naa_strerror(v.rc));
    }
    assert_int_equal(test_server_start(&s, args), 0);
    pthread_join(t, NULL);
    printf("cycle %d: naa-server restarted while naa_invoke reconnected: %s after %.0f ms\n", cycle,
           v.rc == WRONG ? "a wrong result" : naa_strerror(v.rc), 1e3 * v.took);
    assert_int_equal(v.rc, NAA_SUCCESS);
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

typedef struct killer {
  test_server *s;
  const char *const *args;
  int max_kills; /* 0: no limit */
  atomic_int done, kills, failed_starts;
  _Atomic long killed_ms, reaped_ms; /* when the last kill began and its server was reaped
                                       (now_s, in ms) */
} killer;

/* Every 1.5 s: SIGKILL, 0.5 s later start again on the same port, until told to stop or
 * max_kills are done. */
static void *kill_and_restart(void *arg) {
  killer *k = arg;
  for (;;) {
    for (int i = 0; i < 100 || (k->max_kills > 0 && atomic_load(&k->kills) >= k->max_kills); i++) {
      if (atomic_load(&k->done)) return NULL;
      sleep_ms(10);
    }
    atomic_store(&k->killed_ms, (long)(1e3 * now_s()));
    atomic_fetch_add(&k->kills, 1);
    test_server_kill(k->s);
    atomic_store(&k->reaped_ms, (long)(1e3 * now_s()));
    sleep_ms(500);
    if (test_server_start(k->s, k->args) != 0) {
      atomic_fetch_add(&k->failed_starts, 1);
      return NULL;
    }
  }
}

static void test_restart_figures(void **state) {
  (void)state;
  test_server s;
  char port[16];
  naa_handle h;
  vecadd_handle(&s, port, &h);
  const char *args[] = {"--port", port, NULL};
  const char *count = getenv("NAA_TEST_RESTART_INVOCATIONS");
  const int rounds = count != NULL && *count != '\0' ? atoi(count) : 300;
  const char *kills = getenv("NAA_TEST_RESTART_KILLS");
  killer k = {&s, args, kills != NULL ? atoi(kills) : 0, 0, 0, 0, 0, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, kill_and_restart, &k), 0);
  int ok = 0, failed = 0, wrong = 0;
  const double t0 = now_s();
  for (int r = 0; r < rounds; r++) {
    const double started = now_s();
    const int rc = checked_vecadd(&h, r);
    if (rc == NAA_SUCCESS) {
      ok++;
    } else if (rc == WRONG) {
      wrong++;
    } else {
      failed++;
      char why[256];
      naa_last_error(&h, why, sizeof why);
      printf(
          "invocation %d (started %.1f ms after kill %d began, %.1f ms after its server was "
          "reaped): %s: %s\n",
          r, 1e3 * started - (double)atomic_load(&k.killed_ms), atomic_load(&k.kills),
          1e3 * started - (double)atomic_load(&k.reaped_ms), naa_strerror(rc), why);
      if (rc == NAA_ERR_TIMEOUT) naa_cancel(&h);
    }
    sleep_ms(20);
  }
  const double took = now_s() - t0;
  atomic_store(&k.done, 1);
  pthread_join(t, NULL);
  printf(
      "restart loop over %s: %d invocations 20 ms apart in %.1f s, %d kills: %d ok, %d failed, "
      "%d wrong\n",
      getenv("NAA_TRANSPORT") != NULL ? getenv("NAA_TRANSPORT") : "the default transport", rounds,
      took, atomic_load(&k.kills), ok, failed, wrong);
  assert_int_equal(atomic_load(&k.failed_starts), 0);
  assert_int_equal(wrong, 0);
  assert_true(failed <= atomic_load(&k.kills)); /* at most the one in flight per kill */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

int main(void) {
  setenv("NAA_TIMEOUT", "30", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_restart_loop),
      cmocka_unit_test(test_restart_figures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
