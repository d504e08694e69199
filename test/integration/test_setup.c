/* SPDX-License-Identifier: BSD-3-Clause */
/* Setting handles up and down many times in one process against a real naa-server: the
 * transport Context and its registration cache (doc/transport.md). Registrations are shared
 * between live handles only, so a buffer freed after naa_finalize and replaced by new pages at
 * the same address is registered anew: the NAA sees the new pages, never the old ones (verbs
 * pins the pages of a registration). $NAA_TEST_HANDLES sets the loop's length (default 100;
 * the rdma-vm suite runs 1000). */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1, LIVE = 24 /* below naa-server's default 32 clients per host */ };

static test_server server;

static int start_shared(void **state) {
  (void)state;
  return test_server_start_shared(&server);
}

static int stop_shared(void **state) {
  (void)state;
  return test_server_stop(&server) == 0 ? 0 : -1;
}

static size_t handles_to_run(void) {
  const char *n = getenv("NAA_TEST_HANDLES");
  return n != NULL && atoi(n) > 0 ? (size_t)atoi(n) : 100;
}

static size_t count_not(const uint8_t *buf, size_t size, uint8_t value) {
  size_t bad = 0;
  for (size_t i = 0; i < size; i++) bad += buf[i] != value;
  return bad;
}

/* One handle adding 1 to every byte of `buf` in place, `rounds` times. */
static void add_in_place(uint8_t *buf, size_t size, int rounds) {
  naa_param_t p = {buf, size, false};
  naa_handle h = NAA_HANDLE_NULL;
  assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h), NAA_SUCCESS);
  for (int r = 0; r < rounds; r++) {
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* munmap, then new pages at the same address with new contents: a registration kept from the
 * first handle would send the old pages' bytes and write the answer into them. */
static void test_reuse_after_free(void **state) {
  (void)state;
  const size_t size = 16 * (size_t)sysconf(_SC_PAGESIZE);
  test_server_use(&server, FN_ADD1, 1);
  uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(buf != MAP_FAILED);
  memset(buf, 5, size);
  add_in_place(buf, size, 1);
  assert_int_equal(count_not(buf, size, 6), 0);
  for (int round = 0; round < 3; round++) {
    assert_int_equal(munmap(buf, size), 0);
    uint8_t *again =
        mmap(buf, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    assert_true(again == buf);
    memset(buf, 40 + round, size);
    add_in_place(buf, size, 1);
    assert_int_equal(count_not(buf, size, (uint8_t)(41 + round)), 0);
  }
  assert_int_equal(munmap(buf, size), 0);
}

/* Live handles on one buffer share its registration; each sees the others' results. */
static void test_live_handles_share_a_buffer(void **state) {
  (void)state;
  enum { SIZE = 8192 };
  static uint8_t buf[SIZE];
  naa_param_t p = {buf, SIZE, false};
  naa_handle h[LIVE];
  test_server_use(&server, FN_ADD1, 1);
  for (int i = 0; i < LIVE; i++)
    assert_int_equal(naa_create(FN_ADD1, &p, 1, &p, 1, &h[i]), NAA_SUCCESS);
  for (int i = 0; i < LIVE; i++) {
    assert_int_equal(naa_invoke(&h[i]), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h[i], NULL), NAA_SUCCESS);
  }
  assert_int_equal(count_not(buf, SIZE, LIVE), 0);
  /* Half of them gone, the registration still serves the rest. */
  for (int i = 0; i < LIVE; i += 2) assert_int_equal(naa_finalize(&h[i]), NAA_SUCCESS);
  for (int i = 1; i < LIVE; i += 2) {
    assert_int_equal(naa_invoke(&h[i]), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h[i], NULL), NAA_SUCCESS);
    assert_int_equal(naa_finalize(&h[i]), NAA_SUCCESS);
  }
  assert_int_equal(count_not(buf, SIZE, LIVE + LIVE / 2), 0);
}

/* Create, invoke and finalize, again and again, on the same buffers. */
static void test_create_finalize_loop(void **state) {
  (void)state;
  enum { SIZE = 4096 };
  static uint8_t buf[SIZE];
  const size_t n = handles_to_run();
  test_server_use(&server, FN_ADD1, 1);
  for (size_t i = 0; i < n; i++) add_in_place(buf, SIZE, 1);
  assert_int_equal(count_not(buf, SIZE, (uint8_t)n), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse_after_free),
      cmocka_unit_test(test_live_handles_share_a_buffer),
      cmocka_unit_test(test_create_finalize_loop),
  };
  return cmocka_run_group_tests(tests, start_shared, stop_shared);
}
