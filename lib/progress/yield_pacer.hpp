// SPDX-License-Identifier: BSD-3-Clause
// How often a polling wait gives up its CPU (sched_yield(2)) where it yields at all (a progress
// thread, a wait that shares its CPU, busy_node.hpp's at_capacity), learned from the yields
// themselves, as an adaptive mutex learns whether spinning pays. A yield that returns in about
// the time of the cheapest one found nothing else to run on this CPU: it cost a system call, and
// a completion that landed meanwhile was seen only after it. After each such yield the next
// waits twice as long as before (in cheapest yields' time, from one up to kMaxSpacing). A yield
// that took longer let another thread run, the peer perhaps: from then the wait yields at every
// look again. On a node a system call costs under a microsecond, so a thread that comes to
// share the CPU of a wait that stopped yielding waits some tens of microseconds at most, where it
// does not preempt the wait as it wakes; where the CPU is emulated (rdma-vm's TCG guest,
// doc/performance.md) a system call costs tens of microseconds, and yields at every look kept
// the wait blind through much of a small round trip.
#pragma once

#include <algorithm>

#include "wait_plan.hpp"  // Clock, nanoseconds

namespace naa::progress {

class YieldPacer {
 public:
  static constexpr unsigned kMaxSpacing = 64;  // cheapest yields' time between two yields
  static constexpr unsigned kLongYield = 2;    // a yield this many cheapest ones long, or more

  // Whether a yield at `now` is due.
  bool due(Clock::time_point now) const { return now >= next_; }
  // A yield that began at `before` and returned at `after`.
  void yielded(Clock::time_point before, Clock::time_point after) {
    const nanoseconds took = after - before;
    cheapest_ = cheapest_.count() == 0 ? took : std::min(cheapest_, took);
    spacing_ = took >= kLongYield * cheapest_ ? 0 : std::clamp(2 * spacing_, 1u, kMaxSpacing);
    next_ = after + spacing_ * cheapest_;
  }

 private:
  nanoseconds cheapest_{0};
  unsigned spacing_ = 0;
  Clock::time_point next_{};
};

}  // namespace naa::progress
