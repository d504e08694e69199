/* SPDX-License-Identifier: BSD-3-Clause */
/* A client waiting over ofi+shm for a slow kernel sleeps on its endpoint's bell until
 * naa-server's answer rings it, in every way a program waits: naa_wait, naa_waitany and the
 * progress thread. libfabric 1.17's shm wakes nobody when a peer writes, and a client that
 * naps instead wakes ever more rarely but still often: about 16 times per doubling of the
 * wait (wait_plan.hpp), some 70 times in a 300 ms kernel. A sleep on the bell ends
 * only for the answer and at the slices that look for a peer gone (at least 100 ms each).
 * The count of voluntary context switches over the wait tells the two apart; no timing is
 * asserted. Needs the test kernel plugin (NAA_TEST_KERNEL_PLUGIN): skipped without it. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "server.h"

enum { FN_NAP_FILL = 105, FN_GATE_FILL = 108, NAP_MS = 300, SIZE = 64 };
/* A sleep on the bell wakes for the answer and for at most three slices of 100 ms; a nap per
 * 1/16 of the idle time wakes several times that. */
static const long kMostWakeUps = 20;
static const long kMostThreadWakeUps = 6;

static test_server server;
static char naa[96];
/* gate_fill's FIFOs (test/unit/kernel_plugin.c): it writes a byte to `started` when it runs and
 * waits for one on `gate`, which we hold open for writing. */
static char fifo_dir[] = "/tmp/naa-bell-XXXXXX", started_path[64], gate_path[64];
static int started = -1, gate = -1;

static long wake_ups(int who) {
  struct rusage u;
  assert_int_equal(getrusage(who, &u), 0);
  return u.ru_nvcsw;
}

/* The same for the thread named `name` (of this process), from /proc: a sanitizer's own
 * threads wake too. */
static long wake_ups_of(const char *name) {
  DIR *tasks = opendir("/proc/self/task");
  assert_non_null(tasks);
  long found = -1;
  for (struct dirent *t; found < 0 && (t = readdir(tasks)) != NULL;) {
    char path[300], comm[32] = "", line[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(comm, sizeof comm, f) == NULL) comm[0] = 0;
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    if (strcmp(comm, name) != 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", t->d_name);
    if ((f = fopen(path, "r")) == NULL) continue;
    while (fgets(line, sizeof line, f) != NULL)
      if (sscanf(line, "voluntary_ctxt_switches: %ld", &found) == 1) break;
    fclose(f);
  }
  closedir(tasks);
  assert_true(found >= 0);
  return found;
}

static int start(void **state) {
  (void)state;
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == NULL) return 0;
  setenv("NAA_TRANSPORT", "ofi+shm", 1);
  if (mkdtemp(fifo_dir) == NULL) return -1;
  snprintf(started_path, sizeof started_path, "%s/started", fifo_dir);
  snprintf(gate_path, sizeof gate_path, "%s/gate", fifo_dir);
  if (mkfifo(started_path, 0600) != 0 || mkfifo(gate_path, 0600) != 0) return -1;
  started = open(started_path, O_RDONLY | O_NONBLOCK);
  gate = open(gate_path, O_RDWR);
  if (started < 0 || gate < 0) return -1;
  setenv("NAA_TEST_KERNEL_STARTED", started_path, 1);
  setenv("NAA_TEST_KERNEL_GATE", gate_path, 1);
  const char *extra[] = {"--kernel", plugin, NULL};
  const int rc = test_server_start(&server, extra);
  unsetenv("NAA_TEST_KERNEL_STARTED");
  unsetenv("NAA_TEST_KERNEL_GATE");
  if (rc != 0) return -1;
  snprintf(naa, sizeof naa, "%s:%d", test_host(), server.port);
  return 0;
}

static int stop(void **state) {
  (void)state;
  if (server.pid > 0) test_server_stop(&server);
  if (started >= 0) close(started);
  if (gate >= 0) close(gate);
  if (started >= 0 || gate >= 0) {
    unlink(started_path);
    unlink(gate_path);
    rmdir(fifo_dir);
  }
  return 0;
}

/* A handle whose kernel (nap_fill, or gate_fill: fn) sleeps NAP_MS, or until we open its
 * gate, and then writes 0x5a to the output. */
static void create_kernel(naa_handle *h, unsigned fn, uint8_t *in, uint8_t *out,
                          const char *progress) {
  if (server.pid <= 0) {
    fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set: test skipped\n");
    skip();
  }
  in[0] = (uint8_t)(NAP_MS & 0xff);
  in[1] = (uint8_t)(NAP_MS >> 8);
  in[2] = in[3] = 0;
  in[4] = 0x5a;
  naa_param_t pin = {in, SIZE, false}, pout = {out, SIZE, false};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa;
  attr.progress = progress;
  attr.timeout_ms = (int64_t)(20000 * test_time_scale());
  assert_int_equal(naa_create_attr(fn, &pin, 1, &pout, 1, &attr, h), NAA_SUCCESS);
}

static void create_napper(naa_handle *h, uint8_t *in, uint8_t *out, const char *progress) {
  create_kernel(h, FN_NAP_FILL, in, out, progress);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void check_answer(const uint8_t *out, long woke, const char *how, long most) {
  print_message("%s over a %d ms kernel: %ld voluntary context switches\n", how, NAP_MS, woke);
  assert_int_equal(out[0], 0x5a);
  assert_int_equal(out[SIZE - 1], 0x5a);
  assert_true(woke <= most);
}

static void test_wait_sleeps_on_the_bell(void **state) {
  (void)state;
  static uint8_t in[SIZE], out[SIZE];
  naa_handle h;
  create_napper(&h, in, out, NULL);
  naa_status st;
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  const long before = wake_ups(RUSAGE_THREAD);
  assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
  check_answer(out, wake_ups(RUSAGE_THREAD) - before, "naa_wait", kMostWakeUps);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

static void test_waitany_sleeps_on_the_bells(void **state) {
  (void)state;
  static uint8_t in[2][SIZE], out[2][SIZE];
  naa_handle h[2];
  for (int i = 0; i < 2; i++) create_napper(&h[i], in[i], out[i], NULL);
  for (int i = 0; i < 2; i++) assert_int_equal(naa_invoke(&h[i]), NAA_SUCCESS);
  const long before = wake_ups(RUSAGE_THREAD);
  for (int k = 0; k < 2; k++) {
    int index = -1;
    naa_status st;
    assert_int_equal(naa_waitany(2, h, &index, &st), NAA_SUCCESS);
    assert_in_range(index, 0, 1);
  }
  check_answer(out[0], wake_ups(RUSAGE_THREAD) - before, "naa_waitany over 2 handles",
               kMostWakeUps);
  check_answer(out[1], 0, "and the other's answer", 0);
  for (int i = 0; i < 2; i++) assert_int_equal(naa_finalize(&h[i]), NAA_SUCCESS);
}

/* naa_wait would take the handle back from the progress thread: the caller sleeps instead, and
 * collects the answer after. The thread dozes first and after the answer (short sleeps that
 * nobody has to wake, wait_plan.hpp), whichever way it sleeps: its wake-ups are
 * counted from 100 ms after the kernel (gate_fill) started for at least 180 ms, all before we
 * let the kernel answer, the peer-gone slices (100 ms and longer) against naps of 1/16 of the
 * idle time (some 16 in 180 ms). A window that a loaded machine stretches allows as many more
 * slices. */
static void test_progress_thread_sleeps_on_the_bell(void **state) {
  (void)state;
  static uint8_t in[SIZE], out[SIZE];
  naa_handle h;
  create_kernel(&h, FN_GATE_FILL, in, out, "thread");
  naa_status st;
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  struct pollfd kernel = {started, POLLIN, 0};
  assert_int_equal(poll(&kernel, 1, (int)(20000 * test_time_scale())), 1);
  char byte;
  assert_int_equal(read(started, &byte, 1), 1);
  const struct timespec doze = {0, 100 * 1000000L}, rest = {0, 180 * 1000000L};
  nanosleep(&doze, NULL);
  const long before = wake_ups_of("naa-progress");
  const double t0 = now_ms();
  nanosleep(&rest, NULL);
  const long woke = wake_ups_of("naa-progress") - before;
  const double window = now_ms() - t0;
  assert_int_equal(write(gate, "g", 1), 1); /* the kernel answers now */
  assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
  print_message("the progress thread's window: %.0f ms\n", window);
  const long most = window <= 180 ? kMostThreadWakeUps : (long)(kMostThreadWakeUps * window / 180);
  check_answer(out, woke, "the progress thread (a window before the answer)", most);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wait_sleeps_on_the_bell),
      cmocka_unit_test(test_waitany_sleeps_on_the_bells),
      cmocka_unit_test(test_progress_thread_sleeps_on_the_bell),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
