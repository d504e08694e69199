// SPDX-License-Identifier: BSD-3-Clause
#include "wake_probe.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "clock.hpp"

namespace naa::bench {

WakeProbe::WakeProbe() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + strerror(errno));
  sleeper_ = std::thread(&WakeProbe::sleep_and_wake, this);
}

WakeProbe::~WakeProbe() {
  stop_ = true;
  wake_us();
  sleeper_.join();
  close(fd_);
}

double WakeProbe::wake_us() {
  const uint64_t one = 1;
  const int64_t t = now_ns();
  ssize_t rc = write(fd_, &one, sizeof one);
  (void)rc;  // EAGAIN: the counter is non-zero, the sleeper wakes anyway
  return (now_ns() - t) / 1e3;
}

// The progress thread's scheduling class (SCHED_BATCH) and its way of sleeping (poll(2) on an
// eventfd), so that waking this thread costs what waking that one does.
void WakeProbe::sleep_and_wake() {
  sched_param none{};
  sched_setscheduler(0, SCHED_BATCH, &none);
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    ::poll(&p, 1, -1);
    uint64_t count;
    ssize_t rc = read(fd_, &count, sizeof count);
    (void)rc;
    if (stop_) return;
  }
}

}  // namespace naa::bench
