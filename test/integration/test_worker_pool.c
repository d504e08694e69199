/* SPDX-License-Identifier: BSD-3-Clause */
/* naa-server serves its clients on a bounded pool of threads (tools/naa-server/
 * worker_pool.hpp): a client that comes after another has gone is served by the thread that
 * served the other one, parked meanwhile, instead of a new one; no more than 4 threads stay
 * parked after a crowd of clients; a parked thread polls for the next client only briefly; and
 * after a second without clients none is left. Thread ids
 * are read from /proc/PID/task while the clients are connected. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "server.h"

enum {
  FN_ADD1 = 1,
  MAX_TIDS = 256,
  ONE_BY_ONE = 8,
  CROWD = 8,
  QUICK = 20,
  MAX_PARKED = 4, /* kParkedWorkers in tools/naa-server/server.cpp */
};

static test_server server;

/* The thread ids of the server; returns how many (at most MAX_TIDS). */
static size_t server_tids(long *tids) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)server.pid);
  DIR *d = opendir(path);
  assert_non_null(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && n < MAX_TIDS;)
    if (e->d_name[0] != '.') tids[n++] = atol(e->d_name);
  closedir(d);
  return n;
}

/* The server's CPU time in clock ticks (utime + stime, /proc/PID/stat). */
static long server_ticks(void) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)server.pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  const char *after_name = strrchr(text, ')');
  assert_non_null(after_name);
  long utime = 0, stime = 0;
  assert_int_equal(sscanf(after_name + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
                          &utime, &stime), 2);
  return utime + stime;
}

static int contains(const long *set, size_t n, long tid) {
  for (size_t i = 0; i < n; i++)
    if (set[i] == tid) return 1;
  return 0;
}

static void sleep_ms(double ms) {
  ms *= test_time_scale();
  struct timespec t = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (time_t)(ms / 1000)) * 1e6)};
  nanosleep(&t, NULL);
}

/* Threads beyond the baseline's, waiting up to `patience_ms` (unscaled: the server's park time
 * is not scaled either) for their number to come down to `goal`, or with `rising` up to it. */
static size_t extra_threads(size_t baseline, size_t goal, int patience_ms, int rising) {
  long tids[MAX_TIDS];
  size_t n = server_tids(tids);
  for (int waited = 0; (rising ? n < baseline + goal : n > baseline + goal) && waited < patience_ms;
       waited += 20) {
    struct timespec t = {0, 20 * 1000 * 1000};
    nanosleep(&t, NULL);
    n = server_tids(tids);
  }
  return n > baseline ? n - baseline : 0;
}

static void test_pool(void **state) {
  (void)state;
  setenv("NAA_TRANSPORT", "ofi+tcp", 1);
  assert_int_equal(test_server_start(&server, NULL), 0);
  test_server_use(&server, FN_ADD1, 1);
  uint8_t buf[64] = {0};
  naa_param_t p = {buf, sizeof buf, false};
  /* The baseline after a first client and its thread's park time: a sanitizer's runtime starts
   * a thread of its own at the server's first thread (TSan's background thread). */
  naa_handle first = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &first), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&first), NAA_SUCCESS);
  sleep_ms(1500);
  long baseline[MAX_TIDS];
  const size_t base_n = server_tids(baseline);

  /* One client after another: the same thread serves them all (two allowed: a client may
   * come before the thread of the one before has seen it go). */
  long served[MAX_TIDS];
  size_t served_n = 0;
  for (int i = 0; i < ONE_BY_ONE; i++) {
    naa_handle h = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
    long tids[MAX_TIDS];
    const size_t n = server_tids(tids);
    for (size_t k = 0; k < n; k++)
      if (!contains(baseline, base_n, tids[k]) && !contains(served, served_n, tids[k]) &&
          served_n < MAX_TIDS)
        served[served_n++] = tids[k];
    assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
    sleep_ms(50); /* the server sees the client go and parks its thread */
  }
  fprintf(stderr, "  %d clients one after another: served by %zu threads\n", ONE_BY_ONE, served_n);
  assert_true(served_n >= 1 && served_n <= 2);

  /* Clients in quick succession teach a parked thread to poll for the next one, for a few
   * milliseconds at most: within the park time, the parked threads use next to no CPU. */
  for (int i = 0; i < QUICK; i++) {
    naa_handle h = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
    assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  }
  struct timespec settle = {0, 50 * 1000 * 1000}, park = {0, 800 * 1000 * 1000};
  nanosleep(&settle, NULL); /* the server sees the last client go */
  const long ticks_before = server_ticks();
  nanosleep(&park, NULL); /* within the park time (1 s, not scaled) */
  const long parked_ticks = server_ticks() - ticks_before;
  fprintf(stderr, "  %d quick clients, then 0.8 s parked: %ld ticks of CPU (100 a second)\n", QUICK,
          parked_ticks);
  assert_true(parked_ticks < 10);

  /* A crowd: one thread each while connected, at most MAX_PARKED left once it has gone. */
  naa_handle crowd[CROWD];
  for (int i = 0; i < CROWD; i++) {
    crowd[i] = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &crowd[i]), NAA_SUCCESS);
  }
  /* naa-server's accept, with the memory regions in it, leaves before the thread that takes
   * the client over is started (Connection::start): a create may return first. */
  assert_true(extra_threads(base_n, CROWD, (int)(2000 * test_time_scale()), 1) >= CROWD);
  for (int i = 0; i < CROWD; i++) assert_int_equal(naa_finalize(&crowd[i]), NAA_SUCCESS);
  /* Within the park time (1 s): the others have ended, these wait. */
  const size_t parked = extra_threads(base_n, MAX_PARKED, 800, 0);
  fprintf(stderr, "  after a crowd of %d clients: %zu threads parked\n", CROWD, parked);
  assert_true(parked <= MAX_PARKED);

  /* After the park time, an idle server is back to its own threads. */
  const size_t left = extra_threads(base_n, 0, 3000, 0);
  fprintf(stderr, "  a while later: %zu threads left\n", left);
  assert_int_equal(left, 0);
  assert_int_equal(test_server_stop(&server), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
