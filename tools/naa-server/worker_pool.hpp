// SPDX-License-Identifier: BSD-3-Clause
// The threads that serve naa-server's clients, one per connection. A thread whose client has
// gone waits parked for the next one for a while instead of ending: starting a thread is a
// sizeable share of a connection's setup on loopback (doc/performance.md).
// At most `max_parked` wait, each at most `park_time`, and an idle server is back to its
// listening threads after `park_time`. A parked thread sleeps on a condition variable until a
// client comes or its time is up, except while the next client is due (naa::ArrivalPoll,
// the gap from a thread parking to the next client, at least `spin`): waking it would cost
// the next client's setup a wake-up (doc/performance.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <utility>

#include "wait_plan.hpp"

namespace naa::server {

class WorkerPool {
 public:
  // `ended` (may be empty) is called on a thread that has just ended, so that whoever
  // reaps learns that there is a thread to join without looking in slices.
  WorkerPool(size_t max_parked, std::chrono::milliseconds park_time,
             std::chrono::microseconds spin = std::chrono::microseconds(0),
             std::function<void()> ended = nullptr)
      : max_parked_(max_parked),
        park_time_(park_time),
        spin_(spin),
        ended_hook_(std::move(ended)) {}
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  // Runs `job` on a parked thread, or on a new one when none waits. Throws std::system_error
  // when no thread can be made (EAGAIN under a thread or memory limit); `job` is dropped then.
  void run(std::function<void()> job);
  // Joins the threads that have ended (a parked thread whose time ran out).
  void reap();
  // Threads not joined yet, running, parked or ended (for tests).
  size_t threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }
  // Wakes every parked thread to end, and joins all once their jobs return (the jobs end
  // themselves: naa-server's stop flag).
  void stop();

 private:
  struct Thread {
    std::thread thread;
    bool ended = false;  // under mu_
  };
  using Clock = std::chrono::steady_clock;
  void serve(Thread *self, std::function<void()> job);
  // Polls, with `lock` released, until a job waits or `due` has passed.
  void poll_for_job(std::unique_lock<std::mutex> &lock, std::chrono::nanoseconds due);

  const size_t max_parked_;
  const std::chrono::milliseconds park_time_;
  const std::chrono::microseconds spin_;
  const std::function<void()> ended_hook_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::list<Thread> threads_;              // under mu_
  size_t ended_ = 0;                       // of threads_, not joined yet; under mu_
  std::list<std::function<void()>> jobs_;  // handed over, not yet taken; under mu_
  std::atomic<size_t> waiting_jobs_{0};    // jobs_.size(), for the polling threads
  size_t parked_ = 0;                      // under mu_
  bool stopping_ = false;                  // under mu_
  Clock::time_point last_parked_{};        // under mu_
  naa::ArrivalPoll gap_;                   // from a thread parking to the next job; under mu_
};

}  // namespace naa::server
