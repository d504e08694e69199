// SPDX-License-Identifier: BSD-3-Clause
#include "wake_probe.hpp"

#include <poll.h>
#include <pthread.h>
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
  move_sleeper_off_my_cpu();
  const uint64_t one = 1;
  const int64_t t = now_ns();
  ssize_t rc = write(fd_, &one, sizeof one);
  (void)rc;  // EAGAIN: the counter is non-zero, the sleeper wakes anyway
  return (now_ns() - t) / 1e3;
}

// The progress thread sleeps on the CPU where it last worked, beside the application's thread;
// a sleeper on the waker's own CPU is woken without waking another CPU, which is not what
// naa_invoke pays. So before each write the sleeper may run anywhere but here (a sleeping
// thread's affinity changes without waking it). On one CPU there is no elsewhere.
void WakeProbe::move_sleeper_off_my_cpu() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  CPU_CLR(sched_getcpu(), &allowed);
  if (CPU_COUNT(&allowed) > 0)
    pthread_setaffinity_np(sleeper_.native_handle(), sizeof allowed, &allowed);
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
