// SPDX-License-Identifier: BSD-3-Clause
/* The C++ layer (include/naa.hpp) against a real naa-server, as a C++17 user sees it. */
#include <naa.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
// Neither cmocka 1.1.5 nor the C fixture server.h declare their functions extern "C".
extern "C" {
#include <cmocka.h>

#include "server.h"
}

namespace {

enum : std::uint32_t { FN_ADD1 = 1, FN_VECADD = 10, FN_UNSERVED = 5, FN_NOT_A_KERNEL = 99 };

static_assert(!std::is_copy_constructible_v<naa::handle> && !std::is_copy_assignable_v<naa::handle>,
              "two owners of one handle would finalize it twice");
static_assert(std::is_nothrow_move_constructible_v<naa::handle>);
static_assert(std::is_base_of_v<std::runtime_error, naa::error>);

test_server server;

int start_shared(void **) {
  return test_server_start_shared(&server);
}

int stop_shared(void **) {
  return test_server_stop(&server) == 0 ? 0 : -1;
}

/* Runs f, which must throw naa::error with `code`; returns the exception for further checks. */
template <class F>
naa::error expect_error(naa_error_t code, F f) {
  try {
    f();
  } catch (const naa::error &e) {
    if (e.code() != code) fail_msg("naa::error \"%s\", expected code %d", e.what(), int(code));
    return e;
  }
  fail_msg("no naa::error thrown, expected \"%s\"", naa_strerror(code));
  return naa::error(code, "unreachable");
}

/* vecadd from std::vector views: round 1 polled with test(), round 2 with wait(); b is
 * single-send, so changing it on the host after round 1 must not change the result. */
void test_vecadd_vectors(void **) {
  const std::size_t n = 100000;
  std::vector<double> a(n), b(n), c(n, -1.0);
  for (std::size_t i = 0; i < n; i++) a[i] = double(i), b[i] = 3.0 * double(i);
  test_server_use(&server, FN_VECADD, 2);
  naa::handle h(FN_VECADD, {a, naa::buffer(b).single_send()}, {c});
  assert_true(bool(h));

  h.invoke();
  std::optional<naa_status> st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(st = h.test())) assert_true(std::chrono::steady_clock::now() < deadline);
  assert_int_equal(st->naa_return_code, NAA_RC_SUCCESS);
  assert_int_equal(st->function_code, FN_VECADD);
  for (std::size_t i = 0; i < n; i++)
    if (c[i] != 4.0 * double(i))
      fail_msg("round 1: c[%zu] = %g, expected %g", i, c[i], 4.0 * double(i));

  for (std::size_t i = 0; i < n; i++) a[i] = 0.5 * double(i), b[i] = -7.0, c[i] = -1.0;
  h.invoke();
  naa_status st2 = h.wait();
  assert_int_equal(st2.naa_return_code, NAA_RC_SUCCESS);
  for (std::size_t i = 0; i < n; i++)
    if (c[i] != 3.5 * double(i))
      fail_msg("round 2: c[%zu] = %g, expected %g", i, c[i], 3.5 * double(i));
  h.finalize();
  assert_false(bool(h));
}

/* std::array, a C array and pointer + count give the same bytes to add1 (in place). */
void test_array_and_pointer_views(void **) {
  std::array<std::uint8_t, 300> arr{};
  std::uint8_t raw[64];
  std::vector<std::uint8_t> vec(1000);
  for (std::size_t i = 0; i < arr.size(); i++) arr[i] = std::uint8_t(i);
  for (std::size_t i = 0; i < sizeof raw; i++) raw[i] = std::uint8_t(2 * i);
  for (std::size_t i = 0; i < vec.size(); i++) vec[i] = std::uint8_t(3 * i);
  test_server_use(&server, FN_ADD1, 1);
  {
    naa::handle h(FN_ADD1, {arr}, {arr});
    h.invoke();
    h.wait();
  }
  {
    naa::handle h(FN_ADD1, {raw}, {raw});
    h.invoke();
    h.wait();
  }
  {
    naa::buffer part(vec.data() + 100, 500);  // only elements 100..599 travel
    assert_int_equal(part.param().size, 500);
    naa::handle h(FN_ADD1, std::vector<naa::buffer>{part}, std::vector<naa::buffer>{part});
    h.invoke();
    h.wait();
  }
  for (std::size_t i = 0; i < arr.size(); i++) assert_int_equal(arr[i], std::uint8_t(i + 1));
  for (std::size_t i = 0; i < sizeof raw; i++) assert_int_equal(raw[i], std::uint8_t(2 * i + 1));
  for (std::size_t i = 0; i < vec.size(); i++)
    assert_int_equal(vec[i], std::uint8_t(3 * i + (i >= 100 && i < 600 ? 1 : 0)));

  std::vector<std::int32_t> ints(10);
  assert_int_equal(naa::buffer(ints).param().size, 10 * sizeof(std::int32_t));
}

/* attr.naa names the server although NAA_SPEC names another code only; an attr with a bad
 * field throws with naa_create_attr's name. */
void test_attr(void **) {
  std::vector<std::uint8_t> buf(100, 7);
  test_server_use(&server, FN_VECADD, 2);
  const std::string where = std::string(test_host()) + ":" + std::to_string(server.port);
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = where.c_str();
  attr.timeout_ms = 10000;
  {
    naa::handle h(FN_ADD1, {buf}, {buf}, attr);
    h.invoke();
    assert_int_equal(h.wait().function_code, FN_ADD1);
  }
  assert_int_equal(buf[99], 8);
  attr.timeout_ms = -5;
  naa::error e = expect_error(NAA_ERR_INVALID_ARGUMENT, [&] {
    naa::handle h(FN_ADD1, std::vector<naa::buffer>{buf}, std::vector<naa::buffer>{buf}, attr);
  });
  // what() carries the cause (naa_last_error(3)), naming the field.
  assert_string_equal(e.what(),
                      "naa_create_attr: naa_attr_t.timeout_ms -5 is not in 1..31536000000");
}

/* Failures are naa::error with the library's code and the cause's text; nothing is created. */
void test_errors(void **) {
  std::vector<double> a(16), b(16), out(16);
  const std::vector<double> const_out(16);
  test_server_use(&server, FN_VECADD, 2);

  naa::error e = expect_error(NAA_ERR_NO_NAA, [&] { naa::handle h(FN_UNSERVED, {a, b}, {out}); });
  assert_string_equal(e.what(), (std::string("naa_create: no NAA for function code ") +
                                 std::to_string(FN_UNSERVED) + " in NAA_SPEC (it lists codes " +
                                 std::to_string(FN_VECADD) + ")")
                                    .c_str());

  expect_error(NAA_ERR_INVALID_ARGUMENT, [&] { naa::handle h(0, {a, b}, {out}); });
  expect_error(NAA_ERR_INVALID_ARGUMENT, [&] { naa::handle h(FN_VECADD, {a, b}, {}); });
  e = expect_error(NAA_ERR_INVALID_ARGUMENT, [&] {
    naa::handle h(FN_VECADD, {a, b}, {const_out});
  });
  assert_true(std::string(e.what()).find("const") != std::string::npos);

  naa::handle h(FN_VECADD, {const_out, b}, {out});  // const inputs are fine
  expect_error(NAA_ERR_STATE, [&] { h.wait(); });   // nothing in flight
  h.invoke();
  expect_error(NAA_ERR_STATE, [&] { h.invoke(); });  // still in flight
  h.wait();
  h.invoke();
  h.cancel();  // abandoned: nothing in flight
  expect_error(NAA_ERR_STATE, [&] { h.wait(); });
  h.invoke();  // connected again
  h.wait();
}

/* A non-zero NAA return code is NAA_ERR_NAA, and the exception carries the status. */
void test_naa_return_code(void **) {
  std::array<std::uint8_t, 64> buf{};
  test_server_use(&server, FN_NOT_A_KERNEL, 1);
  naa::handle h(FN_NOT_A_KERNEL, {buf}, {buf});
  h.invoke();
  naa::error e = expect_error(NAA_ERR_NAA, [&] { h.wait(); });
  assert_int_equal(e.status().naa_return_code, 0x7f);
  assert_true(std::string(e.what()).find("0x7f, unknown function code") != std::string::npos);
  assert_int_equal(e.status().function_code, FN_NOT_A_KERNEL);
  h.invoke();  // the handle stays usable, and test() reports the same way
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    assert_true(std::chrono::steady_clock::now() < deadline);
    try {
      if (h.test()) fail_msg("test() reported success for an unknown function code");
    } catch (const naa::error &err) {
      assert_int_equal(err.code(), NAA_ERR_NAA);
      assert_int_equal(err.status().naa_return_code, 0x7f);
      break;
    }
  }
}

/* Moving transfers ownership; the destructor of the last owner finalizes the C handle. */
/* naa::wait_all / wait_any over handles, built with naa::attr. */
void test_many_and_attr_builder(void **) {
  std::vector<std::uint8_t> x(64, 1), y(64, 5);
  const std::string where = std::string(test_host()) + ":" + std::to_string(server.port);
  naa::attr a;
  a.naa(where).timeout_ms(10000).connect_timeout_ms(10000).reconnect(2).param("NAA_SPIN_US=20");
  naa::handle hx(FN_ADD1, {x}, {x}, a), hy(FN_ADD1, {y}, {y}, a);
  hx.invoke();
  hy.invoke();
  const auto statuses = naa::wait_all({hx, hy});
  assert_int_equal(statuses.size(), 2);
  assert_int_equal(statuses[1].function_code, FN_ADD1);
  assert_int_equal(x[0], 2);
  assert_int_equal(y[63], 6);
  hy.invoke();
  const auto done = naa::wait_any({hx, hy});
  assert_true(done.has_value());
  assert_int_equal(done->first, 1);
  assert_int_equal(y[0], 7);
  assert_false(naa::wait_any({hx, hy}).has_value());  // none active
  naa::attr bad;
  bad.naa(where).param("NAA_NO_SUCH_THING=1");
  naa::error e =
      expect_error(NAA_ERR_INVALID_ARGUMENT, [&] { naa::handle h(FN_ADD1, {x}, {x}, bad); });
  assert_true(std::string(e.what()).find("NAA_NO_SUCH_THING=1") != std::string::npos);
  // The issue-25 fields reach naa_attr_t: out of range, they name themselves.
  naa::attr slow_connect, many_attempts;
  slow_connect.naa(where).connect_timeout_ms(-2);
  e = expect_error(NAA_ERR_INVALID_ARGUMENT,
                   [&] { naa::handle h(FN_ADD1, {x}, {x}, slow_connect); });
  assert_true(std::string(e.what()).find("naa_attr_t.connect_timeout_ms -2") != std::string::npos);
  many_attempts.naa(where).reconnect(1000);
  e = expect_error(NAA_ERR_INVALID_ARGUMENT,
                   [&] { naa::handle h(FN_ADD1, {x}, {x}, many_attempts); });
  assert_true(std::string(e.what()).find("naa_attr_t.reconnect 1000") != std::string::npos);
}

void test_move_and_destructor(void **) {
  std::array<std::uint8_t, 32> buf{};
  test_server_use(&server, FN_ADD1, 1);
  naa_handle raw;
  {
    naa::handle a(FN_ADD1, {buf}, {buf});
    raw = a.native();
    naa::handle b(std::move(a));
    assert_false(bool(a));
    assert_true(b.native().id == raw.id);
    expect_error(NAA_ERR_INVALID_HANDLE, [&] { a.invoke(); });

    naa::handle c(FN_ADD1, {buf}, {buf});
    naa_handle raw_c = c.native();
    c = std::move(b);  // c's first handle is finalized by the assignment
    assert_true(c.native().id == raw.id);
    assert_int_equal(naa_invoke(&raw_c), NAA_ERR_INVALID_HANDLE);
    c.invoke();
    c.wait();
  }
  assert_int_equal(buf[0], 1);
  assert_int_equal(naa_invoke(&raw), NAA_ERR_INVALID_HANDLE);  // finalized by ~handle
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vecadd_vectors),
      cmocka_unit_test(test_array_and_pointer_views),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_attr),
      cmocka_unit_test(test_naa_return_code),
      cmocka_unit_test(test_move_and_destructor),
      cmocka_unit_test(test_many_and_attr_builder),
  };
  return cmocka_run_group_tests(tests, start_shared, stop_shared);
}
