// SPDX-License-Identifier: BSD-3-Clause
// A sleep that doubles each time nothing came, up to a limit, and starts over short when
// something did: for the waits that have no descriptor to sleep on (an shm CQ, a send queue
// that stays full, the shm listener's queue), which must neither cost a core while nothing
// comes nor keep a message waiting long after a pause.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "deadline.hpp"

namespace naa::transport {

class Nap {
 public:
  constexpr Nap(std::chrono::microseconds first, std::chrono::microseconds limit)
      : first_(first), limit_(limit), next_(first) {}

  // Sleeps for the next nap, but no longer than `at_most`, and doubles the one after.
  void take(Deadline::Clock::duration at_most = Deadline::Clock::duration::max()) {
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(next_, at_most));
    next_ = std::min(next_ * 2, limit_);
  }
  // Something came: the next nap is short again.
  void reset() { next_ = first_; }

 private:
  std::chrono::microseconds first_, limit_, next_;
};

}  // namespace naa::transport
