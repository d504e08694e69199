// SPDX-License-Identifier: BSD-3-Clause
// naa_create's settings (lib/config/settings.cpp): the settings resolved from the environment
// are used again by the next create from the same environment and attr values, and never when
// anything they came from has changed since.
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <setjmp.h>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include <unistd.h>

#include "session/settings.hpp"
#include "error.hpp"

using namespace std::chrono_literals;

namespace {

// setenv between two creates takes effect, in the settings and in the transport's options.
void test_a_changed_variable_is_read_again(void **) {
  setenv("NAA_TIMEOUT", "5", 1);
  setenv("NAA_SPIN_US", "100", 1);
  naa::session::Settings first = naa::session::Settings::resolve(nullptr);
  assert_true(first.timeout == 5s);
  assert_true(first.transport_options().setup_spin == 100us);
  setenv("NAA_TIMEOUT", "7", 1);
  setenv("NAA_SPIN_US", "250", 1);
  naa::session::Settings second = naa::session::Settings::resolve(nullptr);
  assert_true(second.timeout == 7s);
  assert_true(second.transport_options().setup_spin == 250us);
  unsetenv("NAA_TIMEOUT");
  unsetenv("NAA_SPIN_US");
  assert_false(naa::session::Settings::resolve(nullptr).timeout == 7s);
}

// A malformed variable set after good settings were resolved is refused, not hidden by them.
void test_a_bad_variable_is_refused_after_good_ones(void **) {
  setenv("NAA_TIMEOUT", "5", 1);
  assert_true(naa::session::Settings::resolve(nullptr).timeout == 5s);
  setenv("NAA_TIMEOUT", "soon", 1);
  int code = NAA_SUCCESS;
  try {
    naa::session::Settings::resolve(nullptr);
  } catch (const naa::Error &e) {
    code = e.code();
  }
  assert_int_equal(code, NAA_ERR_CONFIG);
  unsetenv("NAA_TIMEOUT");
}

// An attr never initialised (NAA_ATTR_INIT): refused by its header, none of its fields read
// (here pointers to nowhere, which the settings kept for an attr's values would follow).
void test_an_attr_without_header_is_refused_unread(void **) {
  naa_attr_t attr;
  std::memset(&attr, 0xa5, sizeof attr);
  attr.version = 0;
  int code = NAA_SUCCESS;
  try {
    naa::session::Settings::resolve(&attr);
  } catch (const naa::Error &e) {
    code = e.code();
  }
  assert_int_equal(code, NAA_ERR_INVALID_ARGUMENT);
}

void write_key(const std::string &path, const char *key) {
  FILE *f = std::fopen(path.c_str(), "w");
  assert_non_null(f);
  std::fprintf(f, "%s\n", key);
  std::fclose(f);
}

// The key file may be rewritten between two creates from the same environment: read at each.
void test_a_rewritten_key_file_is_read_again(void **) {
  char path[] = "/tmp/naa-test-settings-XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  write_key(path, "first-key");
  setenv("NAA_AUTH_KEY_FILE", path, 1);
  assert_string_equal(naa::session::Settings::resolve(nullptr).auth_key.c_str(), "first-key");
  write_key(path, "second-key");
  const std::string second = naa::session::Settings::resolve(nullptr).auth_key;
  unsetenv("NAA_AUTH_KEY_FILE");
  unlink(path);
  assert_string_equal(second.c_str(), "second-key");
}

// What an attr set is its create's alone: the next create without one has the environment's.
void test_attr_settings_stay_with_their_create(void **) {
  unsetenv("NAA_TIMEOUT");
  const auto from_environment = naa::session::Settings::resolve(nullptr).timeout;
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.timeout_ms = 3000;
  assert_true(naa::session::Settings::resolve(&attr).timeout == 3s);
  assert_true(naa::session::Settings::resolve(nullptr).timeout == from_environment);
  assert_false(from_environment == 3s);
}

// A create with the same attr values as the last one from the same environment (naa-bench's
// warm creates) gets the kept settings; a field or a params string changed in place, in the
// same attr, is read again.
void test_same_attr_values_are_kept_changed_ones_read(void **) {
  unsetenv("NAA_TIMEOUT");
  char spin[] = "NAA_SPIN_US=20";
  const char *params[] = {spin, nullptr};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = "127.0.0.1:7000";
  attr.params = params;
  assert_true(naa::session::Settings::resolve(&attr).transport_options().setup_spin == 20us);
  const unsigned long anew = naa::session::Settings::resolved_anew();
  assert_true(naa::session::Settings::resolve(&attr).transport_options().setup_spin == 20us);
  assert_int_equal(naa::session::Settings::resolved_anew(), anew);  // kept
  spin[12] = '3';  // "NAA_SPIN_US=30", same pointer
  assert_true(naa::session::Settings::resolve(&attr).transport_options().setup_spin == 30us);
  attr.timeout_ms = 4000;
  assert_true(naa::session::Settings::resolve(&attr).timeout == 4s);
  char naa[] = "127.0.0.1:7001";
  attr.naa = naa;
  assert_int_equal(naa::session::Settings::resolve(&attr).naa_port, 7001);
  naa[13] = '2';  // the same string, changed in place
  assert_int_equal(naa::session::Settings::resolve(&attr).naa_port, 7002);
  assert_int_equal(naa::session::Settings::resolved_anew(), anew + 4);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_changed_variable_is_read_again),
      cmocka_unit_test(test_a_bad_variable_is_refused_after_good_ones),
      cmocka_unit_test(test_an_attr_without_header_is_refused_unread),
      cmocka_unit_test(test_a_rewritten_key_file_is_read_again),
      cmocka_unit_test(test_attr_settings_stay_with_their_create),
      cmocka_unit_test(test_same_attr_values_are_kept_changed_ones_read),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
