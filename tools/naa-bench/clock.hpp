// SPDX-License-Identifier: BSD-3-Clause
// Timing primitives shared by every naa-bench pattern: a monotonic clock in nanoseconds, sample
// statistics, and the busy loop the overlap test computes with.
#pragma once

#include <algorithm>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace naa::bench {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time this thread has used: what a progress mode costs the application's core.
inline int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Durations in nanoseconds; storage is reserved up front so that recording never allocates
// inside a timed loop.
class Samples {
 public:
  explicit Samples(size_t capacity = 0) { ns_.reserve(capacity); }
  void add(int64_t ns) { ns_.push_back(ns); }
  size_t count() const { return ns_.size(); }
  int64_t last() const { return ns_.back(); }
  double median_us() { return percentile_us(50); }
  // Nearest-rank percentile: the smallest sample with at least p % of the samples at or below it.
  double percentile_us(double p) {
    if (ns_.empty()) return 0;
    std::sort(ns_.begin(), ns_.end());
    size_t rank = static_cast<size_t>(p / 100.0 * ns_.size() + 0.999999);
    rank = std::clamp<size_t>(rank, 1, ns_.size());
    return ns_[rank - 1] / 1e3;
  }
  double mean_us() const {
    if (ns_.empty()) return 0;
    double sum = 0;
    for (int64_t v : ns_) sum += static_cast<double>(v);
    return sum / ns_.size() / 1e3;
  }

 private:
  std::vector<int64_t> ns_;
};

// The host's "computation" between naa_invoke and naa_wait in the overlap test: spins on the
// clock for a given time. Timed rather than counted, so that it lasts as long as asked even on
// a shared core whose speed changes under it (a loop calibrated once came out 3x too long
// under load); it touches no memory, so it competes with the communication for the core only.
inline void busy_us(double us) {
  const int64_t end = now_ns() + static_cast<int64_t>(us * 1e3);
  while (now_ns() < end) {
  }
}

// The host sleeping instead: what overlap would be if the NAA and the transport had cores of
// their own, which a software NAA on the same machine as the host does not.
inline void sleep_us(double us) {
  timespec ts{static_cast<time_t>(us / 1e6), static_cast<long>(std::fmod(us, 1e6) * 1e3)};
  nanosleep(&ts, nullptr);
}

}  // namespace naa::bench
