// SPDX-License-Identifier: BSD-3-Clause
// The adaptive wait's memory of whether polling paid, per handle (Session) and per naa-server
// connection, as adaptive mutexes keep it: a wait that polled and saw its completion while
// polling paid, and so did one whose completion came within twice the spell it polled
// (late_but_near: a tail of a round trip's spread, which the next spell, grown with the round
// trip's estimate, covers); one that polled its whole spell and then slept longer than that did
// not. The first miss after a hit is taken for the spread's far tail and forgiven; from the
// second in a row the next waits sleep at once: 2 after it, then 4, 8, ... up to kMaxBackoff
// after misses in a row, before one polls again to see whether polling pays once more (a hit
// starts the count anew). Where the peer cannot run (a busy node) misses come in a row. A poll that
// does not pay on a busy node costs the peer its core, and its answer a scheduler tick (some 4 ms);
// a sleep that was not needed costs a wake-up (some 30 us): so one try in up to kMaxBackoff waits.
// Relaxed atomics: a handle waited for by two threads in turn loses at worst an update.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>

namespace naa::progress {

// Whether a completion that came `waited` into a wait that polled for `polled` and then slept
// came near enough for polling to count as paid.
inline bool late_but_near(std::chrono::nanoseconds waited, std::chrono::nanoseconds polled) {
  return waited < 2 * polled;
}

class SpinBudget {
 public:
  static constexpr unsigned kMaxBackoff = 1024;

  // Whether the next wait may poll.
  bool may_poll() const { return skip_.load(std::memory_order_relaxed) == 0; }
  // A wait that polled saw its completion while polling.
  void paid() {
    backoff_.store(1, std::memory_order_relaxed);
    skip_.store(0, std::memory_order_relaxed);
    struck_.store(false, std::memory_order_relaxed);
  }
  // A wait polled its whole spell without the completion and went to sleep.
  void missed() {
    if (!struck_.exchange(true, std::memory_order_relaxed)) return;
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
  std::atomic<bool> struck_{false};  // a miss since the last hit
};

}  // namespace naa::progress
