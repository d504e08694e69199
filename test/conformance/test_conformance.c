/* SPDX-License-Identifier: BSD-3-Clause */
/* libnaa against conformance-naa, a peer that behaves like the NAAs in the field (see
 * conformance_naa.cpp and doc/protocol.md §4.4): back-to-back invocations with no gap between
 * naa_wait and naa_invoke at 1 B .. 16 MiB, single-send, in place, 31 regions; MRSP errors,
 * "Server overlad", an unanswered request (in flight until naa_cancel). One case opens a wide
 * window (the peer's order window@1) and requires that an unpaced host is stranded in it and a
 * host paced by it is not: it proves the window is real and that pacing closes it, so that the
 * other cases pass because of the pacing and not by luck. Every verdict is forced: the peer
 * strands only a request it saw inside its window, never on its own or the host's lateness.
 * The other cases run the peer with a window of NAA_CONFORMANCE_WINDOW_US (default 1000) and
 * pace the host by the same amount: a paced host can never be caught, however loaded the
 * machine. (The default guard, NAA_PACING_US = 100, is sized for the reference NAA's real window,
 * measured in doc/protocol.md §4.4.)
 * Against the peer's model of the reference's event loop (--event-loop), the host runs at its
 * defaults, its guard adapting, at three log levels.
 * NAA_CONFORMANCE_ITERATIONS (default 1000) and NAA_CONFORMANCE_LARGE_ITERATIONS (for 1 MiB
 * and 16 MiB; default the same for 1 MiB, a tenth of it for 16 MiB, whose copies would
 * otherwise take most of the suite's time) set the loop lengths, NAA_CONFORMANCE_SLOW_US the slow
 * mode's delay, NAA_CONFORMANCE_EVENT_US the event loop's; NAA_TEST_ONLY=NAME runs one case. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1, FN_UNKNOWN = 9, MAX_REGIONS = 31 };

static char window_arg[32]; /* the peer's window and the host's guard, in microseconds */

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? strtol(v, NULL, 10) : fallback;
}

/* A conformance NAA with `extra` arguments beyond the window. */
static void start_peer(test_server *s, const char *extra1, const char *extra2) {
  const char *args[] = {"--window-us", window_arg, extra1, extra2, NULL};
  assert_int_equal(test_peer_start(s, "NAA_CONFORMANCE_NAA", args), 0);
}

static int setup(void **state) {
  (void)state;
  /* 10 s, stretched for sanitizer builds: one of 1000 invocations of 16 MiB under ASan on a
   * loaded machine took longer. */
  char timeout[16];
  snprintf(timeout, sizeof timeout, "%d", (int)(10 * test_time_scale()));
  setenv("NAA_TIMEOUT", timeout, 1);
  snprintf(window_arg, sizeof window_arg, "%ld", env_long("NAA_CONFORMANCE_WINDOW_US", 1000));
  setenv("NAA_PACING_US", window_arg, 1);
  return 0;
}

/* One in-place region through add1, invoked back to back `rounds` times. */
static void back_to_back(size_t size, long rounds) {
  test_server s;
  start_peer(&s, NULL, NULL);
  uint8_t *buf = calloc(1, size);
  assert_non_null(buf);
  naa_param_t p = {buf, size, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  for (long r = 1; r <= rounds; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    int rc = naa_wait(&h, &st);
    if (rc != NAA_SUCCESS)
      fail_msg("invocation %ld of %ld at %zu B: %s", r, rounds, size, naa_strerror(rc));
    assert_int_equal(buf[0], (uint8_t)r);
    assert_int_equal(buf[size - 1], (uint8_t)r);
  }
  for (size_t i = 0; i < size; i++) assert_int_equal(buf[i], (uint8_t)rounds);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  free(buf);
  printf("back to back: %ld invocations of %zu B completed\n", rounds, size);
  assert_int_equal(test_server_stop(&s), 0);
}

static void one_byte(void **state) {
  (void)state;
  back_to_back(1, env_long("NAA_CONFORMANCE_ITERATIONS", 1000));
}
static void four_kib(void **state) {
  (void)state;
  back_to_back(4096, env_long("NAA_CONFORMANCE_ITERATIONS", 1000));
}
static void one_mib(void **state) {
  (void)state;
  back_to_back(1 << 20, env_long("NAA_CONFORMANCE_LARGE_ITERATIONS",
                                 env_long("NAA_CONFORMANCE_ITERATIONS", 1000)));
}
static void sixteen_mib(void **state) {
  (void)state;
  back_to_back(16 << 20, env_long("NAA_CONFORMANCE_LARGE_ITERATIONS",
                                  env_long("NAA_CONFORMANCE_ITERATIONS", 1000) / 10));
}

/* A single-send input, a plain input and an output-only region: data writes precede the paced
 * final write. The NAA adds 1 to its copy of every region, so the output (which the host never
 * writes) reads k after k invocations. */
static void single_send_and_data_writes(void **state) {
  (void)state;
  test_server s;
  start_peer(&s, NULL, NULL);
  static uint8_t constant[4096], input[1024], output[64];
  naa_param_t in[2] = {{constant, sizeof constant, true}, {input, sizeof input, false}};
  naa_param_t out[1] = {{output, sizeof output, false}};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 2);
  assert_int_equal(naa_create(FN_ADD1, in, 2, out, 1, &h), NAA_SUCCESS);
  long rounds = env_long("NAA_CONFORMANCE_ITERATIONS", 1000);
  for (long r = 1; r <= rounds; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
    assert_int_equal(output[0], (uint8_t)r);
    assert_int_equal(output[63], (uint8_t)r);
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

/* The most regions an MRSP request may carry, each one byte in place. */
static void thirty_one_regions(void **state) {
  (void)state;
  test_server s;
  start_peer(&s, NULL, NULL);
  uint8_t bytes[MAX_REGIONS] = {0};
  naa_param_t p[MAX_REGIONS];
  for (int i = 0; i < MAX_REGIONS; i++) p[i] = (naa_param_t){&bytes[i], 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, MAX_REGIONS);
  assert_int_equal(naa_create(FN_ADD1, p, MAX_REGIONS, p, MAX_REGIONS, &h), NAA_SUCCESS);
  long rounds = env_long("NAA_CONFORMANCE_ITERATIONS", 1000);
  for (long r = 1; r <= rounds; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
    for (int i = 0; i < MAX_REGIONS; i++) assert_int_equal(bytes[i], (uint8_t)r);
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

/* A one-byte in-place region on a fresh conformance NAA (with `extra` arguments), for
 * function code `fn`. */
static void one_byte_handle(test_server *s, unsigned fn, uint8_t *b, naa_handle *h,
                            const char *extra1, const char *extra2) {
  start_peer(s, extra1, extra2);
  naa_param_t p = {b, 1, false};
  *h = NAA_HANDLE_NULL;
  test_server_use(s, fn, 1);
  assert_int_equal(naa_create(fn, &p, 1, &p, 1, h), NAA_SUCCESS);
}

/* A request the NAA never answered stays in flight: waiting again times out again,
 * naa_invoke is refused, and naa_cancel abandons it. With `reinvoke` the handle, connected
 * again, then runs an add1 on *b correctly. */
static void expect_in_flight_then_cancel(test_server *s, naa_handle *h, uint8_t *b, int reinvoke) {
  naa_status st;
  assert_int_equal(naa_wait(h, &st), NAA_ERR_TIMEOUT); /* still in flight */
  assert_int_equal(naa_invoke(h), NAA_ERR_STATE);
  assert_int_equal(naa_cancel(h), NAA_SUCCESS);
  assert_int_equal(naa_wait(h, &st), NAA_ERR_STATE); /* nothing in flight any more */
  if (reinvoke) {
    const uint8_t before = *b = 7;
    assert_int_equal(naa_invoke(h), NAA_SUCCESS);
    assert_int_equal(naa_wait(h, &st), NAA_SUCCESS);
    assert_int_equal(*b, (uint8_t)(before + 1));
  }
  assert_int_equal(naa_finalize(h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(s), 0);
  setup(NULL);
}

/* The window is real, and pacing is what closes it. The peer's window after reply 1 is opened
 * to 1 s (scaled; --order window@1), far beyond any re-invocation gap of a loaded machine, and
 * a request is stranded only when the peer saw it inside the window: without pacing,
 * invocation 2 is stranded for certain (its wait times out with the invocation in flight, and
 * naa_cancel gets the handle going again); with the guard at the window, the same peer serves
 * it for certain. */
static void pacing_off_is_stranded(void **state) {
  (void)state;
  char window[48], guard[32], timeout[16];
  const long window_us = (long)(1000000 * test_time_scale());
  snprintf(window, sizeof window, "window@1=%ld", window_us);
  snprintf(guard, sizeof guard, "%ld", window_us);
  snprintf(timeout, sizeof timeout, "%d", (int)(2 * test_time_scale()));
  for (int paced = 0; paced <= 1; paced++) {
    test_server s;
    setenv("NAA_PACING_US", paced ? guard : "0", 1);
    setenv("NAA_TIMEOUT", timeout, 1);
    uint8_t b = 0;
    naa_handle h;
    one_byte_handle(&s, FN_ADD1, &b, &h, "--order", window);
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS); /* no window precedes the first */
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    const int rc = naa_wait(&h, &st);
    printf("window of %ld us after reply 1, guard %s us: invocation 2: %s\n", window_us,
           paced ? guard : "0", naa_strerror(rc));
    if (paced) {
      assert_int_equal(rc, NAA_SUCCESS);
      assert_int_equal(b, 2);
      assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
      assert_int_equal(test_server_stop(&s), 0);
    } else {
      assert_int_equal(rc, NAA_ERR_TIMEOUT);
      expect_in_flight_then_cancel(&s, &h, &b, 1);
    }
  }
  setup(NULL);
}

/* A slow NAA: every event handled NAA_CONFORMANCE_SLOW_US (default 400 ms, scaled) late, its
 * window a quarter of that beyond --window-us 0, far beyond a loaded machine's re-invocation
 * gap. The guard NAA_PACING_US=100 alone puts invocation 2 inside it (stranded for certain);
 * the same floor with the adaptive guard (on by default) waits at least half the first round
 * trip, which holds the whole delay, so it never enters the window. Returns the invocation
 * that timed out, 0 if none did. */
enum { SLOW_ROUNDS = 4 };
static long slow_loop(const char *adaptive) {
  char slow[32], timeout[16];
  snprintf(slow, sizeof slow, "%ld",
           env_long("NAA_CONFORMANCE_SLOW_US", (long)(400000 * test_time_scale())));
  snprintf(timeout, sizeof timeout, "%d", (int)(2 * test_time_scale()));
  strcpy(window_arg, "0");
  setenv("NAA_PACING_US", "100", 1);
  setenv("NAA_PACING_ADAPTIVE", adaptive, 1);
  setenv("NAA_TIMEOUT", timeout, 1);
  test_server s;
  uint8_t b = 0;
  naa_handle h;
  one_byte_handle(&s, FN_ADD1, &b, &h, "--slow-us", slow);
  long timed_out = 0;
  for (long r = 1; r <= SLOW_ROUNDS && timed_out == 0; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    int rc = naa_wait(&h, &st);
    if (rc == NAA_ERR_TIMEOUT)
      timed_out = r;
    else
      assert_int_equal(rc, NAA_SUCCESS), assert_int_equal(b, (uint8_t)r);
  }
  printf("slow NAA (%s us), NAA_PACING_ADAPTIVE=%s: %s\n", slow, adaptive,
         timed_out ? "stranded" : "every invocation completed");
  if (timed_out) printf("  stranded at invocation %ld of %d\n", timed_out, SLOW_ROUNDS);
  if (timed_out) assert_int_equal(naa_cancel(&h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
  unsetenv("NAA_PACING_ADAPTIVE");
  setup(NULL);
  return timed_out;
}

static void slow_naa_strands_fixed_guard(void **state) {
  (void)state;
  assert_int_equal(slow_loop("0"), 2); /* the first invocation follows MRSP, no window */
}

static void slow_naa_adaptive_guard(void **state) {
  (void)state;
  assert_int_equal(slow_loop("1"), 0);
}

/* The reference's event loop (conformance-naa --event-loop): after every message it sends, the
 * MRSP advertisement included, it handles that send's completion as one event and only then
 * re-arms, so its window lasts one event's handling (NAA_CONFORMANCE_EVENT_US, default 2 ms,
 * scaled: each event is handled that late) and the first invocation can fall into it. libnaa at
 * its defaults (NAA_PACING_US and NAA_PACING_ADAPTIVE unset) runs NAA_CONFORMANCE_ITERATIONS
 * (default 1000) invocations back to back from the first on, at the log levels error, the
 * default and debug (logging changes the host's timing). Returns the invocation that timed out,
 * 0 if none did. */
static long event_loop_run(const char *log_level) {
  char slow[32], timeout[16];
  snprintf(slow, sizeof slow, "%ld",
           env_long("NAA_CONFORMANCE_EVENT_US", (long)(2000 * test_time_scale())));
  snprintf(timeout, sizeof timeout, "%d", (int)(2 * test_time_scale()));
  unsetenv("NAA_PACING_US");
  setenv("NAA_TIMEOUT", timeout, 1);
  if (log_level != NULL) setenv("NAA_LOG_LEVEL", log_level, 1);
  test_server s;
  const char *args[] = {"--window-us", "0", "--event-loop", "--slow-us", slow, NULL};
  assert_int_equal(test_peer_start(&s, "NAA_CONFORMANCE_NAA", args), 0);
  uint8_t b = 0;
  naa_param_t p = {&b, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  naa_handle_info_t info;
  assert_int_equal(naa_handle_info(&h, &info), NAA_SUCCESS);
  const long rounds = env_long("NAA_CONFORMANCE_ITERATIONS", 1000);
  long timed_out = 0;
  for (long r = 1; r <= rounds && timed_out == 0; r++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    const int rc = naa_wait(&h, &st);
    if (rc == NAA_ERR_TIMEOUT)
      timed_out = r;
    else
      assert_int_equal(rc, NAA_SUCCESS), assert_int_equal(b, (uint8_t)r);
  }
  const long long connected_guard = (long long)info.pacing_us;
  assert_int_equal(naa_handle_info(&h, &info), NAA_SUCCESS);
  printf("event loop (%s us per event), log level %s, guard %lld us, then %lld us: ", slow,
         log_level != NULL ? log_level : "default", connected_guard, (long long)info.pacing_us);
  if (timed_out)
    printf("stranded at invocation %ld of %ld\n", timed_out, rounds);
  else
    printf("%ld invocations completed\n", rounds);
  if (timed_out) assert_int_equal(naa_cancel(&h), NAA_SUCCESS);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
  unsetenv("NAA_LOG_LEVEL");
  setup(NULL);
  return timed_out;
}

static void event_loop_defaults(void **state) {
  (void)state;
  const char *saved = getenv("NAA_LOG_LEVEL");
  char level[32] = "";
  if (saved != NULL) snprintf(level, sizeof level, "%s", saved);
  unsetenv("NAA_LOG_LEVEL");
  long stranded = event_loop_run("error");
  if (stranded == 0) stranded = event_loop_run(NULL);
  if (stranded == 0) stranded = event_loop_run("debug");
  if (*level != '\0') setenv("NAA_LOG_LEVEL", level, 1);
  assert_int_equal(stranded, 0);
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Pacing is a timer, never a sleep in naa_invoke: with a guard of 3 s from the handle's MRSP
 * reply, the invocation right after naa_create returns at once (it posted the data writes,
 * not the final write), naa_test finds it still running, and naa_wait completes it once the
 * guard has passed. The guard starts inside naa_create, after `asked`: a naa_invoke that slept
 * it out would return 3 s after `asked` or later, a naa_test before then finds the final write
 * not yet out, and naa_wait returns after. */
static void invoke_does_not_wait_for_the_guard(void **state) {
  (void)state;
  test_server s;
  setenv("NAA_PACING_US", "3000000", 1);
  start_peer(&s, NULL, NULL);
  uint8_t b = 0;
  naa_param_t p = {&b, 1, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 1);
  const double asked = seconds_now();
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  const double created = seconds_now();
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  const double invoked = seconds_now();
  bool flag = true;
  naa_status st;
  assert_int_equal(naa_test(&h, &flag, &st), NAA_SUCCESS);
  const double tested = seconds_now();
  assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
  const double done = seconds_now();
  printf("pacing guard 3 s: naa_invoke took %.6f s, naa_wait returned %.3f s after naa_create\n",
         invoked - created, done - created);
  assert_true(invoked - asked < 3.0);
  if (tested - asked < 3.0) assert_false(flag); /* its final write is not out yet */
  assert_true(done - asked >= 3.0);             /* nor before the guard */
  assert_int_equal(b, 1);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

/* The reference answers an unknown function code with nothing at all. */
static void unknown_code_is_never_answered(void **state) {
  (void)state;
  test_server s;
  setenv("NAA_TIMEOUT", "1", 1);
  uint8_t b = 0;
  naa_handle h;
  one_byte_handle(&s, FN_UNKNOWN, &b, &h, NULL, NULL);
  naa_status st;
  assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
  assert_int_equal(naa_wait(&h, &st), NAA_ERR_TIMEOUT);
  expect_in_flight_then_cancel(&s, &h, &b, 0);
}

/* MRSP error 0x01 for a request beyond the NAA's memory: naa_create fails cleanly. */
static void mrsp_error_answer(void **state) {
  (void)state;
  test_server s;
  start_peer(&s, "--memory", "4K");
  static uint8_t big[8192];
  naa_param_t p = {big, sizeof big, false};
  naa_handle h = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_ERR_PROTOCOL);
  assert_int_equal(test_server_stop(&s), 0);
}

/* A full NAA rejects with "Server overlad" and no further data; the first client is unharmed. */
static void full_naa_rejects(void **state) {
  (void)state;
  test_server s;
  start_peer(&s, "--max-clients", "1");
  uint8_t a = 0, b = 0;
  naa_param_t pa = {&a, 1, false}, pb = {&b, 1, false};
  naa_handle ha = NAA_HANDLE_NULL, hb = NAA_HANDLE_NULL;
  test_server_use(&s, FN_ADD1, 1);
  assert_int_equal(naa_create(FN_ADD1, &pa, 1, &pa, 1, &ha), NAA_SUCCESS);
  assert_int_equal(naa_create(FN_ADD1, &pb, 1, &pb, 1, &hb), NAA_ERR_CONNECTION);
  naa_status st;
  assert_int_equal(naa_invoke(&ha), NAA_SUCCESS);
  assert_int_equal(naa_wait(&ha, &st), NAA_SUCCESS);
  assert_int_equal(a, 1);
  assert_int_equal(naa_finalize(&ha), NAA_SUCCESS);
  assert_int_equal(test_server_stop(&s), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(one_byte, setup),
      cmocka_unit_test_setup(four_kib, setup),
      cmocka_unit_test_setup(one_mib, setup),
      cmocka_unit_test_setup(sixteen_mib, setup),
      cmocka_unit_test_setup(single_send_and_data_writes, setup),
      cmocka_unit_test_setup(thirty_one_regions, setup),
      cmocka_unit_test_setup(pacing_off_is_stranded, setup),
      cmocka_unit_test_setup(slow_naa_strands_fixed_guard, setup),
      cmocka_unit_test_setup(slow_naa_adaptive_guard, setup),
      cmocka_unit_test_setup(event_loop_defaults, setup),
      cmocka_unit_test_setup(invoke_does_not_wait_for_the_guard, setup),
      cmocka_unit_test_setup(unknown_code_is_never_answered, setup),
      cmocka_unit_test_setup(mrsp_error_answer, setup),
      cmocka_unit_test_setup(full_naa_rejects, setup),
  };
  if (getenv("NAA_TEST_ONLY") != NULL) cmocka_set_test_filter(getenv("NAA_TEST_ONLY"));
  return cmocka_run_group_tests_name("conformance", tests, NULL, NULL);
}
