// SPDX-License-Identifier: BSD-3-Clause
// When a listener polls for its next connection request instead of sleeping: while requests
// come within naa::ArrivalPoll::kPollableGap of each other (a program creating handles one
// after another), for twice the gap after each one. A sleeping listener would cost every warm
// naa_create its wake-up (the shm listener's bell, the tcp EQ's descriptor:
// doc/performance.md); a listener nobody talks to, or whose clients come seldom, never polls.
// Private to lib/transport.
#pragma once

#include <chrono>

#include "wait_plan.hpp"
#include "transport/transport.hpp"

namespace naa::transport {

class RequestPace {
 public:
  using Clock = std::chrono::steady_clock;

  // Whether the next request is due: poll, do not sleep.
  bool due(Clock::time_point now) const { return now < poll_until_; }
  // A request was found at `now`: the poll for the next one is planned from the gap.
  void found(Clock::time_point now) {
    ++counts_.requests;
    if (due(now)) ++counts_.polled;
    if (last_ != Clock::time_point{}) gap_.observe(now - last_);
    last_ = now;
    poll_until_ = now + gap_.due();
  }
  ListenerCounts counts() const { return counts_; }

 private:
  naa::ArrivalPoll gap_;
  Clock::time_point last_{};
  Clock::time_point poll_until_{};
  ListenerCounts counts_;
};

}  // namespace naa::transport
