// SPDX-License-Identifier: BSD-3-Clause
// This process's id without a system call per ask. glibc makes getpid(2) a system call at every
// call, and it is asked on hot paths: each handle lookup of naa_test's polling, and five times in
// each warm naa_create + naa_finalize over shm (an endpoint's name, its context's key, each
// control message, the parking check). Header-only: libnaa and each transport module keep their
// own copy, each refreshed in every child that fork() makes (glibc drops a library's fork
// handlers at its dlclose).
#pragma once

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace naa {

inline pid_t this_process() {
  static std::atomic<pid_t> cached{0};
  static const bool registered = [] {
    cached.store(getpid(), std::memory_order_relaxed);
    return pthread_atfork(nullptr, nullptr,
                          [] { cached.store(getpid(), std::memory_order_relaxed); }) == 0;
  }();
  return registered ? cached.load(std::memory_order_relaxed) : getpid();
}

}  // namespace naa
