// SPDX-License-Identifier: BSD-3-Clause
#include "stop_signal.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace naa::server {

StopSignal::StopSignal() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  static_assert(std::atomic<bool>::is_always_lock_free, "raise() must be async-signal-safe");
}

StopSignal::~StopSignal() {
  if (fd_ >= 0) close(fd_);
}

void StopSignal::raise() noexcept {
  raised_.store(true);
  if (fd_ < 0) return;
  const uint64_t one = 1;
  // Only EAGAIN (the counter full, so readable already) can fail here.
  [[maybe_unused]] ssize_t rc = write(fd_, &one, sizeof one);
}

}  // namespace naa::server
