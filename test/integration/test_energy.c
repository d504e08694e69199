/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_stats_energy_get(3) against a real naa-server, NAA_ENERGY=powercap reading a directory laid
 * out as /sys/class/powercap whose counters the test advances: inside each invocation's window
 * (between naa_invoke and naa_wait) by 2 J on the package and 0.5 J on its DRAM, and between
 * the windows by 10 J, which no invocation is charged with.
 * The NAA's joules (doc/protocol.md §3.5): a second naa-server, measuring a tree of its own that
 * its plugin kernel "joule" advances by exactly 1 J per run, reports them in each reply's
 * immediate, which the application then sees without them; the
 * conformance NAA, reference-like, reports none, and the handle to it works as before. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "naa.h"
#include "server.h"

enum { FN_ADD1 = 1, FN_JOULE = 107, N = 5, S = 4096, R = 12 };

static test_server server, measuring, conformance;
static uint8_t buf[S];
static char root[64], naa_root[64];
static unsigned long long package_uj = 5000, dram_uj = 300;

static const char *tree = root; /* the one zone() and write_file() make */

static void write_file(const char *dir, const char *file, const char *text) {
  char path[160];
  snprintf(path, sizeof path, "%s/%s/%s", tree, dir, file);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}
static void write_counter(const char *dir, unsigned long long uj) {
  char text[32];
  snprintf(text, sizeof text, "%llu\n", uj);
  write_file(dir, "energy_uj", text);
}
static void zone(const char *dir, const char *name, unsigned long long uj) {
  char path[160];
  snprintf(path, sizeof path, "%s/%s", tree, dir);
  mkdir(path, 0755);
  write_file(dir, "name", name);
  write_file(dir, "max_energy_range_uj", "262143328850\n");
  write_counter(dir, uj);
}

static void test_off(void **state) {
  (void)state;
  naa_stats_energy_t t = NAA_STATS_ENERGY_INIT;
  assert_int_equal(naa_stats_energy_get(&t, NULL, 0), NAA_ERR_STATE); /* statistics off */
  assert_int_equal(naa_stats_energy_get(NULL, NULL, 0), NAA_ERR_INVALID_ARGUMENT);
  naa_stats_energy_t unset;
  memset(&unset, 0, sizeof unset);
  assert_int_equal(naa_stats_energy_get(&unset, NULL, 0), NAA_ERR_INVALID_ARGUMENT);
}

static void test_windows(void **state) {
  (void)state;
  naa_param_t p = {buf, S, false};
  naa_handle h = NAA_HANDLE_NULL;
  const char *const params[] = {"NAA_STATS=1", NULL};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.params = params;
  assert_int_equal(naa_create_attr(FN_ADD1, &p, 1, &p, 1, &attr, &h), NAA_SUCCESS);
  for (int i = 0; i < N; i++) {
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    write_counter("intel-rapl:0", package_uj += 2000000);
    write_counter("intel-rapl:0:0", dram_uj += 500000);
    assert_int_equal(naa_wait(&h, NULL), NAA_SUCCESS);
    write_counter("intel-rapl:0", package_uj += 10000000); /* outside any window */
  }
  /* A caller built against a later header, with longer entries: libnaa writes what it knows
   * and strides by the caller's size. */
  struct {
    naa_stats_energy_function_t f;
    unsigned char later[16];
  } f[2];
  memset(f, 0xab, sizeof f);
  naa_stats_energy_t t = NAA_STATS_ENERGY_INIT;
  t.function_size = sizeof f[0];
  assert_int_equal(naa_stats_energy_get(&t, &f[0].f, 2), NAA_SUCCESS);
  print_message("host_source: %s; host_unavailable: %s\n", t.host_source, t.host_unavailable);
  assert_string_equal(t.host_source, "powercap (package-0, dram of package-0)");
  assert_string_equal(t.host_unavailable, "");
  assert_int_equal(t.n_functions, 1);
  assert_int_equal(f[0].f.function_code, FN_ADD1);
  assert_int_equal(f[0].f.windows, N);
  assert_int_equal(f[0].f.bytes, (uint64_t)N * 2 * S);
  assert_true(f[0].f.window_s > 0);
  print_message("host_j: %.6f over %llu windows\n", f[0].f.host_j,
                (unsigned long long)f[0].f.windows);
  assert_true(f[0].f.host_j > N * 2.5 - 1e-6 && f[0].f.host_j < N * 2.5 + 1e-6);
  assert_int_equal(f[0].later[0], 0xab);
  assert_int_equal(f[1].f.function_code, 0xabababab); /* one entry only */
  /* naa_stats_get is as it was. */
  naa_stats_t totals;
  assert_int_equal(naa_stats_get(&totals, NULL, 0), NAA_SUCCESS);
  assert_int_equal(totals.n_functions, 1);
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
}

/* The entry of function code fn at the server listening on port, in f[0..n). */
static const naa_stats_energy_function_t *entry_of(const naa_stats_energy_function_t *f, size_t n,
                                                   unsigned fn, int port) {
  char naa[64];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), port);
  for (size_t i = 0; i < n; i++)
    if (f[i].function_code == fn && strcmp(f[i].naa, naa) == 0) return &f[i];
  return NULL;
}

/* N invocations of fn over one handle with `regions` in-place regions of S bytes to naa, then
 * the energy entries. */
static size_t invoke_n(unsigned fn, const test_server *naa, size_t regions,
                       naa_stats_energy_function_t *f, size_t max) {
  static uint8_t bufs[R][S];
  naa_param_t p[R];
  for (size_t k = 0; k < regions; k++) p[k] = (naa_param_t){bufs[k], S, false};
  naa_handle h = NAA_HANDLE_NULL;
  const char *const params[] = {"NAA_STATS=1", NULL};
  naa_attr_t attr = NAA_ATTR_INIT;
  char where[80];
  snprintf(where, sizeof where, "%s:%d", test_host(), naa->port);
  attr.naa = where;
  attr.params = params;
  assert_int_equal(naa_create_attr(fn, p, regions, p, regions, &attr, &h), NAA_SUCCESS);
  for (int i = 0; i < N; i++) {
    naa_status st;
    assert_int_equal(naa_invoke(&h), NAA_SUCCESS);
    assert_int_equal(naa_wait(&h, &st), NAA_SUCCESS);
    assert_int_equal(st.immediate, 0); /* the energy bits taken out: as from any NAA */
  }
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  naa_stats_energy_t t = NAA_STATS_ENERGY_INIT;
  memset(f, 0, max * sizeof *f);
  assert_int_equal(naa_stats_energy_get(&t, f, max), NAA_SUCCESS);
  return t.n_functions < max ? t.n_functions : max;
}

/* The measuring NAA's joules, `runs` of its kernel so far on the function line of fn, each of
 * `bytes` out and back. */
static void check_naa_joules(unsigned regions, uint64_t runs, uint64_t bytes) {
  naa_stats_energy_function_t f[8];
  const size_t n = invoke_n(FN_JOULE, &measuring, regions, f, 8);
  const naa_stats_energy_function_t *e = entry_of(f, n, FN_JOULE, measuring.port);
  assert_non_null(e);
  print_message(
      "NAA: %.6f J over %llu kernel runs (%s), %llu bytes; host %.6f J over %llu windows\n",
      e->naa_j, (unsigned long long)e->naa_runs, e->naa_source, (unsigned long long)e->naa_bytes,
      e->host_j, (unsigned long long)e->windows);
  assert_int_equal(e->naa_runs, runs);
  assert_true(e->naa_j > runs * 1.0 - 1e-6 && e->naa_j < runs * 1.0 + 1e-6); /* 1 J per run */
  assert_string_equal(e->naa_source, "powercap (package-0)");
  assert_int_equal(e->naa_bytes, bytes);
  /* The host's tree did not move meanwhile: the NAA's joules are not the host's. */
  assert_int_equal(e->windows, runs);
  assert_true(e->host_j < 1e-9);
}

/* One region: the ask and the answer ride in the connection's private data over ofi+tcp and
 * ofi+shm (doc/protocol.md §3.4). */
static void test_naa_joules(void **state) {
  (void)state;
  check_naa_joules(1, N, (uint64_t)N * 2 * S);
}

/* R regions do not fit the private data: the ask and the answer go with the MRSP messages. */
static void test_naa_joules_by_messages(void **state) {
  (void)state;
  check_naa_joules(R, 2 * N, (uint64_t)N * 2 * S + (uint64_t)N * 2 * S * R);
}

static void test_reference_naa(void **state) {
  (void)state;
  naa_stats_energy_function_t f[8];
  const size_t n = invoke_n(FN_ADD1, &conformance, 1, f, 8);
  const naa_stats_energy_function_t *e = entry_of(f, n, FN_ADD1, conformance.port);
  assert_non_null(e);
  assert_int_equal(e->windows, N); /* the host's figure, as ever */
  assert_int_equal(e->naa_runs, 0);
  assert_true(e->naa_j == 0);
  assert_string_equal(e->naa_source, "");
}

int main(void) {
  unsetenv("NAA_STATS");
  unsetenv("NAA_TRACE");
  snprintf(root, sizeof root, "/tmp/naa-powercap.XXXXXX");
  if (mkdtemp(root) == NULL) return 99;
  zone("intel-rapl:0", "package-0\n", package_uj);
  zone("intel-rapl:0:0", "dram\n", dram_uj);
  /* The measuring NAA's own tree: a package zone alone, which its kernel advances. */
  snprintf(naa_root, sizeof naa_root, "/tmp/naa-powercap.XXXXXX");
  if (mkdtemp(naa_root) == NULL) return 99;
  tree = naa_root;
  zone("intel-rapl:0", "package-0\n", 7000);
  tree = root;
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == NULL) {
    fprintf(stderr, "test_energy: NAA_TEST_KERNEL_PLUGIN is not set (make check sets it)\n");
    return 99;
  }
  const char *const with_plugin[] = {"--kernel", plugin, NULL};
  setenv("NAA_ENERGY", "powercap", 1);
  setenv("NAA_POWERCAP_ROOT", naa_root, 1);
  if (test_server_start(&measuring, with_plugin) != 0) return 99;
  setenv("NAA_POWERCAP_ROOT", root, 1); /* the host's, before libnaa reads it */
  /* No re-arm window: this test is about energy, not pacing (test_conformance's). */
  const char *const no_window[] = {"--window-us", "0", NULL};
  if (test_peer_start(&conformance, "NAA_CONFORMANCE_NAA", no_window) != 0) return 99;
  if (test_server_start_shared(&server) != 0) return 99;
  test_server_use(&server, FN_ADD1, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off),           cmocka_unit_test(test_windows),
      cmocka_unit_test(test_naa_joules),    cmocka_unit_test(test_naa_joules_by_messages),
      cmocka_unit_test(test_reference_naa),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_server_stop(&server);
  test_server_stop(&conformance);
  test_server_stop(&measuring);
  char rm[160];
  snprintf(rm, sizeof rm, "rm -rf %s %s", root, naa_root);
  if (system(rm) != 0) return 1;
  return failed;
}
