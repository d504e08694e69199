// SPDX-License-Identifier: BSD-3-Clause
// naa::protocol::layout_regions: the caller's parameter lists become MRSP regions in the reference
// host's order, and every malformed list is refused with NAA_ERR_INVALID_ARGUMENT before anything
// is registered or sent.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <cstring>
#include <string>
#include <vector>

#include "error.hpp"
#include "protocol/mrsp.hpp"
#include "protocol/regions.hpp"

using naa::protocol::layout_regions;
using naa::protocol::Region;

namespace {

constexpr uint8_t IN = naa::protocol::mrsp::kInput;
constexpr uint8_t OUT = naa::protocol::mrsp::kOutput;
constexpr uint8_t SINGLE = naa::protocol::mrsp::kSingleSend;

// Distinct addresses for as many regions as the limit tests need; nothing is ever read or written.
char pool[32][8];

naa_param_t param(size_t i, size_t size = sizeof pool[0], bool single_send = false) {
  return {pool[i], size, single_send};
}

// The code layout_regions throws (NAA_SUCCESS if it accepts the lists) and, through `what`, its
// message, so that a test can check the message names the offending parameter.
int layout_error(const naa_param_t *inputs, size_t n_inputs, const naa_param_t *outputs,
                 size_t n_outputs, std::string *what = nullptr) {
  try {
    layout_regions(inputs, n_inputs, outputs, n_outputs);
  } catch (const naa::Error &e) {
    if (what != nullptr) *what = e.what();
    return e.code();
  }
  return NAA_SUCCESS;
}

void assert_region(const Region &r, size_t pool_index, uint32_t size, uint8_t flags) {
  assert_ptr_equal(r.addr, pool[pool_index]);
  assert_int_equal(r.size, size);
  assert_int_equal(r.flags, flags);
}

void assert_invalid(const naa_param_t *inputs, size_t n_inputs, const naa_param_t *outputs,
                    size_t n_outputs, const char *names) {
  std::string what;
  assert_int_equal(layout_error(inputs, n_inputs, outputs, n_outputs, &what),
                   NAA_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(what.c_str(), names));
}

void inputs_then_new_outputs(void **) {
  // Buffer 1 is in place; it must keep its input position, not move among the outputs.
  const naa_param_t inputs[] = {param(0, 1), param(1, 2), param(2, 3)};
  const naa_param_t outputs[] = {param(3, 4), param(1, 2), param(4, 5)};
  const std::vector<Region> r = layout_regions(inputs, 3, outputs, 3);
  assert_int_equal(r.size(), 5);
  assert_region(r[0], 0, 1, IN);
  assert_region(r[1], 1, 2, IN | OUT);
  assert_region(r[2], 2, 3, IN);
  assert_region(r[3], 3, 4, OUT);
  assert_region(r[4], 4, 5, OUT);
}

void in_place_is_one_region(void **) {
  const naa_param_t both = param(0, 6);
  const std::vector<Region> r = layout_regions(&both, 1, &both, 1);
  assert_int_equal(r.size(), 1);
  assert_region(r[0], 0, 6, IN | OUT);
}

void single_send_marks_its_input_only(void **) {
  const naa_param_t inputs[] = {param(0, 8, true), param(1)};
  const naa_param_t output = param(2);
  const std::vector<Region> r = layout_regions(inputs, 2, &output, 1);
  assert_int_equal(r.size(), 3);
  assert_int_equal(r[0].flags, IN | SINGLE);
  assert_int_equal(r[1].flags, IN);
  assert_int_equal(r[2].flags, OUT);
}

void single_send_on_output_only_is_ignored(void **) {
  const naa_param_t input = param(0);
  const naa_param_t output = param(1, 8, true);
  const std::vector<Region> r = layout_regions(&input, 1, &output, 1);
  assert_int_equal(r.size(), 2);
  assert_region(r[1], 1, 8, OUT);
}

void size_limits_accepted(void **) {
  // Only the lengths are inspected, so the largest size needs no buffer of that size.
  const naa_param_t input = param(0, 1);
  const naa_param_t output = param(1, UINT32_MAX);
  const std::vector<Region> r = layout_regions(&input, 1, &output, 1);
  assert_int_equal(r.size(), 2);
  assert_int_equal(r[0].size, 1);
  assert_int_equal(r[1].size, UINT32_MAX);
}

void rejects_empty_lists(void **) {
  const naa_param_t input = param(0), output = param(1);
  assert_int_equal(layout_error(&input, 0, &output, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(layout_error(&input, 1, &output, 0), NAA_ERR_INVALID_ARGUMENT);
}

void rejects_null_arrays(void **) {
  const naa_param_t input = param(0), output = param(1);
  assert_invalid(nullptr, 1, &output, 1, "inputs");
  assert_invalid(&input, 1, nullptr, 1, "outputs");
}

void rejects_null_addr(void **) {
  const naa_param_t inputs[] = {param(0), {nullptr, 8, false}};
  const naa_param_t outputs[] = {param(2), {nullptr, 8, false}};
  assert_invalid(inputs, 2, outputs, 1, "inputs[1]");
  assert_invalid(inputs, 1, outputs, 2, "outputs[1]");
}

void rejects_zero_size(void **) {
  const naa_param_t inputs[] = {param(0), param(1, 0)};
  const naa_param_t outputs[] = {param(2), param(3, 0)};
  assert_invalid(inputs, 2, outputs, 1, "inputs[1]");
  assert_invalid(inputs, 1, outputs, 2, "outputs[1]");
}

void rejects_sizes_beyond_32_bits(void **) {
  static_assert(sizeof(size_t) > sizeof(uint32_t), "a size above UINT32_MAX needs a 64-bit size_t");
  const size_t too_big = size_t{UINT32_MAX} + 1;
  const naa_param_t inputs[] = {param(0), param(1, too_big)};
  const naa_param_t outputs[] = {param(2), param(3, too_big)};
  assert_invalid(inputs, 2, outputs, 1, "inputs[1]");
  assert_invalid(inputs, 1, outputs, 2, "outputs[1]");
}

void rejects_duplicate_input(void **) {
  const naa_param_t inputs[] = {param(0), param(1), param(0)};
  const naa_param_t output = param(2);
  assert_invalid(inputs, 3, &output, 1, "inputs[2]");
}

void rejects_duplicate_output(void **) {
  const naa_param_t input = param(0);
  const naa_param_t outputs[] = {param(1), param(1)};
  assert_invalid(&input, 1, outputs, 2, "outputs[1]");
  // An in-place buffer listed twice among the outputs is a duplicate too.
  const naa_param_t in_place_twice[] = {param(0), param(0)};
  assert_invalid(&input, 1, in_place_twice, 2, "outputs[1]");
}

void rejects_in_place_size_mismatch(void **) {
  const naa_param_t input = param(0, 8);
  const naa_param_t smaller = param(0, 4), larger = param(0, 9);
  assert_invalid(&input, 1, &smaller, 1, "outputs[0]");
  assert_invalid(&input, 1, &larger, 1, "outputs[0]");
}

void region_limit_is_31(void **) {
  static_assert(naa::protocol::mrsp::kMaxRequestEntries == 31, "the limit naa.h documents");
  naa_param_t params[32];
  for (size_t i = 0; i < 32; ++i) params[i] = param(i);

  assert_int_equal(layout_regions(params, 16, params + 16, 15).size(), 31);
  assert_int_equal(layout_error(params, 16, params + 16, 16), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(layout_error(params, 31, params + 31, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(layout_error(params, 32, params, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(layout_error(params, 1, params + 1, 31), NAA_ERR_INVALID_ARGUMENT);

  // In-place buffers count once, so 31 inputs that are all also outputs still fit.
  const std::vector<Region> r = layout_regions(params, 31, params, 31);
  assert_int_equal(r.size(), 31);
  for (const Region &region : r) assert_int_equal(region.flags, IN | OUT);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inputs_then_new_outputs),
      cmocka_unit_test(in_place_is_one_region),
      cmocka_unit_test(single_send_marks_its_input_only),
      cmocka_unit_test(single_send_on_output_only_is_ignored),
      cmocka_unit_test(size_limits_accepted),
      cmocka_unit_test(rejects_empty_lists),
      cmocka_unit_test(rejects_null_arrays),
      cmocka_unit_test(rejects_null_addr),
      cmocka_unit_test(rejects_zero_size),
      cmocka_unit_test(rejects_sizes_beyond_32_bits),
      cmocka_unit_test(rejects_duplicate_input),
      cmocka_unit_test(rejects_duplicate_output),
      cmocka_unit_test(rejects_in_place_size_mismatch),
      cmocka_unit_test(region_limit_is_31),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
