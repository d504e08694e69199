// SPDX-License-Identifier: BSD-3-Clause
// A sleep as long as a share of the time nothing came (naa::idle_nap), for the waits that
// have no descriptor to sleep on (an shm CQ, a send queue that stays full, the shm listener's
// queue): they must neither cost a core while nothing comes nor keep a message waiting long
// after a pause. A waiter that naps from a fixed length upwards instead puts a cliff in the
// round trip wherever a reply comes just after its polling ended.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "deadline.hpp"
#include "wait_plan.hpp"

namespace naa::transport {

class Nap {
 public:
  // `limit` caps the nap below idle_nap's own limit.
  explicit Nap(std::chrono::microseconds limit = std::chrono::microseconds::max())
      : limit_(limit), since_(Deadline::Clock::now()) {}

  // Sleeps for the nap the time since reset() earns, but no longer than `at_most`.
  void take(Deadline::Clock::duration at_most = Deadline::Clock::duration::max()) {
    std::this_thread::sleep_for(std::min(length(), at_most));
  }
  // How long take() would sleep now, for a wait that may also end early on a descriptor.
  Deadline::Clock::duration length() const {
    return std::min(naa::idle_nap(Deadline::Clock::now() - since_), limit_);
  }
  // Something came: the next nap is short again.
  void reset() { since_ = Deadline::Clock::now(); }
  // How long since something came.
  Deadline::Clock::duration idle() const { return Deadline::Clock::now() - since_; }

 private:
  std::chrono::microseconds limit_;
  Deadline::Clock::time_point since_;
};

}  // namespace naa::transport
