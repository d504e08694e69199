// SPDX-License-Identifier: BSD-3-Clause
// A nap that the interrupt descriptor of a listener (Listener::interrupt_on) ends early: for
// the listeners' sleeps that have no descriptor of their own to wait on (held off by the
// descriptor gate, starved of descriptors, between rings of its bell), so that naa-server's
// stop ends them at once too. Private to lib/transport.
#pragma once

#include <poll.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "deadline.hpp"

namespace naa::transport {

// Sleeps for `length`, or until `fd` (-1: none) is readable: true then.
inline bool nap_unless_interrupted(int fd, Deadline::Clock::duration length) {
  if (fd < 0) {
    std::this_thread::sleep_for(length);
    return false;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(length).count();
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  pollfd p{fd, POLLIN, 0};
  return ::ppoll(&p, 1, &ts, nullptr) > 0;
}

}  // namespace naa::transport
