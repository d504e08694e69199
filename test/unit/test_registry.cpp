// SPDX-License-Identifier: BSD-3-Clause
// The registry of transports (transport/registry.hpp): a transport is one row of its table and
// an Entry. The fake transport of the unit tests (fake_entry.hpp) is added as one row, through
// the same table as the built-in ones, and is then named, parsed, chosen by auto and opened by
// naa_create's path like them.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Before cmocka.h, whose fail() macro would rename Session::fail.
#include "config/params.hpp"
#include "transport/params.hpp"
#include "session/settings.hpp"
#include "fake_entry.hpp"
#include "session/open_session.hpp"
#include "transport/registry.hpp"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

namespace {

using namespace std::chrono_literals;
namespace transport = naa::transport;

// Runs `f`, which must throw naa::Error `code` with `part` in its text.
template <typename F>
void throws(F f, naa_error_t code, const std::string &part) {
  try {
    f();
  } catch (const naa::Error &e) {
    assert_int_equal(e.code(), code);
    assert_non_null(std::strstr(e.what(), part.c_str()));
    return;
  }
  fail_msg("no error; expected one saying '%s'", part.c_str());
}

void the_row_is_in_the_table(void **) {
  bool found = false;
  for (const transport::Registration &r : transport::registrations())
    found = found || std::string(r.name) == "fake";
  assert_true(found);
  throws([] { transport::add_transport(naa::fake::kRow); }, NAA_ERR_CONFIG, "registered already");
}

// One grammar for every row: an exact name first, then a family's name+VARIANT.
void names_are_parsed_against_the_table(void **) {
  transport::ParsedName p = transport::parse_name("ofi+tcp");
  assert_string_equal(p.row->name, "ofi");
  assert_string_equal(p.variant.c_str(), "tcp");
  p = transport::parse_name("ofi+shm");
  assert_string_equal(p.row->name, "ofi+shm");
  assert_string_equal(p.variant.c_str(), "");
  p = transport::parse_name("fake+x");
  assert_string_equal(p.row->name, "fake");
  assert_string_equal(p.variant.c_str(), "x");
  assert_true(transport::parse_name("auto").is_auto);
  for (const char *bad : {"", "ofi+", "verbs+x", "tcp", "fakex", "+fake"})
    throws([bad] { transport::parse_name(bad); }, NAA_ERR_CONFIG, "fake, fake+VARIANT");
  // The parameter registry checks NAA_TRANSPORT by the same table.
  setenv("NAA_TRANSPORT", "fake+x", 1);
  naa::transport::read_parameters().check();
  setenv("NAA_TRANSPORT", "fakex", 1);
  throws([] { naa::transport::read_parameters().check(); }, NAA_ERR_CONFIG, "fake, fake+VARIANT");
  unsetenv("NAA_TRANSPORT");
}

// A row without an entry (a transport not built here) is named, and refused with its hint.
void a_row_not_built_is_unsupported(void **) {
  transport::add_transport({"absent", false, "absent", "not here", "configure --with-absent", 0,
                            nullptr, nullptr, false, nullptr});
  throws([] { transport::open_transport("absent"); }, NAA_ERR_UNSUPPORTED,
         "configure --with-absent");
  assert_false(transport::capabilities_of("absent").same_host);
}

// auto is a policy over the rows: the fake reaches its port, ahead of the built-in ones.
void auto_chooses_the_fake_for_its_port(void **) {
  assert_string_equal(transport::auto_transport_for("127.0.0.1", naa::fake::Entry::kPort, "", "",
                                                    naa::Deadline::after(5s))
                          .c_str(),
                      "fake");
  // It listens nowhere: not among the listeners of a server under auto (which may be none in a
  // build without libfabric on a machine without an RDMA device).
  try {
    for (const std::string &name : transport::listen_transports("auto", "127.0.0.1"))
      assert_string_not_equal(name.c_str(), "fake");
  } catch (const naa::Error &e) {
    assert_int_equal(e.code(), NAA_ERR_UNSUPPORTED);
  }
}

// naa_create's path (Settings, open_session) over the fake, named and through auto: connect,
// MRSP and one invocation.
void naa_create_path_opens_it(void **) {
  for (const char *name : {"fake", "auto"}) {
    setenv("NAA_TRANSPORT", name, 1);
    setenv("NAA_SPEC", "127.0.0.1:1:10:1", 1);
    auto settings = naa::session::Settings::resolve_shared(nullptr);
    std::vector<uint8_t> in(64), out(64);
    std::vector<naa::protocol::Region> regions{{in.data(), 64, naa::protocol::mrsp::kInput},
                                               {out.data(), 64, naa::protocol::mrsp::kOutput}};
    auto session = naa::session::open_session(10, regions, 1, std::move(settings));
    naa_handle_info_t info{};
    session->describe(&info);
    assert_string_equal(info.transport, std::string(name) == "auto" ? "auto: fake" : "fake");
    assert_int_equal(session->invoke(), NAA_SUCCESS);
    assert_int_equal(session->wait(nullptr), NAA_SUCCESS);
  }
  unsetenv("NAA_TRANSPORT");
  unsetenv("NAA_SPEC");
}

// auto loads a row's module only when it comes to that row: a row ahead of the fake that does
// not admit the destination (Registration::may_reach) and one behind the fake, which reaches
// it, are never asked for their entry.
int entries_asked = 0;
const transport::Entry *counted_entry() {
  ++entries_asked;
  return naa::fake::entry();
}

void auto_asks_only_the_rows_it_tries(void **) {
  transport::add_transport({"ahead", false, "ahead", "admits no destination", "test/unit", -2,
                            nullptr, counted_entry, false,
                            [](const transport::Destination &) { return false; }});
  transport::add_transport({"behind", false, "behind", "ranked after the fake", "test/unit", 5,
                            nullptr, counted_entry, false, nullptr});
  assert_string_equal(transport::auto_transport_for("127.0.0.1", naa::fake::Entry::kPort, "", "",
                                                    naa::Deadline::after(5s))
                          .c_str(),
                      "fake");
  assert_int_equal(entries_asked, 0);
}

}  // namespace

int main() {
  transport::add_transport(naa::fake::kRow);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_row_is_in_the_table),
      cmocka_unit_test(names_are_parsed_against_the_table),
      cmocka_unit_test(a_row_not_built_is_unsupported),
      cmocka_unit_test(auto_chooses_the_fake_for_its_port),
      cmocka_unit_test(naa_create_path_opens_it),
      cmocka_unit_test(auto_asks_only_the_rows_it_tries),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
