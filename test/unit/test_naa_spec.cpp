// SPDX-License-Identifier: BSD-3-Clause
// NAA_SPEC parsing: the reference-compatible forms are accepted, everything malformed is refused
// with a message that names the chunk.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <string>
#include <vector>

#include "rm/naa_spec.hpp"

using naa::rm::NaaEntry;
using naa::rm::parse_naa_spec;

namespace {

std::vector<NaaEntry> parse_ok(const std::string &spec) {
  std::vector<NaaEntry> out;
  std::string error;
  assert_true(parse_naa_spec(spec, out, &error));
  assert_true(error.empty());
  return out;
}

void assert_entry(const NaaEntry &e, const char *host, unsigned port, unsigned fncode,
                  unsigned n_inputs) {
  assert_string_equal(e.host.c_str(), host);
  assert_int_equal(e.port, port);
  assert_int_equal(e.function_code, fncode);
  assert_int_equal(e.n_inputs, n_inputs);
}

void single_entry(void **) {
  const std::vector<NaaEntry> out = parse_ok("10.3.10.42:12345:1:1");
  assert_int_equal(out.size(), 1);
  assert_entry(out[0], "10.3.10.42", 12345, 1, 1);
}

void multiple_entries_in_order(void **) {
  const std::vector<NaaEntry> out =
      parse_ok("naa1.example:1:127:31,10.0.0.2:65535:3:2,naa1.example:7:3:1");
  assert_int_equal(out.size(), 3);
  assert_entry(out[0], "naa1.example", 1, 127, 31);
  assert_entry(out[1], "10.0.0.2", 65535, 3, 2);
  assert_entry(out[2], "naa1.example", 7, 3, 1);
}

void empty_port_means_default(void **) {
  const std::vector<NaaEntry> out = parse_ok("host::3:2");
  assert_int_equal(out.size(), 1);
  assert_entry(out[0], "host", 12345, 3, 2);
}

void ipv6_in_brackets(void **) {
  const std::vector<NaaEntry> out = parse_ok("[::1]:12345:3:1,[fe80::1%eth0]::5:4");
  assert_int_equal(out.size(), 2);
  assert_entry(out[0], "::1", 12345, 3, 1);
  assert_entry(out[1], "fe80::1%eth0", 12345, 5, 4);
}

void whitespace_and_empty_chunks(void **) {
  const std::vector<NaaEntry> out = parse_ok(" \ta:1:2:3 ,, \n b:4:5:6\t,");
  assert_int_equal(out.size(), 2);
  assert_entry(out[0], "a", 1, 2, 3);
  assert_entry(out[1], "b", 4, 5, 6);
  assert_int_equal(parse_ok("a:1:2:3,").size(), 1);
  assert_int_equal(parse_ok(",a:1:2:3").size(), 1);
  assert_int_equal(parse_ok("").size(), 0);
  assert_int_equal(parse_ok(" , ").size(), 0);
  assert_entry(parse_ok("host:007:010:01")[0], "host", 7, 10, 1);  // leading zeros are decimal
}

void output_replaced_only_on_success(void **) {
  std::vector<NaaEntry> out{{"old", 1, 1, 1}};
  std::string error;
  assert_false(parse_naa_spec("a:1:1:1,bad", out, &error));
  assert_int_equal(out.size(), 1);
  assert_string_equal(out[0].host.c_str(), "old");

  assert_true(parse_naa_spec("a:1:2:3", out, nullptr));
  assert_int_equal(out.size(), 1);
  assert_entry(out[0], "a", 1, 2, 3);
}

void malformed_chunks(void **) {
  const char *const bad[] = {
      "host",           // one field
      "host:1:1",       // three fields
      "host:1:1:1:1",   // five fields
      "::1:12345:3:1",  // IPv6 without brackets
      ":1:1:1",         // empty host
      "[]:1:1:1",       // empty bracketed host
      "[::1:1:1:1",     // missing ']'
      "[::1]1:1:1",     // no ':' after ']'
      "[::1]",          // nothing after ']'
      "[::1]:1:1",      // three fields after brackets
      "ho st:1:1:1",    // whitespace inside the host
      "a]b:1:1:1",      // stray bracket
      "host :1:1:1",    // whitespace before a separator
      "host:x:1:1",     // port not a number
      "host:0:1:1",     // port out of range
      "host:65536:1:1",
      "host:99999999999999999999999:1:1",  // would overflow
      "host:+1:1:1",                       // sign
      "host:-1:1:1",
      "host:0x10:1:1",  // hex
      "host: 1:1:1",    // whitespace inside a field
      "host:1 :1:1",
      "host:1::1",   // empty fncode
      "host:1:0:1",  // fncode out of range
      "host:1:128:1",
      "host:1:1e1:1",
      "host:1:1:",   // empty n_inputs
      "host:1:1:0",  // n_inputs out of range
      "host:1:1:32",
      "host:1:1:1.0",
      "a:1:1:1,host:1:1",  // a bad chunk after a good one
  };
  for (const char *spec : bad) {
    std::vector<NaaEntry> out;
    std::string error;
    if (parse_naa_spec(spec, out, &error)) fail_msg("accepted malformed NAA_SPEC \"%s\"", spec);
    if (error.empty()) fail_msg("no error text for \"%s\"", spec);
    assert_false(parse_naa_spec(spec, out, nullptr));
  }
}

void error_names_chunk_and_problem(void **) {
  std::vector<NaaEntry> out;
  std::string error;
  assert_false(parse_naa_spec("a:1:1:1, host:x:1:1 ,c:1:1:1", out, &error));
  assert_string_equal(error.c_str(),
                      "NAA_SPEC chunk 2 \"host:x:1:1\": port \"x\" is not a number 1..65535");

  assert_false(parse_naa_spec(",host:1:1:32", out, &error));
  assert_string_equal(error.c_str(),
                      "NAA_SPEC chunk 2 \"host:1:1:32\": n_inputs \"32\" is not a number 1..31");

  assert_false(parse_naa_spec("host:1:128:1", out, &error));
  assert_string_equal(error.c_str(),
                      "NAA_SPEC chunk 1 \"host:1:128:1\": fncode \"128\" is not a number 1..127");

  assert_false(parse_naa_spec("::1:1:1:1", out, &error));
  assert_string_equal(error.c_str(),
                      "NAA_SPEC chunk 1 \"::1:1:1:1\": has 6 fields, expected "
                      "<host>:<port>:<fncode>:<n_inputs> (IPv6 addresses in brackets)");
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(single_entry),
      cmocka_unit_test(multiple_entries_in_order),
      cmocka_unit_test(empty_port_means_default),
      cmocka_unit_test(ipv6_in_brackets),
      cmocka_unit_test(whitespace_and_empty_chunks),
      cmocka_unit_test(output_replaced_only_on_success),
      cmocka_unit_test(malformed_chunks),
      cmocka_unit_test(error_names_chunk_and_problem),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
