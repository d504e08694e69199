/* SPDX-License-Identifier: BSD-3-Clause */
/* The public C ABI against bad input: every refusal returns its documented code, leaves no
 * half-made handle behind, and never needs an NAA. The library logs each refusal to stderr.
 *
 * No test reaches naa_create's connect step: each one fails in the argument checks, in parsing
 * NAA_TIMEOUT or NAA_TRANSPORT, or while resolving NAA_SPEC, all of which api.cpp does before
 * connecting. Where an environment error is the one under test, NAA_SPEC lists only other
 * function codes, so even a library that skipped the check would stop short of the network. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naa.h"

/* Every test asks for this code; SPEC_OTHER_CODES resolves to NO_NAA for it. */
#define CODE 3
#define SPEC_OTHER_CODES "127.0.0.1:12345:5:1,127.0.0.1:12345:7:1"
#define SPEC_MALFORMED "127.0.0.1:notaport:10:2"
/* Entries for CODE name port 1, where nothing listens, so that a regression which let such a
 * call through would be refused at once rather than reach a live server. */
#define SPEC_CODE_TWO_INPUTS "127.0.0.1:1:3:2"
#define SPEC_CODE_ONE_INPUT "127.0.0.1:1:3:1"
#define GARBAGE_ID 0xdeadbeefcafef00dULL

/* Distinct addresses for up to 32 regions; the library never touches them in these tests. */
static char pool[32][16];

static naa_param_t param(size_t i) {
  naa_param_t p = {pool[i], sizeof pool[i], false};
  return p;
}

static int clean_environment(void **state) {
  (void)state;
  unsetenv("NAA_SPEC");
  unsetenv("NAA_TRANSPORT");
  unsetenv("NAA_TIMEOUT");
  return 0;
}

/* naa_create into a handle pre-filled with garbage: every call in this file fails, and naa.h
 * promises the handle is NAA_HANDLE_NULL afterwards. */
static int create(uint32_t code, naa_param_t *inputs, size_t n_inputs, naa_param_t *outputs,
                  size_t n_outputs) {
  naa_handle handle = {GARBAGE_ID};
  int rc = naa_create(code, inputs, n_inputs, outputs, n_outputs, &handle);
  assert_int_equal(handle.id, NAA_HANDLE_NULL.id);
  return rc;
}

static int create_1x1(uint32_t code) {
  naa_param_t input = param(0), output = param(1);
  return create(code, &input, 1, &output, 1);
}

static void create_null_handle(void **state) {
  naa_param_t input = param(0), output = param(1);
  (void)state;
  assert_int_equal(naa_create(CODE, &input, 1, &output, 1, NULL), NAA_ERR_INVALID_ARGUMENT);
}

static void create_bad_function_code(void **state) {
  (void)state;
  assert_int_equal(create_1x1(0), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create_1x1(128), NAA_ERR_INVALID_ARGUMENT);
  /* The wire carries the code in 8 bits; the range check must come before any narrowing. */
  assert_int_equal(create_1x1(256 + CODE), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create_1x1(UINT32_MAX), NAA_ERR_INVALID_ARGUMENT);
}

static void create_function_code_bounds_accepted(void **state) {
  (void)state;
  /* NO_NAA shows the code passed its range check and reached the resolver. */
  assert_int_equal(create_1x1(1), NAA_ERR_NO_NAA);
  assert_int_equal(create_1x1(127), NAA_ERR_NO_NAA);
}

static void create_needs_inputs_and_outputs(void **state) {
  naa_param_t input = param(0), output = param(1);
  (void)state;
  assert_int_equal(create(CODE, &input, 0, &output, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &input, 1, &output, 0), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, NULL, 1, &output, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &input, 1, NULL, 1), NAA_ERR_INVALID_ARGUMENT);
}

static void create_bad_params(void **state) {
  naa_param_t good = param(0);
  naa_param_t null_addr = {NULL, 8, false};
  naa_param_t zero_size = {pool[1], 0, false};
  naa_param_t too_big = {pool[1], (size_t)UINT32_MAX + 1, false};
  (void)state;
  assert_int_equal(create(CODE, &null_addr, 1, &good, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &good, 1, &null_addr, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &zero_size, 1, &good, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &good, 1, &zero_size, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &good, 1, &too_big, 1), NAA_ERR_INVALID_ARGUMENT);
}

static void create_region_limit(void **state) {
  naa_param_t params[32];
  size_t i;
  (void)state;
  for (i = 0; i < 32; ++i) params[i] = param(i);
  assert_int_equal(create(CODE, params, 16, params + 16, 16), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, params, 32, params, 1), NAA_ERR_INVALID_ARGUMENT);
  /* 31 regions get past the argument checks and fail only for want of an NAA. */
  assert_int_equal(create(CODE, params, 16, params + 16, 15), NAA_ERR_NO_NAA);
}

static void create_without_spec(void **state) {
  (void)state;
  assert_int_equal(create_1x1(CODE), NAA_ERR_NO_NAA);
  setenv("NAA_SPEC", "", 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_NO_NAA);
}

static void create_code_not_in_spec(void **state) {
  (void)state;
  setenv("NAA_SPEC", SPEC_OTHER_CODES, 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_NO_NAA);
}

static void create_malformed_spec(void **state) {
  (void)state;
  setenv("NAA_SPEC", SPEC_MALFORMED, 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  /* A bad chunk is refused even behind a well-formed one. */
  setenv("NAA_SPEC", SPEC_OTHER_CODES "," SPEC_MALFORMED, 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
}

static void create_input_count_differs_from_spec(void **state) {
  naa_param_t inputs[2] = {param(0), param(1)}, output = param(2);
  (void)state;
  setenv("NAA_SPEC", SPEC_CODE_TWO_INPUTS, 1);
  assert_int_equal(create(CODE, inputs, 1, &output, 1), NAA_ERR_INVALID_ARGUMENT);
  setenv("NAA_SPEC", SPEC_CODE_ONE_INPUT, 1);
  assert_int_equal(create(CODE, inputs, 2, &output, 1), NAA_ERR_INVALID_ARGUMENT);
}

static void create_bad_transport(void **state) {
  (void)state;
  setenv("NAA_SPEC", SPEC_OTHER_CODES, 1);
  setenv("NAA_TRANSPORT", "bogus", 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  setenv("NAA_TRANSPORT", "ofi+", 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
}

static void create_bad_timeout(void **state) {
  static const char *const bad[] = {"abc", "-1", "0", "5s", "0x10", " 5", "inf", "nan"};
  size_t i;
  (void)state;
  setenv("NAA_SPEC", SPEC_OTHER_CODES, 1);
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    setenv("NAA_TIMEOUT", bad[i], 1);
    assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  }
}

static void create_bad_progress(void **state) {
  static const char *const bad_mode[] = {"busy", "SPIN", ""};
  static const char *const bad_spin[] = {"-1", "x", "10000001"};
  size_t i;
  (void)state;
  setenv("NAA_SPEC", SPEC_OTHER_CODES, 1);
  for (i = 0; i < 2; ++i) { /* "" means the default, so only the first two are malformed */
    setenv("NAA_PROGRESS", bad_mode[i], 1);
    assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  }
  unsetenv("NAA_PROGRESS");
  for (i = 0; i < sizeof bad_spin / sizeof bad_spin[0]; ++i) {
    setenv("NAA_SPIN_US", bad_spin[i], 1);
    assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  }
  unsetenv("NAA_SPIN_US");
  setenv("NAA_PROGRESS", bad_mode[2], 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_NO_NAA); /* past the options: the spec lacks CODE */
  unsetenv("NAA_PROGRESS");
}

static void create_argument_errors_win(void **state) {
  naa_param_t input = param(0), output = param(1);
  naa_param_t null_addr = {NULL, 8, false};
  (void)state;
  setenv("NAA_SPEC", SPEC_MALFORMED, 1);
  setenv("NAA_TRANSPORT", "verbs", 1);
  setenv("NAA_TIMEOUT", "abc", 1);
  assert_int_equal(naa_create(CODE, &input, 1, &output, 1, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(0, &input, 1, &output, 1), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &input, 1, &output, 0), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(create(CODE, &input, 1, &null_addr, 1), NAA_ERR_INVALID_ARGUMENT);
}

/* api.cpp reads NAA_TIMEOUT, then NAA_TRANSPORT, then resolves NAA_SPEC; the input count is
 * checked against NAA_SPEC only while resolving, so it comes last. */
static void create_environment_error_order(void **state) {
  (void)state;
  setenv("NAA_TIMEOUT", "abc", 1);
  setenv("NAA_TRANSPORT", "bogus", 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);

  unsetenv("NAA_TIMEOUT");
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  setenv("NAA_SPEC", SPEC_MALFORMED, 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  setenv("NAA_SPEC", SPEC_CODE_TWO_INPUTS, 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);

  unsetenv("NAA_TRANSPORT");
  setenv("NAA_TIMEOUT", "-1", 1);
  unsetenv("NAA_SPEC");
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
}

/* A field naa_attr_t sets is not read from the environment, so a malformed variable behind
 * it fails nothing: the call gets as far as connecting to attr.naa (a closed port). */
static void attr_fields_override_malformed_environment(void **state) {
  static const char *const variables[] = {"NAA_SPEC",     "NAA_TRANSPORT", "NAA_TIMEOUT",
                                          "NAA_PROGRESS", "NAA_PACING_US", "NAA_AUTH_KEY"};
  naa_param_t input = param(0), output = param(1);
  naa_handle handle = {GARBAGE_ID};
  naa_attr_t attr = NAA_ATTR_INIT;
  size_t i;
  int rc;
  (void)state;
  setenv("NAA_SPEC", SPEC_MALFORMED, 1);
  setenv("NAA_TRANSPORT", "bogus", 1);
  setenv("NAA_TIMEOUT", "abc", 1);
  setenv("NAA_PROGRESS", "busy", 1);
  setenv("NAA_PACING_US", "x", 1);
  setenv("NAA_AUTH_KEY", "a key far longer than the forty-eight bytes a request carries", 1);
  assert_int_equal(create_1x1(CODE), NAA_ERR_CONFIG);
  attr.naa = "127.0.0.1:1";
  attr.transport = "ofi+tcp";
  attr.timeout_ms = 2000;
  attr.progress = "block";
  attr.pacing_us = 0;
  attr.auth_key = "";
  rc = naa_create_attr(CODE, &input, 1, &output, 1, &attr, &handle);
  assert_true(rc == NAA_ERR_CONNECTION ||
              rc == NAA_ERR_UNSUPPORTED); /* no libfabric: unsupported */
  assert_int_equal(handle.id, NAA_HANDLE_NULL.id);
  for (i = 0; i < sizeof variables / sizeof variables[0]; ++i) unsetenv(variables[i]);
}

/* invoke, test, wait and finalize on one handle must all give `expected`. */
static void assert_every_call(naa_handle *handle, int expected) {
  bool flag = true;
  naa_status status;
  assert_int_equal(naa_invoke(handle), expected);
  assert_int_equal(naa_test(handle, &flag, &status), expected);
  /* A caller polling on flag must not be told the invocation completed. */
  assert_false(flag);
  assert_int_equal(naa_wait(handle, &status), expected);
  assert_int_equal(naa_wait(handle, NULL), expected);
  assert_int_equal(naa_finalize(handle), expected);
}

static void null_handle_is_invalid(void **state) {
  naa_handle handle = NAA_HANDLE_NULL;
  (void)state;
  assert_every_call(&handle, NAA_ERR_INVALID_HANDLE);
}

static void garbage_handle_is_invalid(void **state) {
  naa_handle handle = {GARBAGE_ID};
  (void)state;
  assert_every_call(&handle, NAA_ERR_INVALID_HANDLE);
}

static void handle_from_failed_create_is_invalid(void **state) {
  naa_param_t input = param(0), output = param(1);
  naa_handle handle = {GARBAGE_ID};
  (void)state;
  assert_int_equal(naa_create(CODE, &input, 1, &output, 1, &handle), NAA_ERR_NO_NAA);
  assert_every_call(&handle, NAA_ERR_INVALID_HANDLE);
}

static void null_handle_pointer(void **state) {
  (void)state;
  assert_every_call(NULL, NAA_ERR_INVALID_ARGUMENT);
}

static void test_null_flag(void **state) {
  naa_handle null_handle = NAA_HANDLE_NULL, garbage = {GARBAGE_ID};
  naa_status status;
  (void)state;
  assert_int_equal(naa_test(&null_handle, NULL, &status), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_test(&garbage, NULL, NULL), NAA_ERR_INVALID_ARGUMENT);
  assert_int_equal(naa_test(NULL, NULL, NULL), NAA_ERR_INVALID_ARGUMENT);
}

static void strerror_distinct_for_every_code(void **state) {
  const char *text[NAA_ERR_CANCELED + 1];
  int i, j;
  (void)state;
  for (i = NAA_SUCCESS; i <= NAA_ERR_CANCELED; ++i) {
    text[i] = naa_strerror(i);
    assert_non_null(text[i]);
    assert_true(text[i][0] != '\0');
    assert_string_not_equal(text[i], "unknown error");
    for (j = 0; j < i; ++j) assert_string_not_equal(text[i], text[j]);
  }
}

static void strerror_unknown_codes(void **state) {
  (void)state;
  assert_string_equal(naa_strerror(NAA_ERR_CANCELED + 1), "unknown error");
  assert_string_equal(naa_strerror(-1), "unknown error");
  assert_string_equal(naa_strerror(1000), "unknown error");
  assert_string_equal(naa_strerror(INT_MIN), "unknown error");
}

static void version_matches_header(void **state) {
  char expected[32];
  int major = -1, minor = -1, patch = -1;
  (void)state;
  snprintf(expected, sizeof expected, "%d.%d.%d", NAA_VERSION_MAJOR, NAA_VERSION_MINOR,
           NAA_VERSION_PATCH);
  assert_string_equal(naa_version(&major, &minor, &patch), expected);
  assert_int_equal(major, NAA_VERSION_MAJOR);
  assert_int_equal(minor, NAA_VERSION_MINOR);
  assert_int_equal(patch, NAA_VERSION_PATCH);
  assert_string_equal(naa_version(NULL, NULL, NULL), expected);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(create_null_handle, clean_environment),
      cmocka_unit_test_setup(create_bad_function_code, clean_environment),
      cmocka_unit_test_setup(create_function_code_bounds_accepted, clean_environment),
      cmocka_unit_test_setup(create_needs_inputs_and_outputs, clean_environment),
      cmocka_unit_test_setup(create_bad_params, clean_environment),
      cmocka_unit_test_setup(create_region_limit, clean_environment),
      cmocka_unit_test_setup(create_without_spec, clean_environment),
      cmocka_unit_test_setup(create_code_not_in_spec, clean_environment),
      cmocka_unit_test_setup(create_malformed_spec, clean_environment),
      cmocka_unit_test_setup(create_input_count_differs_from_spec, clean_environment),
      cmocka_unit_test_setup(create_bad_transport, clean_environment),
      cmocka_unit_test_setup(create_bad_timeout, clean_environment),
      cmocka_unit_test_setup(create_bad_progress, clean_environment),
      cmocka_unit_test_setup(create_argument_errors_win, clean_environment),
      cmocka_unit_test_setup(create_environment_error_order, clean_environment),
      cmocka_unit_test_setup(attr_fields_override_malformed_environment, clean_environment),
      cmocka_unit_test_setup(null_handle_is_invalid, clean_environment),
      cmocka_unit_test_setup(garbage_handle_is_invalid, clean_environment),
      cmocka_unit_test_setup(handle_from_failed_create_is_invalid, clean_environment),
      cmocka_unit_test_setup(null_handle_pointer, clean_environment),
      cmocka_unit_test_setup(test_null_flag, clean_environment),
      cmocka_unit_test(strerror_distinct_for_every_code),
      cmocka_unit_test(strerror_unknown_codes),
      cmocka_unit_test(version_matches_header),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
