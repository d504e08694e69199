// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_process.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace naa::transport::ofi {
namespace {

std::atomic<pid_t> cached{0};

void read_pid() {
  cached.store(getpid(), std::memory_order_relaxed);
}

}  // namespace

pid_t this_process() {
  // The handler goes with this module: glibc drops a library's fork handlers at its dlclose.
  static const bool registered = [] {
    read_pid();
    return pthread_atfork(nullptr, nullptr, read_pid) == 0;
  }();
  return registered ? cached.load(std::memory_order_relaxed) : getpid();
}

}  // namespace naa::transport::ofi
