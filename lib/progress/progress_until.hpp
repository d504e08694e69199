// SPDX-License-Identifier: BSD-3-Clause
// How a calling thread drives one endpoint to a condition through the progress driver: the
// wait of naa_wait (Session) and of naa-bench's raw round trips, which must be the same so that
// the benchmark's comparison isolates the session's own cost.
#pragma once

#include <cstddef>
#include <vector>

#include "deadline.hpp"
#include "progress/driver.hpp"
#include "transport/transport.hpp"

namespace naa {

// No timer: nothing waits to be posted.
inline progress::Clock::time_point no_timer() { return progress::Clock::time_point::max(); }

// Drives `ep` until done() or the deadline under `policy`; returns whether done() held. Every
// completion goes to absorb(completion, first), first telling whether it is the first of what
// one poll returned (completions seen at once share one time). timer() fires what is due (the
// paced final write) and returns when it is due next (no_timer(): never), called before every
// poll. Transport errors propagate (Error).
template <class Done, class Absorb, class Timer = decltype(&no_timer)>
bool progress_until(transport::Endpoint &ep, const progress::Policy &policy, Deadline deadline,
                    Done &&done, Absorb &&absorb, Timer &&timer = no_timer) {
  class One final : public progress::Work {
   public:
    One(transport::Endpoint &ep, Done &done, Absorb &absorb, Timer &timer)
        : ep_(ep), done_(done), absorb_(absorb), timer_(timer) {}
    bool done() override { return done_(); }
    progress::Turn turn() override {
      timer_();
      const size_t n = ep_.poll(c_, 4);
      for (size_t k = 0; k < n; ++k) absorb_(c_[k], k == 0);
      return n > 0 ? progress::Turn::Moved : progress::Turn::Waiting;
    }
    bool woken() override { return ep_.wait_fd() >= 0; }
    progress::Armed arm(std::vector<pollfd> &fds) override {
      progress::Armed armed;
      armed.due = timer_();
      armed.ready = !ep_.arm_wait();
      if (ep_.wait_fd() >= 0) fds.push_back(pollfd{ep_.wait_fd(), POLLIN, 0});
      return armed;
    }

   private:
    transport::Endpoint &ep_;
    Done &done_;
    Absorb &absorb_;
    Timer &timer_;
    transport::Completion c_[4];
  } one(ep, done, absorb, timer);
  return progress::drive(one, policy, deadline);
}

}  // namespace naa
