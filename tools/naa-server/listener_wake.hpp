// SPDX-License-Identifier: BSD-3-Clause
// What ends a listening thread's sleep besides a connection request: the stop, and a ring
// from another thread that has left housekeeping for it (a connection that ended gave back
// regions and queues that expire after a while; a worker thread ended and waits to be
// joined). One descriptor for both (an epoll set of the stop's eventfd and one of its own),
// as a Listener takes one interrupt descriptor (transport::Listener::interrupt_on): the
// thread then sleeps to its next pending housekeeping, with none pending until a request, a
// ring or the stop, instead of waking every 200 ms to look (2 listeners: ~10 wake-ups a
// second of an idle server).
#pragma once

#include <atomic>
#include <chrono>

namespace naa::server {

class ListenerWake {
 public:
  // Without descriptors to spare (or a stop without one), fd() is -1: the thread keeps
  // sleeping in slices.
  explicit ListenerWake(int stop_fd);
  ~ListenerWake();
  ListenerWake(const ListenerWake &) = delete;
  ListenerWake &operator=(const ListenerWake &) = delete;

  // Readable while the stop is raised or a ring has not been taken; -1: none.
  int fd() const { return epoll_fd_; }
  void ring() noexcept;
  // Takes the rings so far: true when there was one.
  bool take() noexcept;
  // The thread's sleep ends at `until` (time_point::max(): it is working out when).
  void sleeping_until(std::chrono::steady_clock::time_point until) { asleep_until_.store(until); }
  // Rings only where the thread would sleep past `t`.
  void ring_if_asleep_past(std::chrono::steady_clock::time_point t) noexcept {
    if (asleep_until_.load() > t) ring();
  }

 private:
  std::atomic<std::chrono::steady_clock::time_point> asleep_until_{
      std::chrono::steady_clock::time_point::max()};
  int event_fd_ = -1;
  int epoll_fd_ = -1;
};

}  // namespace naa::server
