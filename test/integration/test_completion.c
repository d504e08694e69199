/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_create_attr and naa_waitall/waitany/testany/testall against two real naa-servers.
 * The process under test never calls setenv: the parent starts the servers and re-executes
 * itself with NAA_SPEC naming the second one in the new environment; the child gives half of
 * its handles the first server through naa_attr_t.naa and the other half NAA_SPEC's. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "server.h"

extern char **environ;

enum { FN_ADD1 = 1, FN_PLUGIN_SPIN = 102, N = 8, SIZE = 4096 };
/* Every deadline in this file, the handles' own timeouts included, is stretched by
 * NAA_TEST_TIME_SCALE: a loaded machine or a sanitizer build is that much slower, and a
 * deadline left fixed while the kernel timeout below grows would end the wait first. */
static int64_t scaled_ms(int64_t ms) {
  return (int64_t)((double)ms * test_time_scale() + 0.5);
}
static double scaled_s(double s) {
  return s * test_time_scale();
}

/* The first server answers a spinning kernel 0x02 after this many seconds (2, stretched as
 * every deadline here). */
static int kernel_timeout_s(void) {
  return (int)((scaled_ms(2000) + 500) / 1000);
}

static char attr_naa[96]; /* "host:port" of the first server */
static pid_t first_pid;   /* to kill it at the end (the parent reaps it) */
static uint8_t buf[N][SIZE];
static naa_param_t param[N];
static naa_handle h[N];

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Even handles: attr.naa (the first server), odd: NAA_SPEC (the second). Progress modes
 * differ too, thread included, so that waitany takes handles from the engine. */
static int create_all(void **state) {
  (void)state;
  static const char *const modes[] = {"block", "thread", "spin-then-block", "thread"};
  for (int i = 0; i < N; i++) {
    memset(buf[i], i, SIZE);
    param[i] = (naa_param_t){buf[i], SIZE, false};
    naa_attr_t attr = NAA_ATTR_INIT;
    attr.progress = modes[(i / 2) % 4];
    attr.timeout_ms = scaled_ms(10000);
    attr.pacing_us = 0;
    if (i % 2 == 0) {
      attr.naa = attr_naa;
      /* test_error_in_status kills this server: each reconnect to it retries until this
       * deadline, which NAA_CONNECT_TIMEOUT's 30 s would make two minutes of waiting. */
      attr.connect_timeout_ms = scaled_ms(1000);
    }
    if (naa_create_attr(FN_ADD1, &param[i], 1, &param[i], 1, &attr, &h[i]) != NAA_SUCCESS)
      return -1;
  }
  return 0;
}

static int finalize_all(void **state) {
  (void)state;
  for (int i = 0; i < N; i++) naa_finalize(&h[i]);
  return 0;
}

static void invoke_all(void) {
  for (int i = 0; i < N; i++) assert_int_equal(naa_invoke(&h[i]), NAA_SUCCESS);
}

/* Every byte of buffer i is i + rounds. */
static void assert_rounds(int rounds) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < SIZE; k++) assert_int_equal(buf[i][k], (uint8_t)(i + rounds));
}

static void test_attr_naa_skips_naa_spec(void **state) {
  (void)state;
  uint8_t a = 0, b = 0;
  naa_param_t in[2] = {{&a, 1, false}, {&b, 1, false}};
  naa_handle x = NAA_HANDLE_NULL;
  /* NAA_SPEC says function code 1 takes one input: naa_create refuses two... */
  assert_int_equal(naa_create(FN_ADD1, in, 2, in, 1, &x), NAA_ERR_INVALID_ARGUMENT);
  /* ...an explicit NAA is not held to it. */
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = attr_naa;
  assert_int_equal(naa_create_attr(FN_ADD1, in, 2, in, 1, &attr, &x), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&x), NAA_SUCCESS);
  assert_int_equal(naa_wait(&x, NULL), NAA_SUCCESS);
  assert_int_equal(a, 1);
  assert_int_equal(b, 0); /* an input only: the NAA's copy changed, ours did not */
  assert_int_equal(naa_finalize(&x), NAA_SUCCESS);
  /* attr == NULL is naa_create. */
  assert_int_equal(naa_create_attr(FN_ADD1, in, 1, in, 1, NULL, &x), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&x), NAA_SUCCESS);
}

static void test_attr_errors(void **state) {
  (void)state;
  uint8_t a = 0;
  naa_param_t p = {&a, 1, false};
  naa_handle x = NAA_HANDLE_NULL;
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.size = 0; /* not initialised with NAA_ATTR_INIT */
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  static const naa_attr_t init = NAA_ATTR_INIT;
  attr = init;
  attr.timeout_ms = 0;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  attr = init;
  attr.pacing_us = 10000001;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  attr = init;
  attr.progress = "fast";
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  attr = init;
  attr.naa = "no-port";
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  attr = init;
  attr.transport = "carrier-pigeon";
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
  char cause[256];
  naa_last_error(NULL, cause, sizeof cause);
  assert_non_null(strstr(cause, "naa_attr_t.transport 'carrier-pigeon' is not a transport"));
  /* A nobody-listens NAA: the attr's NAA is the one tried, not NAA_SPEC's. */
  char nobody[96];
  snprintf(nobody, sizeof nobody, "%s:%d", test_host(), test_port());
  attr = init;
  attr.naa = nobody;
  attr.timeout_ms = scaled_ms(2000);
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_CONNECTION);
  assert_int_equal(x.id, 0);
  /* A program built against a first, shorter naa_attr_t: what lies beyond its size (here a
   * timeout of 0, which would be refused) is not read. */
  attr = init;
  attr.size = offsetof(naa_attr_t, timeout_ms);
  attr.timeout_ms = 0;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&x), NAA_SUCCESS);
}

/* attr.params sets any runtime parameter for one handle; a name that is no parameter, a
 * malformed value or an entry without '=' is refused, naming it, before anything connects. */
static void test_attr_params(void **state) {
  (void)state;
  uint8_t v[4] = {1, 2, 3, 4};
  naa_param_t p = {v, sizeof v, false};
  naa_handle x = NAA_HANDLE_NULL;
  static const naa_attr_t init = NAA_ATTR_INIT;
  naa_attr_t attr = init;
  attr.naa = attr_naa;
  const char *bad_name[] = {"NAA_NO_SUCH_THING=1", NULL};
  const char *bad_value[] = {"NAA_TIMEOUT=soon", NULL};
  const char *no_equals[] = {"NAA_TIMEOUT", NULL};
  const char *const *bad[] = {bad_name, bad_value, no_equals};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    attr.params = bad[i];
    assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_ERR_INVALID_ARGUMENT);
    assert_int_equal(x.id, 0);
  }
  /* An entry a field overrides is not read, as its variable is not: the field wins. */
  const char *good[] = {"NAA_SPIN_US=20", "NAA_PROGRESS=fast", "NAA_OFI_WRITE_CHUNK=4096", NULL};
  attr.params = good;
  attr.progress = "spin";
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &x), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&x), NAA_SUCCESS);
  assert_int_equal(naa_wait(&x, NULL), NAA_SUCCESS);
  assert_int_equal(v[0], 2);
  assert_int_equal(v[3], 5);
  assert_int_equal(naa_finalize(&x), NAA_SUCCESS);
}

static void test_waitany(void **state) {
  (void)state;
  naa_handle list[N + 2];
  list[0] = NAA_HANDLE_NULL; /* ignored, as MPI ignores MPI_REQUEST_NULL */
  memcpy(&list[1], h, sizeof h);
  list[N + 1] = NAA_HANDLE_NULL;
  invoke_all();
  int seen[N + 2] = {0};
  for (int k = 0; k < N; k++) {
    int index = -1;
    naa_status st;
    st.error = 99;
    assert_int_equal(naa_waitany(N + 2, list, &index, &st), NAA_SUCCESS);
    assert_in_range(index, 1, N);
    assert_int_equal(seen[index]++, 0);
    assert_int_equal(st.error, NAA_SUCCESS);
    assert_int_equal(st.function_code, FN_ADD1);
  }
  /* Nothing in flight any more: no active handle. */
  int index = 0;
  assert_int_equal(naa_waitany(N + 2, list, &index, NULL), NAA_SUCCESS);
  assert_int_equal(index, NAA_UNDEFINED);
  assert_rounds(1);
}

static void test_waitall(void **state) {
  (void)state;
  naa_status st[N];
  invoke_all();
  assert_int_equal(naa_waitall(N, h, st), NAA_SUCCESS);
  for (int i = 0; i < N; i++) {
    assert_int_equal(st[i].error, NAA_SUCCESS);
    assert_int_equal(st[i].function_code, FN_ADD1);
  }
  /* Every handle is inactive now: waitall returns at once. */
  assert_int_equal(naa_waitall(N, h, NULL), NAA_SUCCESS);
  assert_rounds(2);
}

static void test_testany_testall(void **state) {
  (void)state;
  struct timespec t0;
  bool flag = false;
  int index = 0;
  /* Nothing in flight: testany says so at once (flag true, index undefined). */
  assert_int_equal(naa_testany(N, h, &index, &flag, NULL), NAA_SUCCESS);
  assert_true(flag);
  assert_int_equal(index, NAA_UNDEFINED);

  invoke_all();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int done = 0;
  while (done < N) {
    assert_int_equal(naa_testany(N, h, &index, &flag, NULL), NAA_SUCCESS);
    if (flag) {
      assert_in_range(index, 0, N - 1);
      done++;
    }
    assert_true(seconds_since(&t0) < scaled_s(10));
  }
  assert_rounds(3);

  invoke_all();
  naa_status st[N];
  flag = false;
  unsigned tests = 0;
  while (!flag) {
    assert_int_equal(naa_testall(N, h, &flag, st), NAA_SUCCESS);
    tests++;
    assert_true(seconds_since(&t0) < scaled_s(20));
  }
  for (int i = 0; i < N; i++) assert_int_equal(st[i].error, NAA_SUCCESS);
  assert_rounds(4);
  print_message("testall: %u calls until all 8 were done\n", tests);
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Handles whose kernels spin on the first server (loaded with the test plugin), each with its
 * progress mode and timeout, all created before any is invoked. Skips the test without the
 * plugin. A short timeout also bounds connect + MRSP, which a loaded machine under TSan may
 * miss: such a create is tried again (up to 5 times), as these tests are about the waits. */
static void create_spinners(naa_handle *s, const char *const *modes, const int64_t *timeouts, int n,
                            uint8_t *bytes) {
  if (getenv("NAA_TEST_KERNEL_PLUGIN") == NULL) {
    fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set: test skipped\n");
    skip();
  }
  for (int i = 0; i < n; i++) {
    naa_param_t p = {&bytes[i], 1, false};
    naa_attr_t attr = NAA_ATTR_INIT;
    attr.naa = attr_naa;
    attr.progress = modes[i];
    attr.timeout_ms = timeouts[i];
    int rc, tries = 0;
    while ((rc = naa_create_attr(FN_PLUGIN_SPIN, &p, 1, &p, 1, &attr, &s[i])) == NAA_ERR_TIMEOUT &&
           ++tries < 5)
      print_message("naa_create_attr with %lld ms timed out; again\n", (long long)timeouts[i]);
    assert_int_equal(rc, NAA_SUCCESS);
  }
  for (int i = 0; i < n; i++) assert_int_equal(naa_invoke(&s[i]), NAA_SUCCESS);
}

/* Every handle can block: waitany sleeps in poll(2) until the first server answers the
 * spinning kernels 0x02, instead of polling for those seconds. The handles' timeouts are ten
 * kernel timeouts: the server's 0x02 answer, not the handle's own deadline, ends each wait. */
static void test_waitany_sleeps(void **state) {
  (void)state;
  static const char *const modes[] = {"block", "spin-then-block", "thread"};
  const int64_t timeouts[] = {scaled_ms(20000), scaled_ms(20000), scaled_ms(20000)};
  naa_handle s[3];
  uint8_t bytes[3] = {0};
  create_spinners(s, modes, timeouts, 3, bytes);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double cpu0 = cpu_seconds();
  for (int k = 0; k < 3; k++) {
    int index = -1;
    naa_status st;
    assert_int_equal(naa_waitany(3, s, &index, &st), NAA_ERR_NAA);
    assert_in_range(index, 0, 2);
    assert_int_equal(st.error, NAA_ERR_NAA);
    assert_int_equal(st.naa_return_code, NAA_RC_KERNEL_TIMEOUT);
  }
  double wall = seconds_since(&t0), cpu = cpu_seconds() - cpu0;
  print_message("waitany over 3 spinning kernels: %.2f s, %.3f s of CPU\n", wall, cpu);
  assert_true(wall > kernel_timeout_s() / 2.0);
  /* Polling takes what the scheduler gives it: a whole core when idle, and still well over 5 %
   * of the wait when one of the handles spins on a 2-core host loaded by the server's three
   * spinning kernels; sleeping takes next to nothing there. */
  assert_true(cpu < 0.05 * wall);
  for (int i = 0; i < 3; i++) assert_int_equal(naa_finalize(&s[i]), NAA_SUCCESS);
}

/* Each handle keeps its own deadline: the one with 500 ms ends first, with NAA_ERR_TIMEOUT,
 * while the other's kernel still spins. */
static void test_waitany_deadline(void **state) {
  (void)state;
  static const char *const modes[] = {"block", "block"};
  /* 500 ms: also what connect + MRSP of that handle may take, too short under TSan on a
   * loaded machine without the stretch. */
  const int64_t timeouts[] = {scaled_ms(20000), scaled_ms(500)};
  naa_handle s[2];
  uint8_t bytes[2] = {0};
  create_spinners(s, modes, timeouts, 2, bytes);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int index = -1;
  naa_status st;
  assert_int_equal(naa_waitany(2, s, &index, &st), NAA_ERR_TIMEOUT);
  double took = seconds_since(&t0);
  print_message("waitany: the %lld ms handle timed out after %.2f s\n", (long long)timeouts[1],
                took);
  /* Index 1 with a timeout is the proof that its own deadline ended the wait, not the other
   * handle's 0x02 answer; no upper bound on the time: the spinning kernels themselves take the
   * cores of a loaded 2-core machine, and a late wake-up there is not a defect. */
  assert_int_equal(index, 1);
  assert_int_equal(st.error, NAA_ERR_TIMEOUT);
  assert_true(took >= 0.9 * (double)timeouts[1] / 1000);
  /* The timed-out invocation is still in flight; cancelled, its handle is inactive. */
  bool flag = true;
  assert_int_equal(naa_testany(2, s, &index, &flag, &st), NAA_SUCCESS);
  assert_false(flag);
  assert_int_equal(naa_cancel(&s[1]), NAA_SUCCESS);
  assert_int_equal(naa_waitany(2, s, &index, &st), NAA_ERR_NAA);
  assert_int_equal(index, 0);
  for (int i = 0; i < 2; i++) assert_int_equal(naa_finalize(&s[i]), NAA_SUCCESS);
}

static void test_bad_arguments(void **state) {
  (void)state;
  int index;
  bool flag;
  naa_handle bogus[2] = {{0x1234}, NAA_HANDLE_NULL};
  assert_int_equal(naa_waitall(-1, h, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_waitall(1, NULL, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_waitall(0, NULL, NULL), NAA_SUCCESS);
  assert_int_equal(naa_waitany(2, bogus, &index, NULL), NAA_ERR_INVALID_HANDLE);
  assert_int_equal(naa_waitany(2, h, NULL, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_testany(2, h, &index, NULL, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_testall(2, bogus, &flag, NULL), NAA_ERR_INVALID_HANDLE);
}

/* The first server dies with every invocation in flight: its handles (attr.naa) fail and say
 * so in their statuses, the second server's (NAA_SPEC) complete. */
static void test_error_in_status(void **state) {
  (void)state;
  invoke_all();
  kill(first_pid, SIGKILL);
  naa_status st[N];
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = naa_waitall(N, h, st);
  /* Invocations the first server finished before it died complete, so only require what
   * cannot be otherwise: the second server's handles succeed. */
  for (int i = 1; i < N; i += 2) assert_int_equal(st[i].error, NAA_SUCCESS);
  int failed = 0;
  for (int i = 0; i < N; i += 2) failed += st[i].error != NAA_SUCCESS;
  print_message("waitall after the kill: %s, %d of 4 failed in %.2f s\n", naa_strerror(rc), failed,
                seconds_since(&t0));
  assert_int_equal(rc, failed > 0 ? NAA_ERR_IN_STATUS : NAA_SUCCESS);
  /* The next round reaches only the second server. */
  int invoked = 0;
  for (int i = 0; i < N; i++) invoked += naa_invoke(&h[i]) == NAA_SUCCESS;
  rc = naa_waitall(N, h, st);
  for (int i = 1; i < N; i += 2) assert_int_equal(st[i].error, NAA_SUCCESS);
  assert_true(rc == NAA_ERR_IN_STATUS || invoked == N / 2);
  for (int i = 0; i < N; i += 2)
    assert_true(st[i].error != NAA_SUCCESS || naa_wait(&h[i], NULL) != NAA_SUCCESS);
}

static int run_child(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attr_naa_skips_naa_spec),
      cmocka_unit_test(test_attr_errors),
      cmocka_unit_test(test_attr_params),
      cmocka_unit_test(test_waitany),
      cmocka_unit_test(test_waitall),
      cmocka_unit_test(test_testany_testall),
      cmocka_unit_test(test_waitany_sleeps),
      cmocka_unit_test(test_waitany_deadline),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_error_in_status),
  };
  return cmocka_run_group_tests(tests, create_all, finalize_all);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--child") == 0) {
    first_pid = (pid_t)atoi(argv[2]);
    snprintf(attr_naa, sizeof attr_naa, "%s:%s", test_host(), argv[3]);
    return run_child();
  }
  test_server one, two;
  char timeout[16];
  snprintf(timeout, sizeof timeout, "%d", kernel_timeout_s());
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  const char *spinning[] = {"--kernel", plugin, "--kernel-timeout", timeout, NULL};
  if (test_server_start(&one, plugin != NULL ? spinning : NULL) != 0) return 99;
  if (test_server_start(&two, NULL) != 0) {
    test_server_stop(&one);
    return 99;
  }
  /* The child's environment: ours with NAA_SPEC naming the second server. */
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char **env = calloc(n + 2, sizeof *env);
  char spec[128], pid[16], port[16];
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "NAA_SPEC=", 9) != 0) env[k++] = environ[i];
  snprintf(spec, sizeof spec, "NAA_SPEC=%s:%d:%d:1", test_host(), two.port, FN_ADD1);
  env[k++] = spec;
  snprintf(pid, sizeof pid, "%d", (int)one.pid);
  snprintf(port, sizeof port, "%d", one.port);
  pid_t child = fork();
  if (child == 0) {
    char *const args[] = {argv[0], "--child", pid, port, NULL};
    execve("/proc/self/exe", args, env);
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  test_server_stop(&one); /* reaps it: the child killed it, its status says nothing */
  int rc2 = test_server_stop(&two);
  free(env);
  if (!WIFEXITED(status)) return 1;
  return WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : rc2 == 0 ? 0 : 1;
}
