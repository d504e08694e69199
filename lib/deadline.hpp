// SPDX-License-Identifier: BSD-3-Clause
// A point in time after which a blocking step gives up. Every blocking call takes one, so
// nothing in libnaa or naa-server can wait forever.
#pragma once

#include <chrono>

namespace naa {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  template <class Rep, class Period>
  static Deadline after(std::chrono::duration<Rep, Period> span) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(span));
  }
  static Deadline now() { return Deadline(Clock::now()); }
  static Deadline at(Clock::time_point t) { return Deadline(t); }

  bool expired() const { return Clock::now() >= at_; }
  // This deadline, or `t` if that comes first: a sleep that must also end for housekeeping.
  Deadline sooner(Clock::time_point t) const { return Deadline(t < at_ ? t : at_); }

  // Time left, zero once expired: for sleeps finer than a millisecond.
  Clock::duration remaining() const {
    const Clock::duration left = at_ - Clock::now();
    return left > Clock::duration::zero() ? left : Clock::duration::zero();
  }

  // Milliseconds left, clamped to [0, cap]: the slice a blocking primitive may sleep for.
  // Rounded up: rounded down, the last fraction of a millisecond became sleeps of 0 ms, and
  // every caller spun through it (an idle naa-server's listener, once per 200 ms slice).
  int remaining_ms(int cap) const {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left <= 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace naa
