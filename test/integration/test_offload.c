/* SPDX-License-Identifier: BSD-3-Clause */
/* Integration tests: the public API against a real naa-server on loopback (ofi+tcp). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "naa.h"
#include "roundtrip.h"
#include "server.h"

enum {
  FN_ADD1 = 1,
  FN_VECADD = 10,
  FN_DAXPY = 11,
  FN_DGEMM = 12,
  FN_PLUGIN_XOR = 100,
  FN_PLUGIN_SPIN = 102
};

static test_server server; /* shared by the tests that need a healthy NAA */

static int start_shared(void **state) {
  (void)state;
  return test_server_start_shared(&server);
}

static int stop_shared(void **state) {
  (void)state;
  return test_server_stop(&server) == 0 ? 0 : -1; /* a clean SIGTERM shutdown is part of the test */
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void roundtrip_inplace_wait(size_t size, int rounds) {
  roundtrip_inplace(&server, size, rounds, 7, roundtrip_wait);
}

static void test_sizes(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 7, 4096, 65537, 1 << 20, 16 << 20, 64 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) roundtrip_inplace_wait(sizes[i], 2);
}

static void test_many_invocations(void **state) {
  (void)state;
  roundtrip_inplace_wait(256, 1000); /* 1000 = 3*256 + 232: also checks the byte wrap-around */
}

/* vecadd with b single-send: the NAA keeps b, so host changes to b after round 1 are invisible. */
static void test_single_send(void **state) {
  (void)state;
  enum { N = 4096 };
  static double a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = i, b[i] = 1000.0 * i;
  naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, true}};
  naa_param_t out[1] = {{c, sizeof c, false}};
  naa_handle h;
  test_server_use(&server, FN_VECADD, 2);
  assert_int_equal(naa_create(FN_VECADD, in, 2, out, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  for (int i = 0; i < N; i++) assert_true(c[i] == 1001.0 * i);
  for (int i = 0; i < N; i++) a[i] = -i, b[i] = 5.0; /* b is not sent again */
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  for (int i = 0; i < N; i++) assert_true(c[i] == 999.0 * i);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* With every input single-send, later invocations carry no data at all: a zero-length
 * write-with-immediate must still run the kernel on the data the NAA kept. */
static void test_all_inputs_single_send(void **state) {
  (void)state;
  enum { N = 512 };
  static double a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = i, b[i] = 2.0 * i;
  naa_param_t in[2] = {{a, sizeof a, true}, {b, sizeof b, true}};
  naa_param_t out[1] = {{c, sizeof c, false}};
  naa_handle h;
  test_server_use(&server, FN_VECADD, 2);
  assert_int_equal(naa_create(FN_VECADD, in, 2, out, 1, &h), NAA_SUCCESS);
  for (int round = 0; round < 3; round++) {
    memset(c, 0, sizeof c);
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
    for (int i = 0; i < N; i++) assert_true(c[i] == 3.0 * i);
    for (int i = 0; i < N; i++) a[i] = b[i] = -1; /* never sent after round 0 */
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

static void test_daxpy_and_dgemm(void **state) {
  (void)state;
  double alpha = 2.5, x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  naa_param_t in[3] = {{&alpha, sizeof alpha, true}, {x, sizeof x, false}, {y, sizeof y, false}};
  naa_param_t out[1] = {{y, sizeof y, false}}; /* y in place */
  naa_handle h;
  test_server_use(&server, FN_DAXPY, 3);
  assert_int_equal(naa_create(FN_DAXPY, in, 3, out, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_true(y[0] == 12.5 && y[1] == 25.0 && y[2] == 37.5);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);

  uint64_t dims[3] = {2, 2, 3}; /* m, n, k */
  double A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12}, C[4] = {0};
  naa_param_t gin[3] = {{dims, sizeof dims, true}, {A, sizeof A, false}, {B, sizeof B, false}};
  naa_param_t gout[1] = {{C, sizeof C, false}};
  test_server_use(&server, FN_DGEMM, 3);
  assert_int_equal(naa_create(FN_DGEMM, gin, 3, gout, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_true(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* Eight handles in flight at once, completed in reverse order, half by naa_test polling. */
static void test_several_handles(void **state) {
  (void)state;
  enum { H = 8, SIZE = 100000 };
  static uint8_t bufs[H][SIZE];
  naa_handle h[H];
  naa_param_t p[H];
  test_server_use(&server, FN_ADD1, 1);
  for (int i = 0; i < H; i++) {
    memset(bufs[i], i, SIZE);
    p[i] = (naa_param_t){bufs[i], SIZE, false};
    assert_int_equal(naa_create(FN_ADD1, &p[i], 1, &p[i], 1, &h[i]), NAA_SUCCESS);
  }
  for (int i = 0; i < H; i++) assert_int_equal(naa_invoke(&h[i]), NAA_SUCCESS);
  for (int i = H - 1; i >= 0; i--) {
    if (i % 2) {
      assert_int_equal(naa_wait(&h[i], NULL), NAA_SUCCESS);
    } else {
      bool done = false;
      while (!done) assert_int_equal(naa_test(&h[i], &done, NULL), NAA_SUCCESS);
    }
  }
  for (int i = 0; i < H; i++) {
    for (int j = 0; j < SIZE; j++) assert_int_equal(bufs[i][j], i + 1);
    assert_int_equal(naa_finalize(&h[i]), NAA_SUCCESS);
  }
}

struct worker {
  naa_handle h;
  uint8_t buf[4096];
  int failures;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  for (int r = 0; r < 200; r++)
    if (naa_invoke(&w->h) != NAA_SUCCESS || naa_wait(&w->h, NULL) != NAA_SUCCESS) w->failures++;
  return NULL;
}

/* One thread per handle, as MPI_THREAD_MULTIPLE codes do. */
static void test_threads(void **state) {
  (void)state;
  enum { T = 4 };
  static struct worker w[T];
  pthread_t tid[T];
  test_server_use(&server, FN_ADD1, 1);
  for (int i = 0; i < T; i++) {
    memset(w[i].buf, 10 * i, sizeof w[i].buf);
    w[i].failures = 0;
    naa_param_t p = {w[i].buf, sizeof w[i].buf, false};
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &w[i].h), NAA_SUCCESS);
  }
  for (int i = 0; i < T; i++)
    assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
  for (int i = 0; i < T; i++) pthread_join(tid[i], NULL);
  for (int i = 0; i < T; i++) {
    assert_int_equal(w[i].failures, 0);
    for (size_t j = 0; j < sizeof w[i].buf; j++)
      assert_int_equal(w[i].buf[j], (uint8_t)(10 * i + 200));
    assert_int_equal(naa_finalize(&w[i].h), NAA_SUCCESS);
  }
}

/* An NAA_SPEC entry for the code whose input count differs is passed over when another fits. */
static void test_spec_skips_mismatched_entry(void **state) {
  (void)state;
  char spec[128];
  snprintf(spec, sizeof spec, "%s:%d:1:2,%s:%d:1:1", test_host(), server.port, test_host(),
           server.port);
  setenv("NAA_SPEC", spec, 1);
  uint8_t buf[8] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  snprintf(spec, sizeof spec, "%s:%d:1:2", test_host(), server.port);
  setenv("NAA_SPEC", spec, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_INVALID_ARGUMENT);
}

/* The reference NAA stays silent on an unknown code and the host hangs; ours answers 0x7f. */
static void test_unknown_function_code(void **state) {
  (void)state;
  uint8_t buf[64] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  test_server_use(&server, 99, 1);
  assert_int_equal(naa_create(99, &p, 1, &p, 1, &h), NAA_SUCCESS);
  for (int round = 0; round < 2; round++) { /* the handle stays usable */
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_ERR_NAA);
    assert_int_equal(st.naa_return_code, 0x7f);
    assert_int_equal(st.immediate, 0x7f00);
    assert_int_equal(st.function_code, 99);
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

static void test_state_errors(void **state) {
  (void)state;
  uint8_t buf[16] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  bool done = true;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_ERR_STATE); /* wait without invoke */
  assert_int_equal(naa_test(&h, &done, NULL), NAA_ERR_STATE);
  assert_false(done);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_ERR_STATE); /* invoke while running */
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  naa_handle copy = h;
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(h.id, NAA_HANDLE_NULL.id);
  assert_int_equal(naa_finalize(&h), NAA_ERR_INVALID_HANDLE);  /* double finalize */
  assert_int_equal(naa_invoke(&copy), NAA_ERR_INVALID_HANDLE); /* stale copy */
  assert_int_equal(naa_finalize(&copy), NAA_ERR_INVALID_HANDLE);
  /* A new handle may reuse the slot; the stale copy must still be refused. */
  naa_handle h2;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h2), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&copy), NAA_ERR_INVALID_HANDLE);
  assert_int_equal(naa_finalize(&h2), NAA_SUCCESS);
}

/* A finalize with an invocation in flight discards it and releases everything. */
static void test_finalize_while_running(void **state) {
  (void)state;
  static uint8_t buf[1 << 20];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  roundtrip_inplace_wait(4096, 1); /* and the server still serves others */
}

static void test_server_not_running(void **state) {
  (void)state;
  int port = test_port();
  assert_true(port > 0);
  char spec[128];
  snprintf(spec, sizeof spec, "%s:%d:1:1", test_host(), port);
  setenv("NAA_SPEC", spec, 1);
  uint8_t buf[8];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h = {42};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_CONNECTION);
  assert_true(seconds_since(&t0) < 30); /* refused, not waited out */
  assert_int_equal(h.id, 0);
}

/* The transport and address the suite was started with, put back after tests that change them. */
static char saved_transport[64], saved_host[64];

static void save_environment(void) {
  const char *t = getenv("NAA_TRANSPORT"), *h = getenv("NAA_TEST_HOST");
  snprintf(saved_transport, sizeof saved_transport, "%s", t != NULL ? t : "");
  snprintf(saved_host, sizeof saved_host, "%s", h != NULL ? h : "");
}

static int restore_environment(void **state) {
  (void)state;
  setenv("NAA_TRANSPORT", saved_transport, 1); /* empty counts as unset */
  setenv("NAA_TEST_HOST", saved_host, 1);
  return 0;
}

/* rdma_cm cannot reach the loopback: verbs to 127.0.0.1 is refused as unsupported, at once,
 * whether or not this machine has RDMA devices; auto falls back to TCP for it. */
static void test_verbs_to_loopback(void **state) {
  (void)state;
#ifndef NAA_HAVE_LIBFABRIC
  fprintf(stderr, "this build has no libfabric (--without-libfabric): no server on the loopback\n");
  skip();
#endif
  test_server loop;
  const char *const extra[] = {"--transport", "ofi+tcp", NULL};
  setenv("NAA_TEST_HOST", "127.0.0.1", 1);
  assert_int_equal(test_server_start(&loop, extra), 0);
  uint8_t buf[8] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  test_server_use(&loop, FN_ADD1, 1);
  setenv("NAA_TRANSPORT", "verbs", 1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_UNSUPPORTED);
  assert_true(seconds_since(&t0) < 30);
  setenv("NAA_TRANSPORT", "auto", 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_int_equal(buf[0], 1);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  test_server_stop(&loop);
}

/* A server with a key refuses clients without it (or with another) at connection time, before
 * it allocates anything, and serves the client that presents it. */
static void test_auth_key(void **state) {
  (void)state;
  char key_file[] = "/tmp/naa-key-XXXXXX";
  int fd = mkstemp(key_file);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "rack7-secret\n", 13), 13);
  close(fd);
  test_server guarded;
  const char *const extra[] = {"--auth-key-file", key_file, NULL};
  assert_int_equal(test_server_start(&guarded, extra), 0);
  test_server_use(&guarded, FN_ADD1, 1);
  uint8_t buf[16] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsetenv("NAA_AUTH_KEY");
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_CONNECTION);
  setenv("NAA_AUTH_KEY", "rack7-secreT", 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_CONNECTION);
  assert_true(seconds_since(&t0) < 30); /* refused, not timed out */
  setenv("NAA_AUTH_KEY", "rack7-secret", 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  assert_int_equal(buf[0], 1);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  unsetenv("NAA_AUTH_KEY");
  assert_int_equal(test_server_stop(&guarded), 0);
  unlink(key_file);
}

/* An NAA that cannot hold the regions answers MRSP with an error message, which tells the
 * client the bytes it asked for and the NAA's limit. */
static void test_mrsp_refused(void **state) {
  (void)state;
  test_server small;
  const char *args[] = {"--client-memory", "1K", NULL};
  assert_int_equal(test_server_start(&small, args), 0);
  test_server_use(&small, FN_ADD1, 1);
  static uint8_t buf[4096];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_NO_RESOURCES);
  char cause[512];
  assert_int_equal(naa_last_error(NULL, cause, sizeof cause), NAA_ERR_NO_RESOURCES);
  assert_non_null(strstr(cause, "their 4096 bytes exceed the NAA's memory limit (1024 bytes left"));
  naa_param_t fits = {buf, 1024, false};
  assert_int_equal(naa_create(FN_ADD1, &fits, 1, &fits, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&small), 0);
}

static void test_plugin_kernel(void **state) {
  (void)state;
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == NULL) {
    fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set: plugin test skipped\n");
    skip();
  }
  test_server ps;
  const char *args[] = {"--kernel", plugin, NULL};
  assert_int_equal(test_server_start(&ps, args), 0);
  test_server_use(&ps, FN_PLUGIN_XOR, 1);
  uint8_t in[32], out[32];
  memset(in, 0x0f, sizeof in);
  memset(out, 0x33, sizeof out);
  naa_param_t pin = {in, sizeof in, false}, pout = {out, sizeof out, false};
  naa_handle h;
  assert_int_equal(naa_create(FN_PLUGIN_XOR, &pin, 1, &pout, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  for (size_t i = 0; i < sizeof out; i++)
    assert_int_equal(out[i], 0xff); /* NAA's zeroed output ^ 0xff */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&ps), 0);
}

/* The NAA dies mid-session: the next wait must fail with a connection or transport error
 * well within its deadline, and finalize must still release the handle. */
static void test_server_killed(void **state) {
  (void)state;
  test_server doomed;
  assert_int_equal(test_server_start(&doomed, NULL), 0);
  test_server_use(&doomed, FN_ADD1, 1);
  static uint8_t buf[1 << 20];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  setenv("NAA_TIMEOUT", "20", 1);
  setenv("NAA_CONNECT_TIMEOUT", "2", 1); /* naa_invoke reconnects until it runs out */
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  unsetenv("NAA_CONNECT_TIMEOUT");
  test_server_kill(&doomed);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = naa_invoke(&h);
  if (rc == NAA_SUCCESS) rc = naa_wait(&h, NULL);
  double took = seconds_since(&t0);
  fprintf(stderr, "server killed: error %d (%s) after %.3f s\n", rc, naa_strerror(rc), took);
  /* NAA_ERR_TIMEOUT: naa_invoke's reconnect ran out of NAA_CONNECT_TIMEOUT inside an attempt
   * (over verbs each refused attempt is followed by another until then). */
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT || rc == NAA_ERR_TIMEOUT);
  assert_true(took < 20); /* detected, not waited out */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  test_timeout_default();
}

/* The NAA dies while a kernel runs (one that never ends): the waiting host must get an error
 * well within its deadline, not wait it out. */
static void test_server_killed_during_invoke(void **state) {
  (void)state;
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == NULL) {
    fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set: test skipped\n");
    skip();
  }
  /* The spinning kernel writes to this FIFO when it starts (test/unit/kernel_plugin.c). */
  char dir[] = "/tmp/naa-started-XXXXXX", fifo[64];
  assert_non_null(mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  int started = open(fifo, O_RDONLY | O_NONBLOCK);
  assert_true(started >= 0);
  setenv("NAA_TEST_KERNEL_STARTED", fifo, 1);
  test_server doomed;
  const char *args[] = {"--kernel", plugin, NULL};
  assert_int_equal(test_server_start(&doomed, args), 0);
  unsetenv("NAA_TEST_KERNEL_STARTED");
  test_server_use(&doomed, FN_PLUGIN_SPIN, 1);
  static uint8_t buf[4096];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  setenv("NAA_TIMEOUT", "20", 1);
  assert_int_equal(naa_create(FN_PLUGIN_SPIN, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  bool done = true;
  assert_int_equal(naa_test(&h, &done, NULL), NAA_SUCCESS);
  assert_false(done); /* the kernel spins */
  struct pollfd kernel = {started, POLLIN, 0};
  assert_int_equal(poll(&kernel, 1, 20000), 1); /* it has started: kill the server under it */
  close(started);
  unlink(fifo);
  rmdir(dir);
  test_server_kill(&doomed);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = naa_wait(&h, NULL);
  double took = seconds_since(&t0);
  printf("server killed during an invoke: error %d (%s) reported after %.3f s\n", rc,
         naa_strerror(rc), took);
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT);
  assert_true(took < 20); /* detected, not waited out */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  test_timeout_default();
}

/* Child mode of test_foreign_handle: creates a handle, prints its id, holds it until stdin
 * closes. */
static int print_handle(void) {
  uint8_t buf[16] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h;
  if (naa_create(FN_ADD1, &p, 1, &p, 1, &h) != NAA_SUCCESS) return 1;
  printf("%llu\n", (unsigned long long)h.id);
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return naa_finalize(&h) == NAA_SUCCESS ? 0 : 1;
}

/* A handle value made by another process (e.g. passed between MPI ranks) names nothing here,
 * while this process has live handles of its own. */
static void test_foreign_handle(void **state) {
  (void)state;
  uint8_t buf[16] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle mine;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &mine), NAA_SUCCESS);
  char *const child_argv[] = {"test_offload", "--print-handle", NULL};
  int to_child = -1;
  FILE *in = NULL;
  const pid_t pid = test_spawn_self(child_argv, &to_child, &in);
  assert_true(pid > 0);
  unsigned long long id = 0;
  assert_int_equal(fscanf(in, "%llu", &id), 1);
  naa_handle foreign = {id};
  assert_true(foreign.id != mine.id);
  bool done;
  naa_status st;
  assert_int_equal(naa_invoke(&foreign), NAA_ERR_INVALID_HANDLE);
  assert_int_equal(naa_test(&foreign, &done, &st), NAA_ERR_INVALID_HANDLE);
  assert_int_equal(naa_wait(&foreign, &st), NAA_ERR_INVALID_HANDLE);
  assert_int_equal(naa_finalize(&foreign), NAA_ERR_INVALID_HANDLE);
  close(to_child);
  fclose(in);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* its handle still worked there */
  assert_int_equal(naa_invoke(&mine), NAA_SUCCESS);
  assert_int_equal(naa_wait(&mine, NULL), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&mine), NAA_SUCCESS);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--print-handle") == 0) return print_handle();
  save_environment();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_many_invocations),
      cmocka_unit_test(test_single_send),
      cmocka_unit_test(test_all_inputs_single_send),
      cmocka_unit_test(test_daxpy_and_dgemm),
      cmocka_unit_test(test_several_handles),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_spec_skips_mismatched_entry),
      cmocka_unit_test(test_unknown_function_code),
      cmocka_unit_test(test_state_errors),
      cmocka_unit_test(test_finalize_while_running),
      cmocka_unit_test(test_server_not_running),
      cmocka_unit_test_teardown(test_verbs_to_loopback, restore_environment),
      cmocka_unit_test(test_auth_key),
      cmocka_unit_test(test_mrsp_refused),
      cmocka_unit_test(test_plugin_kernel),
      cmocka_unit_test(test_server_killed),
      cmocka_unit_test(test_server_killed_during_invoke),
      cmocka_unit_test(test_foreign_handle),
  };
  /* One case alone, while working on it: NAA_TEST_ONLY=test_sizes (a cmocka pattern). */
  if (getenv("NAA_TEST_ONLY") != NULL) cmocka_set_test_filter(getenv("NAA_TEST_ONLY"));
  return cmocka_run_group_tests(tests, start_shared, stop_shared);
}
