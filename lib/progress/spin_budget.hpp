// SPDX-License-Identifier: BSD-3-Clause
// The adaptive wait's memory of whether polling paid, per handle (Session) and per naa-server
// connection, as adaptive mutexes keep it: a wait that polled and saw its completion while
// polling paid; one that polled its whole spell and then had to sleep did not, and the next
// waits sleep at once: 2 after the first such miss, then 4, 8, ... up to kMaxBackoff after
// misses in a row, before one polls again to see whether polling pays once more (a hit starts
// the count from 1 again). A poll that does not pay on a busy node costs the peer its core,
// and its answer a scheduler tick (some 4 ms); a sleep that was not needed costs a wake-up
// (some 30 us): so one try in up to kMaxBackoff waits. Relaxed atomics: a handle waited for by
// two threads in turn loses at worst an update.
#pragma once

#include <algorithm>
#include <atomic>

namespace naa::progress {

class SpinBudget {
 public:
  static constexpr unsigned kMaxBackoff = 1024;

  // Whether the next wait may poll.
  bool may_poll() const { return skip_.load(std::memory_order_relaxed) == 0; }
  // A wait that polled saw its completion while polling.
  void paid() {
    backoff_.store(1, std::memory_order_relaxed);
    skip_.store(0, std::memory_order_relaxed);
  }
  // A wait polled its whole spell without the completion and went to sleep.
  void missed() {
    const unsigned b = std::min(2 * backoff_.load(std::memory_order_relaxed), kMaxBackoff);
    backoff_.store(b, std::memory_order_relaxed);
    skip_.store(b, std::memory_order_relaxed);
  }
  // A wait that did not poll because of may_poll() ended.
  void skipped() {
    const unsigned s = skip_.load(std::memory_order_relaxed);
    if (s > 0) skip_.store(s - 1, std::memory_order_relaxed);
  }

 private:
  std::atomic<unsigned> backoff_{1};
  std::atomic<unsigned> skip_{0};
};

}  // namespace naa::progress
