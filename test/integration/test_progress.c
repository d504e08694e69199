// SPDX-License-Identifier: BSD-3-Clause
/* NAA_PROGRESS=thread against a real naa-server on loopback (ofi+tcp) and against the
 * conformance NAA: the progress thread completes invocations that only naa_test looks at,
 * serves several handles and threads at once, honours pacing (a request it posts too early is
 * stranded, as pacing_off proves), pins to NAA_PROGRESS_CPU, dozes between invocations and
 * sleeps after a pause, stops with the last handle, survives finalize in flight and a dead NAA, and
 * a forked child gets a thread of its own. scripts/sanitize.sh runs it under TSan. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "roundtrip.h"
#include "server.h"

enum { FN_ADD1 = 1 };

static test_server server;

static int start_shared(void **state) {
  (void)state;
  setenv("NAA_PROGRESS", "thread", 1);
  return test_server_start_shared(&server); /* NAA_TIMEOUT scaled by NAA_TEST_TIME_SCALE */
}

static int stop_shared(void **state) {
  (void)state;
  return test_server_stop(&server) == 0 ? 0 : -1;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Calls naa_test until the flag rises or `seconds` pass: naa_test drives nothing in thread
 * mode, so only the progress thread can get the invocation done. */
static int test_until_done(naa_handle *h, double seconds, naa_status *st) {
  double end = now_s() + seconds;
  for (;;) {
    bool done = false;
    int rc = naa_test(h, &done, st);
    if (rc != NAA_SUCCESS || done) return rc;
    if (now_s() > end) return NAA_ERR_TIMEOUT;
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
  }
}

/* The progress thread's id (it names itself "naa-progress"), or -1; *count how many there are.
 * Other threads (a sanitizer's, a provider's) are not counted. */
static long progress_thread(int *count) {
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  long tid = -1;
  *count = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue; /* ended meanwhile */
    if (fgets(name, sizeof name, f) != NULL && strcmp(name, "naa-progress\n") == 0) {
      tid = atol(e->d_name);
      ++*count;
    }
    fclose(f);
  }
  closedir(d);
  return tid;
}

static int progress_threads(void) {
  int n;
  progress_thread(&n);
  return n;
}

static long progress_tid(void) {
  int n;
  long tid = progress_thread(&n);
  assert_int_equal(n, 1);
  return tid;
}

/* A handle on the shared server's add1 over the one byte *b, in place. */
static naa_handle add1_handle(uint8_t *b) {
  naa_param_t p = {b, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  return h;
}

/* add1 in place, `rounds` times, ending every other invocation by naa_test alone. */
/* Odd rounds through naa_wait, even ones through naa_test alone. */
static int wait_or_test(naa_handle *h, naa_status *st, int round) {
  return round % 2 ? naa_wait(h, st) : test_until_done(h, 30, st);
}

static void rounds_inplace(size_t size, int rounds) {
  roundtrip_inplace(&server, size, rounds, 3, wait_or_test);
}

static void sizes(void **state) {
  (void)state;
  rounds_inplace(1, 200);
  rounds_inplace(4096, 100);
  rounds_inplace(1 << 20, 20);
  rounds_inplace(16 << 20, 4);
}

struct worker {
  uint8_t buf[8192];
  int failures;
};

static pthread_barrier_t created, counted;

/* Creates its own handle (the engine is acquired from several threads at once), waits until
 * the main thread has counted the progress threads, then runs 200 invocations. */
static void *worker_main(void *arg) {
  struct worker *w = arg;
  naa_param_t p = {w->buf, sizeof w->buf, false};
  naa_handle h = NAA_HANDLE_NULL;
  int rc = naa_create(FN_ADD1, &p, 1, &p, 1, &h);
  pthread_barrier_wait(&created);
  pthread_barrier_wait(&counted);
  if (rc != NAA_SUCCESS) {
    w->failures = 1000;
    return NULL;
  }
  for (int r = 0; r < 200; r++) {
    naa_status st;
    if (naa_invoke(&h) != NAA_SUCCESS ||
        (r % 2 ? naa_wait(&h, &st) : test_until_done(&h, 30, &st)) != NAA_SUCCESS)
      w->failures++;
  }
  if (naa_finalize(&h) != NAA_SUCCESS) w->failures++;
  return NULL;
}

/* One progress thread serves four handles that four application threads create and drive. */
static void threads(void **state) {
  (void)state;
  enum { T = 4 };
  static struct worker w[T];
  pthread_t tid[T];
  test_server_use(&server, FN_ADD1, 1); /* setenv, before any thread reads the environment */
  pthread_barrier_init(&created, NULL, T + 1);
  pthread_barrier_init(&counted, NULL, T + 1);
  for (int i = 0; i < T; i++) {
    memset(w[i].buf, 10 * i, sizeof w[i].buf);
    w[i].failures = 0;
    assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
  }
  pthread_barrier_wait(&created);
  int engines = progress_threads();
  pthread_barrier_wait(&counted);
  for (int i = 0; i < T; i++) pthread_join(tid[i], NULL);
  pthread_barrier_destroy(&created);
  pthread_barrier_destroy(&counted);
  assert_int_equal(engines, 1);
  for (int i = 0; i < T; i++) {
    assert_int_equal(w[i].failures, 0);
    for (size_t j = 0; j < sizeof w[i].buf; j++)
      assert_int_equal(w[i].buf[j], (uint8_t)(10 * i + 200));
  }
  assert_int_equal(progress_threads(), 0);
}

/* utime + stime of a thread, in clock ticks. */
static long cpu_ticks(long tid) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  const char *p = strrchr(line, ')'); /* the name may hold blanks */
  long utime = 0, stime = 0;
  /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
  assert_int_equal(
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime), 2);
  return utime + stime;
}

/* The thread starts with the first thread-mode handle, burns no CPU while nothing is in
 * flight, and stops with the last handle; a later handle starts a new one. */
static void lifecycle(void **state) {
  (void)state;
  assert_int_equal(progress_threads(), 0);
  uint8_t b = 0;
  naa_handle h = add1_handle(&b);
  assert_int_equal(progress_threads(), 1);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  long tid = progress_tid(), before = cpu_ticks(tid);
  struct timespec idle = {1, 0};
  nanosleep(&idle, NULL);
  long used = cpu_ticks(tid) - before;
  printf("progress thread idle for 1 s: %ld clock ticks of CPU (%ld per second)\n", used,
         sysconf(_SC_CLK_TCK));
  assert_true(used <= 2); /* a polling thread would use about sysconf(_SC_CLK_TCK) */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(progress_threads(), 0); /* joined, not left behind */
  rounds_inplace(64, 3);
  assert_int_equal(progress_threads(), 0);
}

/* write(2) calls the calling thread has made (the kernel's task I/O accounting), or -1 where
 * the kernel keeps no such count. */
static long my_writes(void) {
  FILE *f = fopen("/proc/thread-self/io", "r");
  if (f == NULL) return -1;
  char line[128];
  long n = -1;
  while (n < 0 && fgets(line, sizeof line, f) != NULL) sscanf(line, "syscw: %ld", &n);
  fclose(f);
  return n;
}

/* Whether the progress thread sleeps until woken: in ppoll(2) on descriptors (its eventfd among
 * them). A doze is a ppoll on no descriptor, which nobody has to wake. Waits for it up to 30 s
 * times NAA_TEST_TIME_SCALE. */
static bool progress_thread_sleeps(long tid) {
  const double until = now_s() + 30 * test_time_scale();
  for (;;) {
    unsigned long args[3];
    if (test_thread_syscall_args((pid_t)tid, args) == SYS_ppoll && args[1] > 0) return true;
    if (now_s() > until) return false;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

/* Between invocations the thread dozes, so naa_invoke hands over without a system call; after
 * a pause of more than 8 busy periods it sleeps, and naa_invoke wakes it with one eventfd
 * write. Without the doze every hand-over below would write; without the sleep the thread
 * would never be seen asleep, and none would. The pause lasts until the thread sleeps: a
 * loaded machine's slow rounds make the dozing spell longer, never the test false. */
static void dozes_then_sleeps(void **state) {
  (void)state;
  if (my_writes() < 0) {
    printf("no /proc/thread-self/io here: cannot count naa_invoke's system calls\n");
    skip();
  }
  if (test_thread_syscall(test_thread_id()) == -2) {
    printf("no /proc/self/task/*/syscall here: cannot see the progress thread asleep\n");
    skip();
  }
  const size_t size = 4 << 20;
  uint8_t *b = calloc(size, 1);
  assert_non_null(b);
  naa_param_t p = {b, size, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&server, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS); /* shows the thread how long a round lasts */
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  int without_syscall = 0;
  for (int i = 0; i < 5; ++i) {
    long before = my_writes();
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    if (my_writes() == before) ++without_syscall;
    assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  }
  const bool slept = progress_thread_sleeps(progress_tid());
  if (!slept) printf("the progress thread was never seen asleep after the last round\n");
  assert_true(slept);
  long before = my_writes();
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  long after_sleep = my_writes() - before;
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  printf(
      "naa_invoke right after a round: %d of 5 without a system call; once asleep: %ld write(s)\n",
      without_syscall, after_sleep);
  assert_true(without_syscall >= 3);
  assert_int_equal(after_sleep, 1);
  assert_int_equal(b[0], 7);
  assert_int_equal(b[size - 1], 7);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  free(b);
}

/* What the progress thread is doing: DOZE_NONE unless it is in ppoll(2); asleep until woken
 * (ppoll on descriptors, its eventfd among them): DOZE_SLEEP; dozing (ppoll on no descriptor):
 * the doze's timeout in microseconds, read from our own memory through /proc/self/mem, so
 * that a sanitizer sees no access to the thread's stack. The thread may leave the call and
 * write its next doze's timeout meanwhile: a reading counts only if two in a row agree, the
 * thread was in the same call before and after each, and it is a doze's (under a second). */
enum { DOZE_NONE = -1, DOZE_SLEEP = -2, PLAN_LONGEST_DOZE_US = 2000 };
static bool read_timeout(long tid, unsigned long at, struct timespec *timeout) {
  int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  ssize_t got = pread(fd, timeout, sizeof *timeout, (off_t)at);
  close(fd);
  unsigned long args[3];
  return got == (ssize_t)sizeof *timeout &&
         test_thread_syscall_args((pid_t)tid, args) == SYS_ppoll && args[1] == 0 && args[2] == at;
}
static long doze_us(long tid) {
  unsigned long args[3];
  if (test_thread_syscall_args((pid_t)tid, args) != SYS_ppoll) return DOZE_NONE;
  if (args[1] > 0) return DOZE_SLEEP;
  struct timespec first, second;
  if (args[2] == 0 || !read_timeout(tid, args[2], &first) || !read_timeout(tid, args[2], &second) ||
      first.tv_sec != second.tv_sec || first.tv_nsec != second.tv_nsec || first.tv_sec != 0 ||
      first.tv_nsec < 0 || first.tv_nsec >= 1000000000)
    return DOZE_NONE;
  return first.tv_nsec / 1000;
}

/* A caller that takes every invocation back at once (naa_invoke, then naa_wait) leaves the
 * thread nothing to do: after 8 in a row taken back within 20 us the thread dozes 4 ms at a
 * time instead of the plan's 20 us (it would otherwise take CPU time from the caller and a
 * same-host NAA 50000 times a second); the plan's dozes never exceed 2 ms. An invocation left
 * to it (naa_test alone) brings the plan's doze back: no long doze until it sleeps. Without
 * the long doze none is ever seen; without the way back the thread dozes 4 ms at a time after
 * the last invocation too. The rounds go on until the long doze is seen (a loaded machine may take
 * some caller's naa_wait later than 20 us), at most 30 s times NAA_TEST_TIME_SCALE. */
static void long_doze_when_taken_back(void **state) {
  (void)state;
  if (test_thread_syscall(test_thread_id()) == -2) {
    printf("no /proc/self/task/*/syscall here: cannot see the progress thread doze\n");
    skip();
  }
  uint8_t b = 0;
  naa_handle h = add1_handle(&b);
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  const long tid = progress_tid();
  const double until = now_s() + 30 * test_time_scale();
  long longest = 0;
  int rounds = 0;
  while (longest <= PLAN_LONGEST_DOZE_US && now_s() < until) {
    for (int i = 0; i < 20; ++i, ++rounds) {
      assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
      assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
    }
    for (int look = 0; look < 20 && longest <= PLAN_LONGEST_DOZE_US; ++look) {
      const long us = doze_us(tid);
      if (us > longest) longest = us;
      struct timespec pause = {0, 100000};
      nanosleep(&pause, NULL);
    }
  }
  printf("after %d rounds of naa_invoke + naa_wait: a doze of %ld us\n", rounds, longest);
  assert_true(longest > PLAN_LONGEST_DOZE_US);
  /* Left to the thread: it takes it, then dozes as the plan says, then sleeps. */
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  long after = 0, seen = 0;
  for (long us = doze_us(tid); us != DOZE_SLEEP && now_s() < until; us = doze_us(tid)) {
    if (us > after) after = us;
    if (us >= 0) ++seen;
    struct timespec pause = {0, 100000};
    nanosleep(&pause, NULL);
  }
  printf("after one left to the thread: %ld dozes seen, the longest %ld us, then asleep\n", seen,
         after);
  assert_true(doze_us(tid) == DOZE_SLEEP);
  assert_true(after <= PLAN_LONGEST_DOZE_US);
  assert_int_equal(b, (uint8_t)(2 + rounds));
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* NAA_PROGRESS_CPU pins the thread; a malformed value is a configuration error. */
static void pinned(void **state) {
  (void)state;
  uint8_t b = 0;
  naa_param_t p = {&b, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&server, FN_ADD1, 1);
  setenv("NAA_PROGRESS_CPU", "two", 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_CONFIG);
  setenv("NAA_PROGRESS_CPU", "0", 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  unsetenv("NAA_PROGRESS_CPU");
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(test_until_done(&h, 30, NULL), NAA_SUCCESS);
  char path[64], line[256], allowed[64] = "";
  snprintf(path, sizeof path, "/proc/self/task/%ld/status", progress_tid());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "Cpus_allowed_list: %63s", allowed) == 1) break;
  fclose(f);
  assert_string_equal(allowed, "0");
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* A finalize with an invocation in flight takes it from the thread; the NAA serves on. */
static void finalize_in_flight(void **state) {
  (void)state;
  static uint8_t buf[4 << 20];
  naa_param_t p = {buf, sizeof buf, false};
  test_server_use(&server, FN_ADD1, 1);
  for (int i = 0; i < 10; i++) {
    naa_handle h = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  }
  rounds_inplace(4096, 2);
}

/* The NAA dies during an invocation: naa_test, which drives nothing, must still report it. */
static void naa_dies(void **state) {
  (void)state;
  test_server doomed;
  assert_int_equal(test_server_start(&doomed, NULL), 0);
  test_server_use(&doomed, FN_ADD1, 1);
  static uint8_t buf[1 << 20];
  naa_param_t p = {buf, sizeof buf, false};
  naa_handle h = NAA_HANDLE_NULL;
  setenv("NAA_CONNECT_TIMEOUT", "1", 1); /* naa_invoke reconnects until it runs out */
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  unsetenv("NAA_CONNECT_TIMEOUT");
  test_server_kill(&doomed);
  /* Either naa_invoke finds the NAA gone before sending (the handle was idle for a
   * millisecond: it reconnects, in vain) or it only enqueues and naa_test reports the loss. */
  int rc = naa_invoke(&h);
  if (rc == NAA_SUCCESS) rc = test_until_done(&h, 25, NULL);
  printf("NAA killed: naa_test reported %d (%s)\n", rc, naa_strerror(rc));
  assert_true(rc == NAA_ERR_CONNECTION || rc == NAA_ERR_TRANSPORT);
  assert_int_equal(naa_invoke(&h), rc); /* the handle stays failed */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* A child forked while the parent's thread runs gets a thread of its own for its handles. */
static void fork_child(void **state) {
  (void)state;
#ifdef __SANITIZE_THREAD__
  fprintf(stderr,
          "fork_child skipped: TSan does not support threads started after a fork of a "
          "threaded process\n");
  skip();
#endif
  const char *transport = getenv("NAA_TRANSPORT");
  if (transport != NULL && strcmp(transport, "verbs") == 0) {
    /* Seen on Soft-RoCE in rdma-vm: the child's naa_create fails in its MRSP send
     * (ibv_post_send: EACCES), before the progress mode plays any part. */
    fprintf(stderr,
            "fork_child skipped: a child forked from a process with open verbs "
            "connections cannot post on its own (ibv_post_send fails with EACCES)\n");
    skip();
  }
  uint8_t b = 0;
  naa_handle mine = add1_handle(&b);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uint8_t c = 5;
    naa_param_t q = {&c, 1, false};
    naa_handle h = NAA_HANDLE_NULL;
    int rc = naa_create(FN_ADD1, &q, 1, &q, 1, &h);
    if (rc == NAA_SUCCESS) rc = naa_invoke(&h);
    if (rc == NAA_SUCCESS) rc = test_until_done(&h, 20, NULL);
    if (rc == NAA_SUCCESS && c != 6) rc = NAA_ERR_INTERNAL;
    if (rc == NAA_SUCCESS) rc = naa_finalize(&h);
    if (rc != NAA_SUCCESS) fprintf(stderr, "forked child: %s (%d)\n", naa_strerror(rc), rc);
    _exit(rc == NAA_SUCCESS ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(naa_invoke(&mine), NAA_SUCCESS);
  assert_int_equal(test_until_done(&mine, 30, NULL), NAA_SUCCESS);
  assert_int_equal(b, 1);
  assert_int_equal(naa_finalize(&mine), NAA_SUCCESS);
}

/* Back-to-back invocations against the conformance NAA, re-invoked the moment naa_test sees
 * the reply, so that the progress thread posts each final write: with pacing all complete;
 * without, the NAA strands one (which proves that the first half passes by the pacing).
 * Rounds of add1 until `rounds` or the first stranded request; the NAA is deaf for 1 ms after
 * each reply, and for `window1` (a conformance-naa order, or NULL) after the first. */
static long conformance_rounds(const char *pacing_us, long rounds, const char *window1) {
  test_server peer;
  const char *transport = getenv("NAA_TRANSPORT"); /* the peer speaks what the host speaks */
  const char *args[] = {"--window-us",
                        "1000",
                        "--transport",
                        transport != NULL && *transport != '\0' ? transport : "ofi+tcp",
                        window1 != NULL ? "--order" : NULL,
                        window1,
                        NULL};
  assert_int_equal(test_peer_start(&peer, "NAA_CONFORMANCE_NAA", args), 0);
  char timeout[16];
  snprintf(timeout, sizeof timeout, "%d", (int)(2 * test_time_scale()));
  setenv("NAA_PACING_US", pacing_us, 1);
  setenv("NAA_TIMEOUT", timeout, 1);
  uint8_t b = 0;
  naa_param_t p = {&b, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&peer, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  long r;
  for (r = 0; r < rounds; r++) {
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    if (test_until_done(&h, 2 * test_time_scale(), NULL) != NAA_SUCCESS) break;
    assert_int_equal(b, (uint8_t)(r + 1));
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&peer), 0);
  unsetenv("NAA_PACING_US");
  test_timeout_default(); /* back to the suite's, scaled */
  return r;
}

static void pacing(void **state) {
  (void)state;
  long paced = conformance_rounds("1000", 300, NULL);
  /* Unpaced, a request that the peer sees within its window strands. The window after the
   * first reply is opened to 1 s (scaled), beyond any re-invocation gap of a loaded machine,
   * so the second invocation strands for certain. */
  char window1[48];
  snprintf(window1, sizeof window1, "window@1=%ld", (long)(1000000 * test_time_scale()));
  long unpaced = conformance_rounds("0", 300, window1);
  printf(
      "conformance NAA, 1 ms window (1 s after the first reply unpaced): %ld of 300 completed "
      "paced, unpaced stranded after %ld\n",
      paced, unpaced);
  assert_int_equal(paced, 300);
  assert_int_equal(unpaced, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lifecycle),
      cmocka_unit_test(dozes_then_sleeps),
      cmocka_unit_test(long_doze_when_taken_back),
      cmocka_unit_test(sizes),
      cmocka_unit_test(threads),
      cmocka_unit_test(pinned),
      cmocka_unit_test(finalize_in_flight),
      cmocka_unit_test(naa_dies),
      cmocka_unit_test(fork_child),
      cmocka_unit_test(pacing),
  };
  return cmocka_run_group_tests(tests, start_shared, stop_shared);
}
