// SPDX-License-Identifier: BSD-3-Clause
// The authentication key's private-data encoding and the key sources (lib/config/auth.cpp).
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <setjmp.h>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include "config/auth.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "error.hpp"

using naa::config::auth::encode;
using naa::config::auth::matches;

static void encoding_is_magic_length_key(void **) {
  std::string d = encode("s3cret");
  assert_int_equal(d.size(), 4 + 1 + 6);
  assert_memory_equal(d.data(), "NAA1\x06s3cret", d.size());
}

static void matches_exact_key_only(void **) {
  assert_true(matches(encode("s3cret"), "s3cret"));
  assert_false(matches(encode("s3cre"), "s3cret"));    // a prefix of the key
  assert_false(matches(encode("s3cretX"), "s3cret"));  // the key as a prefix
  assert_false(matches(encode("S3cret"), "s3cret"));
  assert_false(matches("", "s3cret"));
  assert_false(matches("NAA1", "s3cret"));
}

// What follows a key in the private data (doc/protocol.md §3.4) starts where it ends.
static void encoded_length_finds_the_key_end(void **) {
  using naa::config::auth::encoded_length;
  assert_int_equal(encoded_length(encode("s3cret")), 11);
  assert_int_equal(encoded_length(encode("s3cret") + "MRSP\x01"), 11);
  assert_int_equal(encoded_length(encode("")), 5);
  assert_int_equal(encoded_length(""), 0);
  assert_int_equal(encoded_length("NAA1"), 0);
  assert_int_equal(encoded_length("MRSP\x01\x01"), 0);
  assert_int_equal(encoded_length(std::string("NAA1\x06s3cre")), 0);  // cut short
}

// libnaa's identity follows the key where both fit a connection request's 56 bytes; what
// follows them (the memory-region request) starts after both.
static void connect_data_names_libnaa(void **) {
  using naa::config::auth::connect_data;
  using naa::config::auth::connect_data_length;
  using naa::config::auth::from_libnaa;
  assert_true(connect_data("") == "NAAc");
  assert_true(connect_data("s3cret") == encode("s3cret") + "NAAc");
  assert_true(from_libnaa(connect_data("")) && from_libnaa(connect_data("s3cret")));
  assert_int_equal(connect_data_length(connect_data("s3cret") + "MRSP\x01"), 15);
  const std::string longest(47, 'k'), too_long(48, 'k');
  assert_true(from_libnaa(connect_data(longest)));
  assert_int_equal(connect_data(longest).size(), 56);
  assert_true(connect_data(too_long) == encode(too_long));  // the key alone: 53 bytes
  assert_false(from_libnaa(connect_data(too_long)));
  assert_false(from_libnaa(""));  // a reference client
  assert_false(from_libnaa(encode("s3cret")));
  assert_int_equal(connect_data_length(encode("s3cret") + "MRSP"), 11);
  std::string padded = connect_data("");
  padded.resize(56, '\0');  // InfiniBand's padding
  assert_true(from_libnaa(padded));
}

static void infiniband_padding_is_accepted(void **) {
  std::string padded = encode("k");
  padded.resize(56, '\0');  // rdma_cm delivers REQ private data padded to 56 bytes
  assert_true(matches(padded, "k"));
  assert_false(matches(std::string(56, '\0'), "k"));
}

static void environment_sources(void **) {
  unsetenv("NAA_AUTH_KEY");
  unsetenv("NAA_AUTH_KEY_FILE");
  assert_string_equal(naa::transport::read_parameters().auth_key().c_str(), "");
  setenv("NAA_AUTH_KEY", std::string(48, 'x').c_str(), 1);
  assert_int_equal(naa::transport::read_parameters().auth_key().size(), 48);
  setenv("NAA_AUTH_KEY", std::string(49, 'x').c_str(), 1);
  bool refused = false;
  try {
    naa::transport::read_parameters().auth_key();
  } catch (const naa::Error &e) {
    refused = e.code() == NAA_ERR_CONFIG;
  }
  assert_true(refused);
  unsetenv("NAA_AUTH_KEY");

  char path[] = "/tmp/naa-key-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  std::fputs("from-file\nsecond line ignored\n", f);
  std::fclose(f);
  setenv("NAA_AUTH_KEY_FILE", path, 1);
  assert_string_equal(naa::transport::read_parameters().auth_key().c_str(), "from-file");
  std::remove(path);
  refused = false;
  try {
    naa::transport::read_parameters().auth_key();  // the file is gone
  } catch (const naa::Error &e) {
    refused = e.code() == NAA_ERR_CONFIG;
  }
  assert_true(refused);
  unsetenv("NAA_AUTH_KEY_FILE");
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(encoding_is_magic_length_key),
      cmocka_unit_test(matches_exact_key_only),
      cmocka_unit_test(encoded_length_finds_the_key_end),
      cmocka_unit_test(connect_data_names_libnaa),
      cmocka_unit_test(infiniband_padding_is_accepted),
      cmocka_unit_test(environment_sources),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
