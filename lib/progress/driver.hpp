// SPDX-License-Identifier: BSD-3-Clause
// The one progress loop of libnaa: naa_wait (Session), naa_waitany and its kin (completion.cpp),
// the progress thread of NAA_PROGRESS=thread (progress_engine.cpp) and naa-bench's raw round
// trips all wait through drive(). What they drive (one endpoint, many sessions, the engine's
// clients) is a Work: drive() turns it (one poll of everything it holds, completions handed to
// their sessions, due timers fired), and while a turn finds nothing it spends the spell as the
// wait plan says (wait_plan.hpp): polls, dozes (in the background), then arms every
// descriptor and sleeps on all of them at once in one ppoll(2), until the earliest timer (a paced
// final write) or the deadline.
#pragma once

#include <poll.h>

#include <chrono>
#include <vector>

#include "config/options.hpp"
#include "deadline.hpp"
#include "progress/busy_node.hpp"
#include "progress/spin_budget.hpp"
#include "wait_plan.hpp"

namespace naa::progress {

// What a turn found.
enum class Turn {
  Moved,    // something happened: turn again before waiting
  Waiting,  // nothing happened; work is in flight
  Idle,     // nothing happened and nothing is in flight: sleep until woken, however long
};

// What arming found before a sleep.
struct Armed {
  bool ready = false;  // something may be there already: turn, do not sleep
  Clock::time_point due = Clock::time_point::max();  // the earliest timer of the work
};

// peer_beside() (progress/busy_node.hpp): where the work is one endpoint, its peer's thread.
class Work : public PeerBeside {
 public:
  // Whether the caller's condition holds: drive() returns true at once.
  virtual bool done() = 0;
  virtual Turn turn() = 0;
  // Whether every descriptor arm() gives wakes the sleeper when something comes (false: some
  // are only seen by polling, shm: the sleeps are naps of the wait plan).
  virtual bool woken() = 0;
  // Readies every descriptor, appending it to `fds`, after a turn that found nothing: a
  // completion that lands after that turn is then seen by the next one or signalled.
  virtual Armed arm(std::vector<pollfd> &fds) = 0;
  // After a sleep on the armed descriptors.
  virtual void woke() {}
  // A thread in the background (the progress thread) yields its core while it polls (a
  // software NAA on loopback may need it) and dozes (short sleeps nobody has to wake, which
  // spare naa_invoke a system call) before it sleeps. A caller waiting for its own
  // completions does neither: under load a yield can cost it a whole time slice, and it
  // sleeps on the descriptors at once.
  virtual bool background() const { return false; }
  // How a spell without news is spent: the wait plan from the policy, which a Work may change
  // (the progress thread lengthens its dozes while its callers take every invocation back).
  virtual WaitPlan plan(WaitPlan planned) const { return planned; }

 protected:
  ~Work() = default;
};

// How a caller waits: NAA_PROGRESS's mode (spin: poll until the deadline; block: sleep at once;
// the others: the wait plan; adaptive: the wait plan's polls only while they pay), its
// NAA_SPIN_US, and how long the awaited thing took last time.
struct Policy {
  config::Progress::Mode mode = config::Progress::Mode::SpinThenBlock;
  microseconds spin{0};
  nanoseconds expected{0};
  // Yield the core between polls, as a thread in the background does: for a wait whose answer
  // needs a peer that may have to share this core first (a connection's setup on a loaded
  // host, where a poll that never yields held the server off for a whole time slice: 3-4 ms).
  bool yields = false;
  // Adaptive only: whether polling paid in this caller's recent waits (null: not learned).
  SpinBudget *budget = nullptr;
};

// Turns `work` until done() or the deadline; returns whether done() held. Transport errors
// propagate (Error). `policy` is read on every spell, so a caller may update it meanwhile.
bool drive(Work &work, const Policy &policy, Deadline deadline);

}  // namespace naa::progress
