// SPDX-License-Identifier: BSD-3-Clause
// How a calling thread drives one endpoint to a condition under an NAA_PROGRESS policy: the
// loop of naa_wait (Session) and of naa-bench's raw round trips, which must be the same so that
// the benchmark's comparison isolates the session's own cost.
#pragma once

#include <chrono>
#include <cstddef>

#include "deadline.hpp"
#include "config/options.hpp"
#include "progress/wait_plan.hpp"
#include "transport/transport.hpp"

namespace naa {

// Polls (spin: until the deadline; spin-then-block: while the wait plan of `expected`, how
// long this took last time, says to, NAA_SPIN_US at least; block: not at all), then sleeps in
// the endpoint until done() or the deadline. Every completion goes to absorb(completion, first),
// first telling whether it is the first of what one poll returned (completions seen at once).
// Returns whether done() held before the deadline. Transport errors propagate (Error).
template <class Done, class Absorb>
bool progress_until(transport::Endpoint &ep, const Progress &progress,
                    std::chrono::nanoseconds expected, Deadline deadline, Done &&done,
                    Absorb &&absorb) {
  transport::Completion c[4];
  if (progress.mode != Progress::Mode::Block) {
    const Deadline spin_until = progress.mode == Progress::Mode::Spin
                                    ? deadline
                                    : Deadline::after(progress::wait_plan(expected, progress.spin,
                                                                          ep.wait_fd() >= 0)
                                                          .poll);
    // Checked by time only every 64 polls: reading the clock costs as much as a poll.
    for (unsigned i = 1; !done(); ++i) {
      const size_t n = ep.poll(c, 4);
      for (size_t k = 0; k < n; ++k) absorb(c[k], k == 0);
      if (i % 64 == 0 && (spin_until.expired() || deadline.expired())) break;
    }
  }
  while (!done()) {
    const size_t n = ep.wait(c, 4, deadline);
    if (n == 0) return false;
    for (size_t k = 0; k < n; ++k) absorb(c[k], k == 0);
  }
  return true;
}

}  // namespace naa
