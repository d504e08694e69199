// SPDX-License-Identifier: BSD-3-Clause
#include "wait_plan.hpp"

#include <algorithm>

namespace naa {
namespace {

constexpr microseconds kMaxPoll{5000};
constexpr microseconds kMaxExpected{200000};  // for the plan: a long kernel dozes no longer
constexpr int kShare = 32;
// The nap grows by 1/16 of the idle time: slower, and 64 idle clients of naa-server, one
// thread each, woke 1500 times a second (3 % of a core) a few seconds into their pause.
constexpr int kNapShare = 16;
constexpr microseconds kMinNap{20};
constexpr microseconds kMaxNap{500000};
constexpr microseconds kMinSlice{100000};
constexpr microseconds kMaxSlice{1000000};

std::atomic<unsigned> yielding{0};
thread_local unsigned yielding_here = 0;  // of them, the calling thread (0 or 1)

}  // namespace

WaitPlan wait_plan(nanoseconds expected, microseconds spin, bool woken) {
  const auto e = std::min(std::chrono::duration_cast<microseconds>(expected), kMaxExpected);
  return {std::max(spin, woken ? std::min(2 * e, kMaxPoll) : 2 * e),
          std::clamp(e / kShare, kShortestDoze, kLongestDoze), std::max(spin, 8 * e)};
}

microseconds idle_nap(nanoseconds idle) {
  return std::clamp(std::chrono::duration_cast<microseconds>(idle) / kNapShare, kMinNap, kMaxNap);
}

microseconds idle_slice(nanoseconds idle) {
  // Half the idle time: this sleep ends early for any news, so its length costs no latency.
  return std::clamp(std::chrono::duration_cast<microseconds>(idle) / 2, kMinSlice, kMaxSlice);
}

void yielding_pollers_add(int delta) {
  yielding_here += static_cast<unsigned>(delta);
  yielding.fetch_add(static_cast<unsigned>(delta), std::memory_order_relaxed);
}

unsigned yielding_pollers() {
  const unsigned all = yielding.load(std::memory_order_relaxed);
  return all - std::min(all, yielding_here);
}

}  // namespace naa
