// SPDX-License-Identifier: BSD-3-Clause
#include "listener_wake.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "diag/log.hpp"

namespace naa::server {

ListenerWake::ListenerWake(int stop_fd) {
  if (stop_fd < 0) return;
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event stop{}, rung{};
  stop.events = rung.events = EPOLLIN;
  if (event_fd_ >= 0 && epoll_fd_ >= 0 &&
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd, &stop) == 0 &&
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &rung) == 0)
    return;
  NAA_LOG_WARN(
      "no descriptors for a listening thread's wake-ups: it looks for the stop every 200 ms");
  if (epoll_fd_ >= 0) close(epoll_fd_);
  epoll_fd_ = -1;
}

ListenerWake::~ListenerWake() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (event_fd_ >= 0) close(event_fd_);
}

void ListenerWake::ring() noexcept {
  if (event_fd_ < 0) return;
  const uint64_t one = 1;
  // Only EAGAIN (the counter full, so readable already) can fail here.
  [[maybe_unused]] ssize_t rc = write(event_fd_, &one, sizeof one);
}

bool ListenerWake::take() noexcept {
  uint64_t rings = 0;
  return event_fd_ >= 0 && read(event_fd_, &rings, sizeof rings) == sizeof rings;
}

}  // namespace naa::server
