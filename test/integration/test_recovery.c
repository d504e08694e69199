/* SPDX-License-Identifier: BSD-3-Clause */
/* A handle outlives what long jobs meet: a kernel slower than NAA_TIMEOUT, an
 * invocation the program gives up on (naa_cancel), an NAA killed and restarted, an NAA that
 * stays down while another serves the same function code. Real naa-server processes on
 * loopback, over the transport NAA_TRANSPORT names (transports.sh runs it over ofi+tcp and
 * ofi+shm). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "nap_fill.h"
#include "server.h"

enum { FN_VECADD = 10, FN_GATE_FILL = 108 };

static void set_seconds(const char *name, double seconds) {
  char text[32];
  snprintf(text, sizeof text, "%.3f", seconds);
  setenv(name, text, 1);
}

/* A kernel taking twice NAA_TIMEOUT: the first naa_wait times out, the invocation stays in
 * flight and a later naa_wait returns its result. */
static void test_wait_again_after_timeout(void **state) {
  (void)state;
  const char *args[] = {"--kernel", plugin_or_skip(), NULL};
  test_server s;
  assert_int_equal(test_server_start(&s, args), 0);
  test_server_use(&s, FN_NAP_FILL, 1);
  const double timeout = 0.4 * test_time_scale();
  set_seconds("NAA_TIMEOUT", timeout);
  static uint8_t in[8], out[4096];
  naa_param_t pi = {in, sizeof in, false}, po = {out, sizeof out, false};
  naa_handle h;
  assert_int_equal(naa_create(FN_NAP_FILL, &pi, 1, &po, 1, &h), NAA_SUCCESS);
  nap_request(in, (uint32_t)(2000 * timeout), 0x5c);
  memset(out, 0, sizeof out);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_TIMEOUT);
  /* The cause says what timed out (the NAA's reply, or our own writes), not only the code. */
  char cause[512];
  assert_int_equal(naa_last_error(&h, cause, sizeof cause), NAA_ERR_TIMEOUT);
  if (strstr(cause, "naa_wait: ") != cause || strstr(cause, "within NAA_TIMEOUT (") == NULL)
    fail_msg("naa_wait's timeout explained as \"%s\"", cause);
  int waits = 1, rc = NAA_ERR_TIMEOUT;
  while (rc == NAA_ERR_TIMEOUT && waits < 4) {
    rc = naa_wait(&h, NULL);
    waits++;
  }
  printf("kernel of %.0f ms, NAA_TIMEOUT %.0f ms: %s after %d naa_wait calls\n", 2000 * timeout,
         1000 * timeout, naa_strerror(rc), waits);
  assert_int_equal(rc, NAA_SUCCESS);
  assert_true(all_bytes(out, sizeof out, 0x5c));
  /* naa_test sees a timed-out invocation through as well. */
  nap_request(in, (uint32_t)(2000 * timeout), 0x6d);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_TIMEOUT);
  bool done = false;
  for (int i = 0; i < 1000 * 60 && !done; i++) {
    assert_int_equal(naa_test(&h, &done, NULL), NAA_SUCCESS);
    if (!done) sleep_ms(1);
  }
  assert_true(done);
  assert_true(all_bytes(out, sizeof out, 0x6d));
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
  test_timeout_default();
}

/* naa_cancel while the kernel runs: its late result must not reach the output, and the next
 * invocation on the handle (which connects again) is correct. The kernel (gate_fill) says when
 * it runs and waits for the test to let it write; the server's log line that the connection's
 * regions are given up, written once the connection has ended after the kernel's reply, says
 * when to look at the output. */
static void test_cancel_stops_late_writes(void **state) {
  (void)state;
  const char *args[] = {"--kernel", plugin_or_skip(), NULL};
  char dir[] = "/tmp/naa-gate-XXXXXX", started_path[64], gate_path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(started_path, sizeof started_path, "%s/started", dir);
  snprintf(gate_path, sizeof gate_path, "%s/gate", dir);
  assert_int_equal(mkfifo(started_path, 0600), 0);
  assert_int_equal(mkfifo(gate_path, 0600), 0);
  const int started = open(started_path, O_RDONLY | O_NONBLOCK);
  const int gate = open(gate_path, O_RDWR); /* the kernel's open finds a writer at once */
  assert_true(started >= 0 && gate >= 0);
  setenv("NAA_TEST_KERNEL_STARTED", started_path, 1);
  setenv("NAA_TEST_KERNEL_GATE", gate_path, 1);
  test_server s;
  assert_int_equal(test_server_start_logged(&s, args), 0);
  unsetenv("NAA_TEST_KERNEL_STARTED");
  unsetenv("NAA_TEST_KERNEL_GATE");
  test_server_use(&s, FN_GATE_FILL, 1);
  static uint8_t in[8], out[65536];
  naa_param_t pi = {in, sizeof in, false}, po = {out, sizeof out, false};
  naa_handle h;
  assert_int_equal(naa_create(FN_GATE_FILL, &pi, 1, &po, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_cancel(&h), NAA_SUCCESS); /* nothing in flight: nothing to do */
  nap_request(in, 0, 0x11);
  memset(out, 0xaa, sizeof out); /* the sentinel */
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  bool done = true;
  assert_int_equal(naa_test(&h, &done, NULL), NAA_SUCCESS);
  assert_false(done);
  struct pollfd kernel = {started, POLLIN, 0};
  assert_int_equal(poll(&kernel, 1, (int)(20000 * test_time_scale())), 1); /* the request is in */
  assert_int_equal(naa_cancel(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_STATE); /* nothing in flight any more */
  /* The kernel writes its result and the server replies (or has dropped the client already):
   * either way the connection ends, and its regions are given up. */
  assert_int_equal(write(gate, "g", 1), 1);
  const long limit_ms = (long)(20000 * test_time_scale());
  int ended = 0;
  for (long waited = 0; !ended && all_bytes(out, sizeof out, 0xaa) && waited < limit_ms;
       waited += 10) {
    ended = test_server_log_wait(&s, "given up: ", 1, 0, NULL, 0) >= 1;
    if (!ended) sleep_ms(10);
  }
  assert_true(all_bytes(out, sizeof out, 0xaa));
  if (!ended) fail_msg("the cancelled connection did not end within %ld ms", limit_ms);
  for (uint8_t fill = 0x21; fill < 0x24; fill++) {
    nap_request(in, 0, fill);
    assert_int_equal(write(gate, "g", 1), 1);
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
    assert_true(all_bytes(out, sizeof out, fill));
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
  close(started);
  close(gate);
  unlink(started_path);
  unlink(gate_path);
  rmdir(dir);
}

/* One checked vecadd: 0 when right, the error otherwise; a wrong result fails the test. b is
 * single-send, so after a reconnect it must have been sent again. */
enum { N = 1024 };
static double a[N], b[N], c[N];

static int checked_vecadd(naa_handle *h, int round) {
  for (int i = 0; i < N; i++) a[i] = round + i, c[i] = -1;
  int rc = naa_invoke(h);
  if (rc == NAA_SUCCESS) rc = naa_wait(h, NULL);
  if (rc == NAA_SUCCESS)
    for (int i = 0; i < N; i++) assert_true(c[i] == round + i + 0.5 * i);
  return rc;
}

static naa_handle vecadd_handle(void) {
  for (int i = 0; i < N; i++) b[i] = 0.5 * i;
  naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, true}};
  naa_param_t out[1] = {{c, sizeof c, false}};
  naa_handle h;
  assert_int_equal(naa_create(FN_VECADD, in, 2, out, 1, &h), NAA_SUCCESS);
  return h;
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

/* A naa-server started on `port` after `delay_ms` by a thread of its own, which also stops it
 * when told (`stop`): a child's PR_SET_PDEATHSIG follows the thread that forked it, so the
 * thread that starts the server must outlive it. */
typedef struct {
  int port;
  long delay_ms;
  int stop[2]; /* a pipe: written by the test when the server may go */
  int started;
} late_server;

static void *late_server_run(void *arg) {
  late_server *l = arg;
  sleep_ms(l->delay_ms);
  char port[16];
  snprintf(port, sizeof port, "%d", l->port);
  const char *args[] = {"--port", port, NULL};
  test_server s;
  l->started = test_server_start(&s, args) == 0;
  char c;
  while (read(l->stop[0], &c, 1) < 0) {
  }
  if (l->started) test_server_stop(&s);
  return NULL;
}

/* naa-server SIGKILLed while the handle is idle and started again on the same port a second
 * later: the next naa_invoke finds the connection gone before it sends anything, reconnects
 * until the NAA is back (well within NAA_CONNECT_TIMEOUT) and succeeds; the application sees
 * no error at all. */
static void test_restart_while_idle(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  test_server_use(&s, FN_VECADD, 2);
  naa_handle h = vecadd_handle();
  assert_int_equal(checked_vecadd(&h, 0), NAA_SUCCESS);
  late_server l = {s.port, (long)(1000 * test_time_scale()), {-1, -1}, 0};
  assert_int_equal(pipe(l.stop), 0);
  test_server_kill(&s); /* waits for the process: its connections are closed */
  sleep_ms(10);         /* idle: naa_invoke looks at the connection after 1 ms */
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, late_server_run, &l), 0);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const int rc = checked_vecadd(&h, 1);
  const double took = seconds_since(&t0);
  char why[512] = "";
  naa_last_error(&h, why, sizeof why);
  printf(
      "naa-server killed while idle, back after %ld ms: the next invocation %s after %.0f ms%s%s\n",
      l.delay_ms, naa_strerror(rc), 1000 * took, rc == NAA_SUCCESS ? "" : ": ",
      rc == NAA_SUCCESS ? "" : why);
  assert_int_equal(rc, NAA_SUCCESS);
  assert_true(took >= l.delay_ms / 1000.0 * 0.9);
  for (int round = 2; round < 5; round++) assert_int_equal(checked_vecadd(&h, round), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(write(l.stop[1], "x", 1), 1);
  pthread_join(t, NULL);
  assert_true(l.started);
  close(l.stop[0]);
  close(l.stop[1]);
}

/* Round `round` of a handle whose NAA is gone for good: it fails with an unreachable code, its
 * cause naming NAA_CONNECT_TIMEOUT, after trying for at least 0.9 of the deadline. The code is
 * its last attempt's: an attempt the deadline cut short (an address still resolving on a loaded
 * node) is a timeout, one refused a connection error, so two rounds' codes need not be the
 * same. Returns how long it took, in seconds. */
static double fails_for_the_deadline(naa_handle *h, int round, double deadline, const char *label) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const int rc = checked_vecadd(h, round);
  const double took = seconds_since(&t0);
  char why[512] = "";
  assert_int_equal(naa_last_error(h, why, sizeof why), rc);
  printf("%s: %s after %.0f ms: %s\n", label, naa_strerror(rc), 1000 * took, why);
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT || rc == NAA_ERR_TIMEOUT);
  assert_true(took >= 0.9 * deadline);
  assert_non_null(strstr(why, "NAA_CONNECT_TIMEOUT"));
  return took;
}

/* The NAA never comes back: the invocation after the kill fails with the cause once
 * NAA_CONNECT_TIMEOUT has run out (not after a count of attempts), and the next one tries
 * again for the whole deadline. */
static void test_restart_never(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  test_server_use(&s, FN_VECADD, 2);
  const double deadline = 1.5 * test_time_scale();
  set_seconds("NAA_CONNECT_TIMEOUT", deadline);
  naa_handle h = vecadd_handle();
  unsetenv("NAA_CONNECT_TIMEOUT");
  assert_int_equal(checked_vecadd(&h, 0), NAA_SUCCESS);
  test_server_kill(&s); /* waits for the process: its connections are closed */
  sleep_ms(10);         /* idle: naa_invoke looks at the connection after 1 ms (else the
                           invocation may go out first and be lost in flight, at naa_wait) */
  char label[96];
  snprintf(label, sizeof label, "naa-server killed for good, NAA_CONNECT_TIMEOUT %.1f s", deadline);
  const double took = fails_for_the_deadline(&h, 1, deadline, label);
  assert_true(took <= deadline + 2 * test_time_scale());
  fails_for_the_deadline(&h, 2, deadline, "and again"); /* still down: tried again */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* A single-send input changed after its first send, then the connection is made anew (the
 * NAA restarted, or the handle failed over to another): the NAA lacks the input and the host
 * buffer no longer holds what was sent, so the invocation fails with the cause instead of
 * computing from the new contents; restored and naa_cancel'ed, the handle works again. */
static void single_send_changed(int failover) {
  test_server s, other;
  assert_int_equal(test_server_start(&s, NULL), 0);
  if (failover) {
    assert_int_equal(test_server_start(&other, NULL), 0);
    char spec[256];
    snprintf(spec, sizeof spec, "%s:%d:%d:2,%s:%d:%d:2", test_host(), s.port, FN_VECADD,
             test_host(), other.port, FN_VECADD);
    setenv("NAA_SPEC", spec, 1);
  } else {
    test_server_use(&s, FN_VECADD, 2);
  }
  naa_handle h = vecadd_handle();
  assert_int_equal(checked_vecadd(&h, 0), NAA_SUCCESS);
  for (int i = 0; i < N; i++) b[i] = -1; /* the NAA keeps 0.5 * i */
  assert_int_equal(checked_vecadd(&h, 1), NAA_SUCCESS);
  char port[16];
  snprintf(port, sizeof port, "%d", s.port);
  test_server_kill(&s);
  if (!failover) {
    const char *args[] = {"--port", port, NULL};
    assert_int_equal(test_server_start(&s, args), 0);
  }
  sleep_ms(10); /* idle: naa_invoke finds the connection gone before sending */
  const int rc = checked_vecadd(&h, 2);
  char why[512] = "";
  naa_last_error(&h, why, sizeof why);
  printf("single-send input changed, then %s: %s: %s\n", failover ? "failover" : "restart",
         naa_strerror(rc), why);
  assert_int_equal(rc, NAA_ERR_STATE);
  assert_non_null(strstr(why, "single-send input (region 1) changed"));
  assert_int_equal(checked_vecadd(&h, 3), NAA_ERR_STATE); /* sticky */
  for (int i = 0; i < N; i++) b[i] = 0.5 * i;
  assert_int_equal(naa_cancel(&h), NAA_SUCCESS);
  assert_int_equal(checked_vecadd(&h, 4), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(failover ? &other : &s), 0);
}

static void test_single_send_after_restart(void **state) {
  (void)state;
  single_send_changed(0);
}

static void test_single_send_after_failover(void **state) {
  (void)state;
  single_send_changed(1);
}

/* naa-server SIGKILLed and restarted on the same port under a handle that keeps invoking: at
 * most a few invocations fail (one in flight at the kill is lost), none is wrong, and the
 * handle carries on without a new naa_create. */
static void test_reconnect_after_restart(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  test_server_use(&s, FN_VECADD, 2);
  naa_handle h = vecadd_handle();
  enum { ROUNDS = 120, KILL_AT = 30 };
  int failed = 0, ok_after = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (round == KILL_AT) {
      char port[16];
      snprintf(port, sizeof port, "%d", s.port);
      test_server_kill(&s);
      const char *args[] = {"--port", port, NULL};
      assert_int_equal(test_server_start(&s, args), 0);
    }
    int rc = checked_vecadd(&h, round);
    if (rc != NAA_SUCCESS) {
      failed++;
      assert_true(round >= KILL_AT);
      assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT || rc == NAA_ERR_TIMEOUT);
    } else if (round >= KILL_AT) {
      ok_after++;
    }
    sleep_ms(5);
  }
  printf("naa-server killed and restarted: %d of %d invocations failed, %d succeeded after\n",
         failed, ROUNDS, ok_after);
  assert_true(failed <= 3);
  assert_true(ok_after >= ROUNDS - KILL_AT - 3);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

/* Two NAAs serve the function code, however the handle learnt of them (`how`); the one it uses
 * (`first`, which is where a process without a rank starts) dies for good: the handle moves on
 * to `second`. */
static void fail_over_from(test_server *first, test_server *second, const char *how) {
  naa_handle h = vecadd_handle();
  for (int round = 0; round < 5; round++) assert_int_equal(checked_vecadd(&h, round), NAA_SUCCESS);
  test_server_kill(first);
  struct timespec killed;
  clock_gettime(CLOCK_MONOTONIC, &killed);
  sleep_ms(10); /* idle: naa_invoke looks at the connection after 1 ms */
  int failed = 0;
  double moved = -1;
  for (int round = 5; round < 40; round++) {
    if (checked_vecadd(&h, round) != NAA_SUCCESS)
      failed++;
    else if (moved < 0)
      moved = seconds_since(&killed);
  }
  printf(
      "first of two NAAs (%s) killed: %d of 35 invocations failed, the first success on the "
      "second %.0f ms after the kill\n",
      how, failed, 1000 * moved);
  /* The invocation after the pause finds the NAA gone before sending anything and fails over
   * at once: nothing is lost. */
  assert_true(failed == 0);
  assert_int_equal(checked_vecadd(&h, 40), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(second), 0);
}

static void test_failover(void **state) {
  (void)state;
  test_server first, second;
  assert_int_equal(test_server_start(&first, NULL), 0);
  assert_int_equal(test_server_start(&second, NULL), 0);
  char spec[256];
  snprintf(spec, sizeof spec, "%s:%d:%d:2,%s:%d:%d:2", test_host(), first.port, FN_VECADD,
           test_host(), second.port, FN_VECADD);
  setenv("NAA_SPEC", spec, 1);
  fail_over_from(&first, &second, "two NAA_SPEC entries");
}

/* A task of a Slurm job that asked for the code with --naa (the naa_spank plugin sets
 * SLURM_SPANK_NAA_CODES) and whose naa.conf (NAA_CONF) lists both NAAs; with `spec`, NAA_SPEC
 * names the first alone, as the plugin sets it in the tasks of srun; without, it is unset, as
 * for the ranks mpirun starts. Nothing asks slurmctld: --naa is in the environment. */
static void fail_over_in_slurm_job(int spec) {
  test_server first, second;
  assert_int_equal(test_server_start(&first, NULL), 0);
  assert_int_equal(test_server_start(&second, NULL), 0);
  char conf[] = "/tmp/naa-recovery-conf-XXXXXX";
  const int fd = mkstemp(conf);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f, "%s %d %d:2\n%s %d %d:2\n", test_host(), first.port, FN_VECADD, test_host(),
          second.port, FN_VECADD);
  assert_int_equal(fclose(f), 0);
  setenv("NAA_CONF", conf, 1);
  setenv("SLURM_JOB_ID", "25", 1);
  setenv("SLURM_SPANK_NAA_CODES", "10", 1);
  if (spec)
    test_server_use(&first, FN_VECADD, 2);
  else
    unsetenv("NAA_SPEC");
  fail_over_from(
      &first, &second,
      spec ? "NAA_SPEC of the naa_spank plugin, then naa.conf" : "naa.conf in a Slurm job");
  unlink(conf);
  unsetenv("NAA_CONF");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_SPANK_NAA_CODES");
}

static void test_failover_naa_conf(void **state) {
  (void)state;
  fail_over_in_slurm_job(0);
}

static void test_failover_plugin_spec(void **state) {
  (void)state;
  fail_over_in_slurm_job(1);
}

/* naa_create fails over too: the first NAA_SPEC entry for the code has nobody listening, the
 * handle is created on the second. */
static void test_failover_at_create(void **state) {
  (void)state;
  test_server second;
  assert_int_equal(test_server_start(&second, NULL), 0);
  char spec[256];
  snprintf(spec, sizeof spec, "%s:%d:%d:2,%s:%d:%d:2", test_host(), test_port(), FN_VECADD,
           test_host(), second.port, FN_VECADD);
  setenv("NAA_SPEC", spec, 1);
  naa_handle h = vecadd_handle();
  for (int round = 0; round < 3; round++) assert_int_equal(checked_vecadd(&h, round), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&second), 0);
}

/* With NAA_RECONNECT=0 a lost connection fails the handle for good, as before. */
static void test_reconnect_off(void **state) {
  (void)state;
  test_server s;
  assert_int_equal(test_server_start(&s, NULL), 0);
  test_server_use(&s, FN_VECADD, 2);
  setenv("NAA_RECONNECT", "0", 1);
  naa_handle h = vecadd_handle();
  unsetenv("NAA_RECONNECT");
  assert_int_equal(checked_vecadd(&h, 0), NAA_SUCCESS);
  char port[16];
  snprintf(port, sizeof port, "%d", s.port);
  test_server_kill(&s);
  const char *args[] = {"--port", port, NULL};
  assert_int_equal(test_server_start(&s, args), 0);
  int rc = checked_vecadd(&h, 1);
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT);
  assert_int_equal(checked_vecadd(&h, 2), rc); /* sticky */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

int main(void) {
  test_timeout_default();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wait_again_after_timeout),
      cmocka_unit_test(test_cancel_stops_late_writes),
      cmocka_unit_test(test_reconnect_after_restart),
      cmocka_unit_test(test_restart_while_idle),
      cmocka_unit_test(test_restart_never),
      cmocka_unit_test(test_single_send_after_restart),
      cmocka_unit_test(test_single_send_after_failover),
      cmocka_unit_test(test_failover),
      cmocka_unit_test(test_failover_naa_conf),
      cmocka_unit_test(test_failover_plugin_spec),
      cmocka_unit_test(test_failover_at_create),
      cmocka_unit_test(test_reconnect_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
