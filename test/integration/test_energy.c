/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_stats_energy_get(3) against a real naa-server, NAA_ENERGY=powercap reading a directory laid
 * out as /sys/class/powercap whose counters the test advances: inside each invocation's window
 * (between naa_invoke and naa_wait) by 2 J on the package and 0.5 J on its DRAM, and between
 * the windows by 10 J, which no invocation is charged with. */
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

enum { FN_ADD1 = 1, N = 5, S = 4096 };

static test_server server;
static uint8_t buf[S];
static char root[64];
static unsigned long long package_uj = 5000, dram_uj = 300;

static void write_file(const char *dir, const char *file, const char *text) {
  char path[160];
  snprintf(path, sizeof path, "%s/%s/%s", root, dir, file);
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
  snprintf(path, sizeof path, "%s/%s", root, dir);
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

int main(void) {
  unsetenv("NAA_STATS");
  unsetenv("NAA_TRACE");
  snprintf(root, sizeof root, "/tmp/naa-powercap.XXXXXX");
  if (mkdtemp(root) == NULL) return 99;
  zone("intel-rapl:0", "package-0\n", package_uj);
  zone("intel-rapl:0:0", "dram\n", dram_uj);
  setenv("NAA_ENERGY", "powercap", 1);
  setenv("NAA_POWERCAP_ROOT", root, 1);
  if (test_server_start_shared(&server) != 0) return 99;
  test_server_use(&server, FN_ADD1, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off),
      cmocka_unit_test(test_windows),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_server_stop(&server);
  char rm[96];
  snprintf(rm, sizeof rm, "rm -rf %s", root);
  if (system(rm) != 0) return 1;
  return failed;
}
