// SPDX-License-Identifier: BSD-3-Clause
// The threads that serve naa-server's clients, one per connection. A thread whose client has
// gone waits parked for the next one for a while instead of ending: starting a thread is a
// sizeable share of a connection's setup on loopback (35-60 us measured, doc/performance.md).
// At most `max_parked` wait, each at most `park_time`; a parked thread costs no CPU (it
// sleeps on a condition variable until a client comes or its time is up), and an idle server
// is back to its listening threads after `park_time`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace naa::server {

class WorkerPool {
 public:
  WorkerPool(size_t max_parked, std::chrono::milliseconds park_time)
      : max_parked_(max_parked), park_time_(park_time) {}
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  // Runs `job` on a parked thread, or on a new one when none waits.
  void run(std::function<void()> job);
  // Joins the threads that have ended (a parked thread whose time ran out).
  void reap();
  // Wakes every parked thread to end, and joins all once their jobs return (the jobs end
  // themselves: naa-server's stop flag).
  void stop();

 private:
  struct Thread {
    std::thread thread;
    bool ended = false;  // under mu_
  };
  void serve(Thread *self, std::function<void()> job);

  const size_t max_parked_;
  const std::chrono::milliseconds park_time_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::list<Thread> threads_;              // under mu_
  std::list<std::function<void()>> jobs_;  // handed over, not yet taken; under mu_
  size_t parked_ = 0;                      // under mu_
  bool stopping_ = false;                  // under mu_
};

}  // namespace naa::server
