// SPDX-License-Identifier: BSD-3-Clause
// How a calling thread drives one endpoint to a condition through the progress driver: the
// wait of naa_wait (Session) and of naa-bench's raw round trips, which must be the same so that
// the benchmark's comparison isolates the session's own cost.
#pragma once

#include <cstddef>
#include <vector>

#include "deadline.hpp"
#include "progress/driver.hpp"
#include "progress/wait_set.hpp"
#include "transport/transport.hpp"

namespace naa::progress {

// No timer: nothing waits to be posted.
inline naa::Clock::time_point no_timer() {
  return naa::Clock::time_point::max();
}
// Nobody wakes the wait: it ends by done(), its endpoint, its timer or its deadline.
inline progress::WaitSet *no_waker() {
  return nullptr;
}

// Drives `ep` until done() or the deadline under `policy`; returns whether done() held. Every
// completion goes to absorb(completion, first), first telling whether it is the first of what
// one poll returned (completions seen at once share one time). timer() fires what is due (the
// paced final write) and returns when it is due next (no_timer(): never), called before every
// poll. sleeping() is called as the wait goes to sleep: the set whose wake (WaitSet::wake)
// another thread may use to end the wait, its wake descriptor then slept on too and drained
// when it fired (null: none); done() is asked once more after it, so that a wake that came
// before the sleeper could be found is not lost. Transport errors propagate (Error).
template <class Done, class Absorb, class Timer = decltype(&no_timer),
          class Sleeping = decltype(&no_waker)>
bool progress_until(transport::Endpoint &ep, const progress::Policy &policy, Deadline deadline,
                    Done &&done, Absorb &&absorb, Timer &&timer = no_timer,
                    Sleeping &&sleeping = no_waker) {
  class One final : public progress::Work {
   public:
    One(transport::Endpoint &ep, Done &done, Absorb &absorb, Timer &timer, Sleeping &sleeping)
        : ep_(ep), done_(done), absorb_(absorb), timer_(timer), sleeping_(sleeping) {}
    bool done() override { return done_(); }
    progress::Turn turn() override {
      timer_();
      const size_t n = ep_.poll(c_, 4);
      for (size_t k = 0; k < n; ++k) absorb_(c_[k], k == 0);
      return n > 0 ? progress::Turn::Moved : progress::Turn::Waiting;
    }
    bool woken() override { return ep_.wait_fd() >= 0; }
    bool peer_beside() const override { return ep_.peer_beside(); }
    progress::Armed arm(std::vector<pollfd> &fds) override {
      progress::Armed armed;
      armed.due = timer_();
      armed.ready = !ep_.arm_wait();
      if (ep_.wait_fd() >= 0) fds.push_back(pollfd{ep_.wait_fd(), POLLIN, 0});
      waker_ = sleeping_();
      if (waker_ != nullptr && waker_->wake_fd() >= 0) {
        fds_ = &fds;
        wake_at_ = fds.size();
        fds.push_back(pollfd{waker_->wake_fd(), POLLIN, 0});
        armed.ready = armed.ready || done_();
      }
      return armed;
    }
    void woke() override {
      if (waker_ != nullptr && fds_ != nullptr && ((*fds_)[wake_at_].revents & POLLIN) != 0)
        waker_->drain_wake();
      fds_ = nullptr;
    }

   private:
    transport::Endpoint &ep_;
    Done &done_;
    Absorb &absorb_;
    Timer &timer_;
    Sleeping &sleeping_;
    progress::WaitSet *waker_ = nullptr;
    std::vector<pollfd> *fds_ = nullptr;  // the sleep's, while it holds the wake descriptor
    size_t wake_at_ = 0;
    transport::Completion c_[4];
  } one(ep, done, absorb, timer, sleeping);
  return progress::drive(one, policy, deadline);
}

}  // namespace naa::progress
