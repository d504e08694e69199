// SPDX-License-Identifier: BSD-3-Clause
// What waking a sleeping thread costs the thread that wakes it, on this machine: the floor
// under NAA_PROGRESS=thread's time in naa_invoke once the progress thread has gone to sleep
// (lib/progress/progress_engine.cpp). naa_invoke's hand-over is then one eventfd write(2) to a
// thread blocked in poll(2); this probe times the same write to a thread of its own, blocked the
// same way, on another CPU than the caller's, so that the overlap table can show the invocation
// time beside its floor from one run. On a virtual machine whose other vCPU halted, that write pays
// for waking the vCPU.
#pragma once

#include <atomic>
#include <thread>

namespace naa::bench {

class WakeProbe {
 public:
  WakeProbe();
  ~WakeProbe();
  WakeProbe(const WakeProbe &) = delete;
  WakeProbe &operator=(const WakeProbe &) = delete;

  // Time in the write(2) that wakes the sleeper, in microseconds. The sleeper has gone back to
  // sleep only if the caller let time pass since the previous call (the overlap test computes
  // for a round trip in between).
  double wake_us();

 private:
  void move_sleeper_off_my_cpu();
  void sleep_and_wake();

  int fd_;
  std::atomic<bool> stop_{false};
  std::thread sleeper_;
};

}  // namespace naa::bench
