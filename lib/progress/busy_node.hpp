// SPDX-License-Identifier: BSD-3-Clause
// Whether this node's CPUs are oversubscribed, for the adaptive wait (NAA_PROGRESS=adaptive,
// naa-server's connection threads): a thread that polls for a peer on a node with more runnable
// threads than CPUs takes the core the peer (a same-host naa-server, another client, the
// application's own ranks) needs to answer, and the answer then waits for the scheduler's next
// tick (about 4 ms). There, the waiter must sleep at once instead.
//
// Oversubscribed: more runnable threads on the node than its online CPUs (the running count of
// /proc/loadavg, which counts the reader too, less this process's threads that poll for an
// arrival and yield at every look, naa::yielding_pollers) while the reading thread itself was
// kept from running (its run delay in /proc/thread-self/schedstat grew by kWaitedShare of the time
// since its previous reading, or that is unknown; its peer awake on its own CPU, where the
// transport tells it, counts as one with it), or more ranks on this node than its online CPUs
// (SLURM_NTASKS_PER_NODE, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS). The run delay tells a
// count raised by threads that find a CPU free (Soft-RoCE's kernel workers beside a client and
// its NAA on 2 CPUs) from one where the polls take turns with other work. A process pinned to a
// subset of the CPUs is judged by the node's total: the running count says nothing of which CPUs
// the runnable threads may use. The running count is an instant: one reading above the CPUs (a
// kernel worker, a process starting or exiting) is no oversubscription, two in a row at least
// kRefresh apart (reading_interval()) are. From then it is held for kHold, as a spin that guessed
// wrong costs a tick while a sleep that guessed wrong costs a wake-up (some 30 us).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "wait_plan.hpp"  // Clock, yielding_pollers

namespace naa::progress {

// Per mille of its time a reading thread must have waited for a CPU to count as kept from one.
inline constexpr int kWaitedShare = 125;
// Per mille of its time a reading thread must have waited for a CPU to count as sharing one.
inline constexpr int kSharingShare = 10;

struct NodeLoad {
  unsigned online = 1;    // online CPUs of the node
  unsigned usable = 0;    // CPUs in this thread's affinity mask (0: not read)
  unsigned runnable = 0;  // runnable threads now (0: unknown)
  unsigned yielding = 0;  // of them, this process's yielding pollers (naa::yielding_pollers)
  unsigned beside = 0;    // of them, the reader's peer awake on the reader's CPU (0 or 1)
  unsigned ranks = 0;     // ranks on this node by the environment (0: unknown)
  // Per mille of the reader's time since its previous reading spent runnable but not running
  // (-1: unknown, as on a first reading or without schedstat).
  int waited = -1;
  // A peer beside the reader shares its CPU with it and yields while it polls: the two take
  // turns there, and the run delay each sees is the other's turns, not other work's. It counts
  // as one thread with the reader here.
  bool crowded() const {
    return contending() - std::min(contending(), beside) > online &&
           (waited < 0 || waited >= kWaitedShare);
  }
  bool oversubscribed() const { return crowded() || ranks > online; }
  // As many runnable threads as CPUs, and the reader waited for its CPU at times: a thread
  // shares its core, and a poll should yield it. A peer beside the reader is left out of the
  // count where the reader may run on another CPU (usable): with a CPU free, a reader that
  // yields to its peer keeps the two on one CPU, taking turns through yields (a 1 B round trip
  // over shm at 11-16 us instead of 2-3 on a 2-CPU VM, doc/performance.md), since the kernel
  // moves neither of two threads that run by turns (each stays cache-hot); one that does not
  // yield keeps the peer waiting, and the kernel soon moves the waiting one to the free CPU.
  bool at_capacity() const {
    const unsigned others =
        usable >= 2 ? contending() - std::min(contending(), beside) : contending();
    return others >= online && (waited < 0 || waited >= kSharingShare);
  }
  // The runnable threads that contend for a CPU: all but the yielding pollers.
  unsigned contending() const { return runnable - std::min(runnable, yielding); }
  // "2 CPUs online, 2 usable, 5 runnable, waited 40 %, ranks unknown: oversubscribed"
  std::string describe() const;
};

// A fresh reading (a few system calls); `waited` since this thread's previous reading.
NodeLoad read_node_load();

// The readings' verdict over time, fed by one thread at a time (the one that took the reading)
// and asked by any: oversubscribed from the second reading in a row above the CPUs, or from the
// first where the environment alone says so (ranks), until kHold after the last such reading.
// Times are ticks of Clock (wait_plan.hpp).
class Oversubscription {
 public:
  // Returns whether this reading began an oversubscribed spell (for a log line).
  bool observe(int64_t now, const NodeLoad &load);
  bool at(int64_t now) const;

 private:
  std::atomic<unsigned> above_in_a_row_{0};
  std::atomic<int64_t> since_{0};  // the last reading that counted (0: none)
};

// What a reader knows of its peer's thread (transport::Endpoint::peer_beside()): asked only
// when the reader takes a reading.
class PeerBeside {
 public:
  // Whether the peer's thread is awake on the caller's CPU.
  virtual bool peer_beside() const { return false; }

 protected:
  ~PeerBeside() = default;
};

// Whether a waiter should not poll: the node was oversubscribed at a reading within the last
// kHold. Readings are taken at most every reading_interval() by whichever thread asks, so that a
// poll loop may ask on every spell; `peer` (null: none known) tells the reading about the asking
// thread's peer. `now`: the caller's Clock::now(), read once per look (a clock read is a few
// tens of ns, a shared-memory round trip about a microsecond).
bool node_oversubscribed(Clock::time_point now, const PeerBeside *peer = nullptr);
// Whether the caller shares its CPU (NodeLoad::at_capacity): a poll should yield.
bool node_at_capacity(Clock::time_point now, const PeerBeside *peer = nullptr);

inline constexpr std::chrono::milliseconds kRefresh{2};
inline constexpr std::chrono::milliseconds kHold{50};

// A reading (two /proc files) is taken in a waiting thread's own path and costs a few
// microseconds on a node, but tens to hundreds under emulation (a TCG guest). Readings are
// therefore at least kReadingShare times their cost apart, so that they take at most 1 % of a
// waiting thread's time: from kRefresh up to kMaxRefresh, well inside the run-delay window
// and kHold, so that two readings in a row still count.
inline constexpr int kReadingShare = 100;
inline constexpr std::chrono::milliseconds kMaxRefresh{8};
static_assert(kHold >= 4 * kMaxRefresh, "readings renew a verdict before it lapses");
// The cost estimate after a reading that took `took`: that, or at most 1/8 more than
// `estimate` (0: none yet), so that a reading preempted halfway does not stretch the interval
// at once.
nanoseconds reading_cost(nanoseconds estimate, nanoseconds took);
// The time between readings for a reading cost estimate.
Clock::duration reading_interval(nanoseconds cost);

}  // namespace naa::progress
