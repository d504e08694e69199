// SPDX-License-Identifier: BSD-3-Clause
// The one wait policy of libnaa and naa-server: how a thread that waits for something (a
// reply in naa_wait and naa_waitany, a client's next invocation in naa-server, a completion in
// the progress thread) spends a spell without news. Waking a thread asleep in the kernel costs
// tens of microseconds on a virtual machine whose vCPU halted (doc/performance.md), more than a
// whole small round trip; polling for ever costs a core. So, from how long the awaited thing took
// last time (`expected`):
// - poll while it is due: twice `expected`, at least the caller's spin (NAA_SPIN_US, naa-server
//   --spin-us), at most 5 ms beyond it where a descriptor wakes the waiter (past that a wake-up
//   is a small share of the wait; shm's bell is such a descriptor, and its peer rings it also
//   for the segmented copies that need both sides to poll); where none does (an shm peer
//   without a bell), for the whole due time, since there large transfers move only while both
//   sides poll;
// - then doze: sleeps of 1/32 of `expected` that nobody has to wake, up to 8 times it;
// - then sleep until woken, where something can wake the thread (a descriptor), and otherwise
//   (libfabric 1.17's shm signals no wait object when a peer writes; a peer without a bell)
//   in naps of 1/16 of the time nothing came (idle_nap): a message after a pause waits at most
//   about 6 % of the pause on top, and an idle waiter wakes ever more rarely, at least every
//   0.5 s. A sleep on a descriptor that must end now and then to look at what no descriptor
//   signals (a peer gone, naa-server's stop) grows the same way from 0.1 to 1 s (idle_slice).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace naa {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

struct WaitPlan {
  microseconds poll;    // poll until this long without news
  microseconds period;  // then doze in sleeps this long
  microseconds length;  // until this long without news, then sleep
};

// The bounds of a plan's doze period: shorter, the wake-ups alone would take a core.
inline constexpr microseconds kShortestDoze{20};
inline constexpr microseconds kLongestDoze{2000};

// `woken`: a descriptor wakes the waiter when something comes.
WaitPlan wait_plan(nanoseconds expected, microseconds spin, bool woken = true);

// How long to nap, where nothing can wake the thread, after `idle` without news.
microseconds idle_nap(nanoseconds idle);
// How long a sleep on a descriptor may last before it looks around, after `idle`.
microseconds idle_slice(nanoseconds idle);

// How long the awaited thing takes: the latest, or the estimate before times kKeep / 256 if
// that was longer, so that one quick answer lowers it only gradually. Expected (3/4) forgets
// a slow one within some ten observations; Peak (255/256) keeps most of it for a hundred and
// more, for a wait that is fatal when too short and only costs time when too long.
template <int64_t kKeep>
class BasicExpected {
  static_assert(kKeep > 0 && kKeep < 256, "an estimate that decays, but not at once");

 public:
  void observe(nanoseconds took) { value_ = std::max(took, value_ * kKeep / 256); }
  nanoseconds value() const { return value_; }

 private:
  nanoseconds value_{0};
};
using Expected = BasicExpected<192>;
using Peak = BasicExpected<255>;

// The same, for a wait that the threads of a process repeat one after another (the steps of
// a connection's setup: each naa_create makes a new connection). A lost update between two
// threads only makes one estimate stale.
class SharedExpected {
 public:
  void observe(nanoseconds took) {
    const int64_t before = value_.load(std::memory_order_relaxed);
    value_.store(std::max<int64_t>(took.count(), before / 4 * 3), std::memory_order_relaxed);
  }
  nanoseconds value() const { return nanoseconds(value_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<int64_t> value_{0};
};

// The wait for the next of a series of arrivals (a listener's next connection request, a
// pool's next job, a new connection's first message): where they have come within
// kPollableGap (a program creating handles one after another), the waiter polls for twice
// that (at least `spin`, at most twice kPollableGap) before it sleeps, since waking it would
// cost the next arrival a wake-up (doc/performance.md); otherwise it does
// not poll at all, so an idle server sleeps. A gap counts as 2 * kPollableGap at most: after a
// pause, three quick arrivals bring the poll back (an hour's pause would otherwise take some
// 30 of them). `Estimate`: Expected for one waiter, SharedExpected for the threads of a
// process that wait in turn.
template <class Estimate>
class BasicArrivalPoll {
 public:
  static constexpr microseconds kPollableGap{1000};

  void observe(nanoseconds gap) { gap_.observe(std::min<nanoseconds>(gap, 2 * kPollableGap)); }
  // How long to poll for the next arrival; zero for none.
  nanoseconds due(microseconds spin = microseconds(0)) const {
    if (gap_.value() > kPollableGap) return nanoseconds(0);
    return std::min<nanoseconds>(std::max<nanoseconds>(2 * gap_.value(), spin), 2 * kPollableGap);
  }

 private:
  Estimate gap_;
};

using ArrivalPoll = BasicArrivalPoll<Expected>;
using SharedArrivalPoll = BasicArrivalPoll<SharedExpected>;

// This process's threads that poll for an arrival and yield their CPU at every look, or every
// few microseconds (a listener for the next connection, a parked naa-server thread for the next
// client, a naa-server connection thread polling for its client's next invocation). Such a
// thread steps behind the other runnable threads of its CPU within microseconds, so the
// busy-node verdict (busy_node.hpp) does not count it among the threads that would keep a peer
// from a core: counted, the listener and a parked thread of a same-host naa-server alone made 2
// CPUs look oversubscribed to its connection threads while a program created handles one after
// another, and a connection still polling for a client that had paused made the connection of
// the client that went on sleep at once (doc/performance.md). yielding_pollers() leaves out the
// calling thread, which a reading counts as the reader.
void yielding_pollers_add(int delta);
unsigned yielding_pollers();

// Counts the calling thread among yielding_pollers() from poll() until stop() or its end.
class YieldingPoller {
 public:
  YieldingPoller() = default;
  ~YieldingPoller() { stop(); }
  YieldingPoller(const YieldingPoller &) = delete;
  YieldingPoller &operator=(const YieldingPoller &) = delete;
  void poll() {
    if (on_) return;
    on_ = true;
    yielding_pollers_add(1);
  }
  void stop() {
    if (!on_) return;
    on_ = false;
    yielding_pollers_add(-1);
  }

 private:
  bool on_ = false;
};

}  // namespace naa
