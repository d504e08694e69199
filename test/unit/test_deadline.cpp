// SPDX-License-Identifier: BSD-3-Clause
// Deadline (lib/deadline.hpp): the slices that blocking primitives are given.
#include <poll.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>

#include <chrono>
#include <climits>

extern "C" {
#include <cmocka.h>
}

#include "deadline.hpp"

using naa::Deadline;

// A wait that sleeps in remaining_ms() slices until the deadline sleeps once or twice: with
// the milliseconds rounded down, the last fraction of one became sleeps of 0 ms, through which
// every such loop spun (an idle naa-server's listener, once per 200 ms accept slice).
static void slices_end_at_the_deadline_without_spinning(void **) {
  for (int round = 0; round < 5; ++round) {
    const Deadline d = Deadline::after(std::chrono::microseconds(20500));
    int sleeps = 0;
    while (!d.expired()) {
      ::poll(nullptr, 0, d.remaining_ms(INT_MAX));
      ++sleeps;
    }
    assert_in_range(sleeps, 1, 2);
  }
}

static void clamped_to_zero_and_cap(void **) {
  assert_int_equal(Deadline::now().remaining_ms(INT_MAX), 0);
  assert_int_equal(Deadline::after(std::chrono::milliseconds(-5)).remaining_ms(INT_MAX), 0);
  assert_int_equal(Deadline::after(std::chrono::seconds(10)).remaining_ms(200), 200);
  // A fraction of a millisecond left is a whole one to sleep, not none.
  const int left = Deadline::after(std::chrono::microseconds(900)).remaining_ms(INT_MAX);
  assert_in_range(left, 0, 1);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(slices_end_at_the_deadline_without_spinning),
      cmocka_unit_test(clamped_to_zero_and_cap),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
