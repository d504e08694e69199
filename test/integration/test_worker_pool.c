/* SPDX-License-Identifier: BSD-3-Clause */
/* naa-server serves its clients on a bounded pool of threads (tools/naa-server/
 * worker_pool.hpp): a client that comes after another has gone is served by the thread that
 * served the other one, parked meanwhile, instead of a new one; no more than 4 threads stay
 * parked after a crowd of clients; a parked thread polls for the next client only briefly; and
 * after its park time without clients none is left. A thread serving a client is named
 * naa-client, a parked one naa-parked (/proc/PID/task/TID/comm): the tests wait for those names
 * instead of a time, and the server that shows reuse, the bound and the parked CPU keeps its
 * threads parked for a minute (NAA_SERVER_TEST_KEEP_MS), so that no park time can run out
 * before the test looks, however loaded the machine. */
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
  assert_int_equal(
      sscanf(after_name + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime),
      2);
  return utime + stime;
}

/* The name of the server's thread `tid`, or "" once it has ended. */
static void thread_name(long tid, char *name, size_t size) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%ld/task/%ld/comm", (long)server.pid, tid);
  name[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  if (fgets(name, (int)size, f) == NULL) name[0] = '\0';
  fclose(f);
  name[strcspn(name, "\n")] = '\0';
}

/* How many of the server's threads are named `name`; the first one's id to *tid (when not
 * NULL and there is one). */
static size_t named(const char *name, long *tid) {
  long tids[MAX_TIDS];
  const size_t n = server_tids(tids);
  size_t count = 0;
  for (size_t i = 0; i < n; i++) {
    char comm[32];
    thread_name(tids[i], comm, sizeof comm);
    if (strcmp(comm, name) != 0) continue;
    if (count++ == 0 && tid != NULL) *tid = tids[i];
  }
  return count;
}

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000 * 1000};
  nanosleep(&t, NULL);
}

/* Waits up to 20 s (scaled) until `count` threads are named `name` (`rising`) or no more than
 * `count` are; returns how many are. */
static size_t await_named(const char *name, size_t count, int rising, long *tid) {
  size_t n = named(name, tid);
  const double limit_ms = 20000 * test_time_scale();
  for (long waited = 0; (rising ? n < count : n > count) && waited < limit_ms; waited += 5) {
    nap_ms(5);
    n = named(name, tid);
  }
  return n;
}

/* Waits until no thread serves a client any more (each has parked or ended); returns how many
 * are parked then. */
static size_t all_served(void) {
  const size_t serving = await_named("naa-client", 0, 0, NULL);
  if (serving > 0) fail_msg("%zu server threads still serve a client after 20 s", serving);
  return named("naa-parked", NULL);
}

/* The thread that serves the one client connected: the server names it once the connection's
 * thread runs, which may be after naa_create has returned. */
static long serving_thread(void) {
  long tid = 0;
  if (await_named("naa-client", 1, 1, &tid) != 1) fail_msg("no server thread serves the client");
  return tid;
}

static void test_pool(void **state) {
  (void)state;
  setenv("NAA_TRANSPORT", "ofi+tcp", 1);
  setenv("NAA_SERVER_TEST_KEEP_MS", "60000", 1);
  assert_int_equal(test_server_start(&server, NULL), 0);
  unsetenv("NAA_SERVER_TEST_KEEP_MS");
  test_server_use(&server, FN_ADD1, 1);
  uint8_t buf[64] = {0};
  naa_param_t p = {buf, sizeof buf, false};

  /* One client after another: each is served by the thread that served the one before, which
   * parked once that one had gone. */
  long first = 0;
  int reused = 0;
  for (int i = 0; i < ONE_BY_ONE; i++) {
    naa_handle h = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
    const long tid = serving_thread();
    if (i == 0) first = tid;
    reused += i > 0 && tid == first;
    assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
    const size_t parked = all_served();
    if (parked != 1) fail_msg("after client %d had gone: %zu threads parked, not 1", i + 1, parked);
  }
  fprintf(stderr, "  %d clients one after another: %d served by the first one's thread\n",
          ONE_BY_ONE, reused + 1);
  assert_int_equal(reused, ONE_BY_ONE - 1);

  /* Clients in quick succession teach a parked thread to poll for the next one, for a few
   * milliseconds at most: parked, the threads use next to no CPU. */
  for (int i = 0; i < QUICK; i++) {
    naa_handle h = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
    assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  }
  all_served(); /* the server has seen the last client go */
  const long ticks_before = server_ticks();
  nap_ms(800);
  const long parked_ticks = server_ticks() - ticks_before;
  fprintf(stderr, "  %d quick clients, then 0.8 s parked: %ld ticks of CPU (100 a second)\n", QUICK,
          parked_ticks);
  assert_true(parked_ticks < 10);

  /* A crowd: one thread each while connected, MAX_PARKED of them parked once it has gone. */
  naa_handle crowd[CROWD];
  for (int i = 0; i < CROWD; i++) {
    crowd[i] = NAA_HANDLE_NULL;
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &crowd[i]), NAA_SUCCESS);
  }
  assert_int_equal(await_named("naa-client", CROWD, 1, NULL), CROWD);
  for (int i = 0; i < CROWD; i++) assert_int_equal(naa_finalize(&crowd[i]), NAA_SUCCESS);
  const size_t parked = all_served();
  fprintf(stderr, "  after a crowd of %d clients: %zu threads parked\n", CROWD, parked);
  assert_int_equal(parked, MAX_PARKED);
  assert_int_equal(test_server_stop(&server), 0);

  /* After its park time (1 s here), an idle server has no client thread left. */
  assert_int_equal(test_server_start(&server, NULL), 0);
  test_server_use(&server, FN_ADD1, 1);
  naa_handle h = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  serving_thread();
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  all_served();
  const size_t left = await_named("naa-parked", 0, 0, NULL);
  fprintf(stderr, "  a while later: %zu threads parked\n", left);
  assert_int_equal(left, 0);
  assert_int_equal(test_server_stop(&server), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
