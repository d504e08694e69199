// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of naa-server's kernel registry, built-in kernels and plugin loading.
// NAA_TEST_KERNEL_PLUGIN names the built kernel_plugin.c; without it the plugin test
// is skipped.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 declares its functions without C linkage.
extern "C" {
#include <cmocka.h>
}

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels.hpp"

namespace {

using naa::server::KernelRegistry;

constexpr uint8_t IN = NAA_REGION_INPUT;
constexpr uint8_t OUT = NAA_REGION_OUTPUT;
constexpr uint8_t INOUT = NAA_REGION_INPUT | NAA_REGION_OUTPUT;

naa_kernel_region region(std::vector<double> &values, uint8_t flags) {
  return {values.data(), values.size() * sizeof(double), flags};
}

naa_kernel_region region(std::vector<uint8_t> &bytes, uint8_t flags) {
  return {bytes.data(), bytes.size(), flags};
}

naa_kernel_region region(std::vector<uint64_t> &words, uint8_t flags) {
  return {words.data(), words.size() * sizeof(uint64_t), flags};
}

uint8_t run(const KernelRegistry &registry, uint8_t code,
            const std::vector<naa_kernel_region> &regions) {
  const naa_kernel *kernel = registry.find(code);
  assert_non_null(kernel);
  return kernel->run(regions.data(), regions.size(), 0);
}

uint8_t run(uint8_t code, const std::vector<naa_kernel_region> &regions) {
  return run(KernelRegistry(), code, regions);
}

// Exact comparison: every expected value is an integer that doubles hold exactly.
void expect_doubles(const std::vector<double> &got, std::initializer_list<double> want) {
  assert_int_equal(got.size(), want.size());
  size_t i = 0;
  for (double w : want) {
    if (got[i] != w) fail_msg("element %zu is %g, expected %g", i, got[i], w);
    i++;
  }
}

void expect_bytes(const std::vector<uint8_t> &got, std::initializer_list<uint8_t> want) {
  assert_int_equal(got.size(), want.size());
  assert_memory_equal(got.data(), std::data(want), got.size());
}

// --- byte kernels --------------------------------------------------------------------

void test_add1_wraps_every_region(void **) {
  std::vector<uint8_t> a = {0x00, 0x7f, 0xfe, 0xff};
  std::vector<uint8_t> b = {0x10};
  std::vector<uint8_t> c = {0xff, 0x01};
  assert_int_equal(run(1, {region(a, INOUT), region(b, IN), region(c, OUT)}), 0);
  expect_bytes(a, {0x01, 0x80, 0xff, 0x00});
  expect_bytes(b, {0x11});
  expect_bytes(c, {0x00, 0x02});
}

void test_add2(void **) {
  std::vector<uint8_t> a = {0xfe, 0xff, 0x03};
  assert_int_equal(run(2, {region(a, INOUT)}), 0);
  expect_bytes(a, {0x00, 0x01, 0x05});
}

void test_noop(void **) {
  std::vector<uint8_t> a = {0x01, 0x02};
  std::vector<uint8_t> b = {0x03};
  assert_int_equal(run(3, {region(a, IN), region(b, OUT)}), 0);
  expect_bytes(a, {0x01, 0x02});
  expect_bytes(b, {0x03});
}

// --- vecadd_f64 ----------------------------------------------------------------------

void test_vecadd(void **) {
  std::vector<double> a = {1, 2, -3};
  std::vector<double> b = {10, 20, 30};
  std::vector<double> sum(3, -1);
  assert_int_equal(run(10, {region(a, IN), region(b, IN), region(sum, OUT)}), 0);
  expect_doubles(sum, {11, 22, 27});
  expect_doubles(a, {1, 2, -3});
  expect_doubles(b, {10, 20, 30});
}

void test_vecadd_in_place(void **) {
  std::vector<double> a = {1, 2};
  std::vector<double> b = {0.5, 4};
  assert_int_equal(run(10, {region(a, IN), region(b, INOUT)}), 0);
  expect_doubles(b, {1.5, 6});
}

// Regions need not be aligned for doubles (UBSan checks the accesses).
void test_vecadd_unaligned(void **) {
  const double a[] = {1, 2}, b[] = {3, 4};
  std::vector<uint8_t> bytes(1 + 3 * sizeof a);
  uint8_t *base = bytes.data() + 1;
  std::memcpy(base, a, sizeof a);
  std::memcpy(base + sizeof a, b, sizeof b);
  const std::vector<naa_kernel_region> regions = {
      {base, sizeof a, IN}, {base + sizeof a, sizeof b, IN}, {base + 2 * sizeof a, sizeof a, OUT}};
  assert_int_equal(run(10, regions), 0);
  double sum[2];
  std::memcpy(sum, base + 2 * sizeof a, sizeof sum);
  assert_true(sum[0] == 4 && sum[1] == 6);
}

void test_vecadd_bad_layout(void **) {
  std::vector<double> a(2), b(2), c(2);
  assert_int_equal(run(10, {region(a, IN), region(c, OUT)}), NAA_KERNEL_RC_BAD_LAYOUT);
  assert_int_equal(run(10, {region(a, IN), region(b, IN)}), NAA_KERNEL_RC_BAD_LAYOUT);
  assert_int_equal(run(10, {}), NAA_KERNEL_RC_BAD_LAYOUT);
}

void test_vecadd_bad_size(void **) {
  std::vector<double> a(2), b(3), c(2);
  assert_int_equal(run(10, {region(a, IN), region(b, IN), region(c, OUT)}), NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(run(10, {region(a, IN), region(c, IN), region(b, OUT)}), NAA_KERNEL_RC_BAD_SIZE);
  std::vector<uint8_t> x(12), y(12), z(12);
  assert_int_equal(run(10, {region(x, IN), region(y, IN), region(z, OUT)}), NAA_KERNEL_RC_BAD_SIZE);
}

// --- daxpy ---------------------------------------------------------------------------

void test_daxpy(void **) {
  std::vector<double> alpha = {2};
  std::vector<double> x = {1, 2, 3};
  std::vector<double> y = {10, 20, 30};
  std::vector<double> r(3, -1);
  assert_int_equal(run(11, {region(alpha, IN), region(x, IN), region(y, IN), region(r, OUT)}), 0);
  expect_doubles(r, {12, 24, 36});
  expect_doubles(y, {10, 20, 30});
}

void test_daxpy_in_place(void **) {
  std::vector<double> alpha = {-1};
  std::vector<double> x = {1, 2};
  std::vector<double> y = {10, 20};
  assert_int_equal(run(11, {region(alpha, IN), region(x, IN), region(y, INOUT)}), 0);
  expect_doubles(y, {9, 18});
}

void test_daxpy_bad_layout(void **) {
  std::vector<double> alpha = {2}, x(2), y(2);
  assert_int_equal(run(11, {region(alpha, IN), region(y, INOUT)}), NAA_KERNEL_RC_BAD_LAYOUT);
  assert_int_equal(run(11, {region(alpha, IN), region(x, IN), region(y, IN)}),
                   NAA_KERNEL_RC_BAD_LAYOUT);
}

void test_daxpy_bad_size(void **) {
  std::vector<double> alpha = {2}, alpha2 = {2, 3}, x(2), y(2), y3(3), r(2), r3(3);
  assert_int_equal(run(11, {region(alpha2, IN), region(x, IN), region(y, IN), region(r, OUT)}),
                   NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(run(11, {region(alpha, IN), region(x, IN), region(y3, IN), region(r, OUT)}),
                   NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(run(11, {region(alpha, IN), region(x, IN), region(y, IN), region(r3, OUT)}),
                   NAA_KERNEL_RC_BAD_SIZE);
  std::vector<uint8_t> xb(12), yb(12), rb(12);
  assert_int_equal(run(11, {region(alpha, IN), region(xb, IN), region(yb, IN), region(rb, OUT)}),
                   NAA_KERNEL_RC_BAD_SIZE);
}

// --- dgemm ---------------------------------------------------------------------------

void test_dgemm_2x3_times_3x2(void **) {
  std::vector<uint64_t> dims = {2, 2, 3};  // m, n, k
  std::vector<double> a = {1, 2, 3,        //
                           4, 5, 6};
  std::vector<double> b = {7,  8,   //
                           9,  10,  //
                           11, 12};
  std::vector<double> c(4, 99);  // must be overwritten, not accumulated into
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, IN), region(c, OUT)}), 0);
  // 1*7+2*9+3*11, 1*8+2*10+3*12 / 4*7+5*9+6*11, 4*8+5*10+6*12
  expect_doubles(c, {58, 64, 139, 154});
}

void test_dgemm_3x2_times_2x3(void **) {
  std::vector<uint64_t> dims = {3, 3, 2};
  std::vector<double> a = {1, 2,  //
                           3, 4,  //
                           5, 6};
  std::vector<double> b = {1, 0, -1,  //
                           2, 1, 0};
  std::vector<double> c(9);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, IN), region(c, OUT)}), 0);
  expect_doubles(c, {5, 2, -1, 11, 4, -3, 17, 6, -5});
}

void test_dgemm_bad_layout(void **) {
  std::vector<uint64_t> dims = {1, 1, 1};
  std::vector<double> a = {2}, b = {3}, c(1);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(c, OUT)}),
                   NAA_KERNEL_RC_BAD_LAYOUT);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, IN)}),
                   NAA_KERNEL_RC_BAD_LAYOUT);
  // C in place on A or B would overwrite operands still being read.
  assert_int_equal(run(12, {region(dims, IN), region(a, INOUT), region(b, IN)}),
                   NAA_KERNEL_RC_BAD_LAYOUT);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, INOUT)}),
                   NAA_KERNEL_RC_BAD_LAYOUT);
}

void test_dgemm_bad_size(void **) {
  std::vector<double> a(6), b(6), c(4);
  auto rc = [&](std::vector<uint64_t> dims) {
    return run(12, {region(dims, IN), region(a, IN), region(b, IN), region(c, OUT)});
  };
  assert_int_equal(rc({2, 2}), NAA_KERNEL_RC_BAD_SIZE);        // dims not 24 bytes
  assert_int_equal(rc({2, 2, 3, 0}), NAA_KERNEL_RC_BAD_SIZE);  // dims not 24 bytes
  assert_int_equal(rc({2, 2, 2}), NAA_KERNEL_RC_BAD_SIZE);     // A, B have 6 elements
  assert_int_equal(rc({3, 2, 2}), NAA_KERNEL_RC_BAD_SIZE);     // C has 4
  assert_int_equal(rc({0, 2, 3}), NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(rc({2, 0, 3}), NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(rc({2, 2, 0}), NAA_KERNEL_RC_BAD_SIZE);
  // Products that wrap around to the real sizes must not pass: m*k*8 = 3*2^64 + 48
  // and m*n*8 = 2^65 + 32 wrap to 48 and 32 bytes.
  const uint64_t big = (uint64_t{1} << 61) + 2;
  assert_int_equal(rc({big, 2, 3}), NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(rc({UINT64_MAX, UINT64_MAX, UINT64_MAX}), NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(rc({uint64_t{1} << 32, uint64_t{1} << 32, 3}), NAA_KERNEL_RC_BAD_SIZE);
  // With k = n = 0 all three sizes are 0 whatever m is; m must not drive a loop.
  std::vector<uint64_t> dims_m_only = {UINT64_MAX, 0, 0};
  double unused;
  assert_int_equal(
      run(12, {region(dims_m_only, IN), {&unused, 0, IN}, {&unused, 0, IN}, {&unused, 0, OUT}}),
      NAA_KERNEL_RC_BAD_SIZE);
  std::vector<double> c_ok(4);
  std::vector<uint64_t> dims = {2, 2, 3};
  std::vector<uint8_t> c_odd(31);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, IN), region(c_odd, OUT)}),
                   NAA_KERNEL_RC_BAD_SIZE);
  assert_int_equal(run(12, {region(dims, IN), region(a, IN), region(b, IN), region(c_ok, OUT)}), 0);
}

// --- registry ------------------------------------------------------------------------

uint8_t kernel_returning_0x42(const naa_kernel_region *, size_t, uint32_t) {
  return 0x42;
}

void test_builtins_listed(void **) {
  KernelRegistry registry;
  const std::vector<const naa_kernel *> kernels = registry.list();
  const struct {
    uint8_t code;
    const char *name;
  } want[] = {{1, "add1"},        {2, "add2"},   {3, "noop"},
              {10, "vecadd_f64"}, {11, "daxpy"}, {12, "dgemm"}};
  assert_int_equal(kernels.size(), sizeof want / sizeof want[0]);
  for (size_t i = 0; i < kernels.size(); i++) {
    assert_int_equal(kernels[i]->function_code, want[i].code);
    assert_string_equal(kernels[i]->name, want[i].name);
    assert_ptr_equal(registry.find(want[i].code), kernels[i]);
  }
}

void test_find_unknown(void **) {
  KernelRegistry registry;
  assert_null(registry.find(0));
  assert_null(registry.find(4));
  assert_null(registry.find(127));
  assert_null(registry.find(128));
  assert_null(registry.find(255));
}

void test_add_and_find(void **) {
  KernelRegistry registry;
  std::string error;
  assert_true(registry.add({127, "top", kernel_returning_0x42}, &error));
  const naa_kernel *kernel = registry.find(127);
  assert_non_null(kernel);
  assert_string_equal(kernel->name, "top");
  assert_int_equal(kernel->run(nullptr, 0, 0), 0x42);
  assert_int_equal(registry.list().size(), 7);
}

void test_add_rejects(void **) {
  KernelRegistry registry;
  std::string error;
  for (uint8_t code : {0, 128, 200, 255}) {
    error.clear();
    assert_false(registry.add({code, "bad", kernel_returning_0x42}, &error));
    assert_non_null(std::strstr(error.c_str(), "outside 1..127"));
    assert_null(registry.find(code));
  }
  error.clear();
  assert_false(registry.add({1, "dup", kernel_returning_0x42}, &error));
  assert_non_null(std::strstr(error.c_str(), "already taken by add1"));
  assert_string_equal(registry.find(1)->name, "add1");

  assert_true(registry.add({50, "first", kernel_returning_0x42}, &error));
  assert_false(registry.add({50, "second", kernel_returning_0x42}, &error));
  assert_string_equal(registry.find(50)->name, "first");

  error.clear();
  assert_false(registry.add({51, "no-run", nullptr}, &error));
  assert_false(error.empty());
  assert_false(registry.add({51, nullptr, kernel_returning_0x42}, &error));
  assert_null(registry.find(51));
  assert_false(registry.add({52, "no-error-string", nullptr}, nullptr));
  assert_int_equal(registry.list().size(), 7);
}

// --- plugins -------------------------------------------------------------------------

void test_plugin_loads_and_runs(void **) {
  const char *path = std::getenv("NAA_TEST_KERNEL_PLUGIN");
  if (path == nullptr || *path == '\0') {
    print_message("NAA_TEST_KERNEL_PLUGIN is not set; skipping\n");
    skip();
  }
  KernelRegistry registry;
  std::string error;
  if (!registry.load_plugin(path, &error)) fail_msg("%s", error.c_str());
  const naa_kernel *kernel = registry.find(100);
  assert_non_null(kernel);
  assert_string_equal(kernel->name, "xor_ff");
  // 6 built-in + xor_ff, crash, spin, trample, overrun, nap_fill, fork_and_return, joule,
  // gate_fill
  assert_int_equal(registry.list().size(), 15);
  assert_true(registry.is_builtin(1));
  assert_false(registry.is_builtin(100));  // plugins are what --isolate=plugins isolates
  assert_false(registry.is_builtin(99));

  std::vector<uint8_t> in = {0x01, 0x02};
  std::vector<uint8_t> inout = {0x00, 0x0f};
  std::vector<uint8_t> out = {0xff};
  assert_int_equal(run(registry, 100, {region(in, IN), region(inout, INOUT), region(out, OUT)}), 0);
  expect_bytes(in, {0x01, 0x02});
  expect_bytes(inout, {0xff, 0xf0});
  expect_bytes(out, {0x00});

  // A second load of the same table collides with itself and registers nothing.
  assert_false(registry.load_plugin(path, &error));
  assert_non_null(std::strstr(error.c_str(), path));
  assert_non_null(std::strstr(error.c_str(), "already taken by xor_ff"));
  assert_int_equal(registry.list().size(), 15);
}

void test_plugin_missing_file(void **) {
  KernelRegistry registry;
  std::string error;
  const std::string path = "/nonexistent/dir/libnaa-no-such-plugin.so";
  assert_false(registry.load_plugin(path, &error));
  assert_non_null(std::strstr(error.c_str(), path.c_str()));
  assert_non_null(std::strstr(error.c_str(), "No such file"));
  assert_int_equal(registry.list().size(), 6);
}

// Any loadable library without the table symbol will do; the C library is always there.
void test_plugin_without_table(void **) {
  KernelRegistry registry;
  std::string error;
  assert_false(registry.load_plugin("libc.so.6", &error));
  assert_non_null(std::strstr(error.c_str(), "libc.so.6"));
  assert_non_null(std::strstr(error.c_str(), NAA_KERNEL_TABLE_SYMBOL));
  assert_int_equal(registry.list().size(), 6);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add1_wraps_every_region),
      cmocka_unit_test(test_add2),
      cmocka_unit_test(test_noop),
      cmocka_unit_test(test_vecadd),
      cmocka_unit_test(test_vecadd_in_place),
      cmocka_unit_test(test_vecadd_unaligned),
      cmocka_unit_test(test_vecadd_bad_layout),
      cmocka_unit_test(test_vecadd_bad_size),
      cmocka_unit_test(test_daxpy),
      cmocka_unit_test(test_daxpy_in_place),
      cmocka_unit_test(test_daxpy_bad_layout),
      cmocka_unit_test(test_daxpy_bad_size),
      cmocka_unit_test(test_dgemm_2x3_times_3x2),
      cmocka_unit_test(test_dgemm_3x2_times_2x3),
      cmocka_unit_test(test_dgemm_bad_layout),
      cmocka_unit_test(test_dgemm_bad_size),
      cmocka_unit_test(test_builtins_listed),
      cmocka_unit_test(test_find_unknown),
      cmocka_unit_test(test_add_and_find),
      cmocka_unit_test(test_add_rejects),
      cmocka_unit_test(test_plugin_loads_and_runs),
      cmocka_unit_test(test_plugin_missing_file),
      cmocka_unit_test(test_plugin_without_table),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
