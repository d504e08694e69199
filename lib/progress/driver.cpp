// SPDX-License-Identifier: BSD-3-Clause
#include "progress/driver.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>

#include "progress/busy_node.hpp"
#include "progress/yield_pacer.hpp"

namespace naa::progress {
namespace {

// Reading the clock costs as much as a poll: while polling, it is read every this many turns.
constexpr unsigned kTurnsPerLook = 64;

// Until `until` (Clock::time_point::max(): no end) or a descriptor fires.
void sleep(std::vector<pollfd> &fds, Clock::time_point now, Clock::time_point until) {
  if (until == Clock::time_point::max()) {
    ::ppoll(fds.data(), fds.size(), nullptr, nullptr);
    return;
  }
  const auto left =
      std::chrono::duration_cast<nanoseconds>(std::max(until - now, Clock::duration::zero()))
          .count();
  const timespec timeout{static_cast<time_t>(left / 1000000000),
                         static_cast<long>(left % 1000000000)};
  ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
}

// What an adaptive wait did with its spell without news, for its SpinBudget.
enum class Spell {
  None,     // nothing yet
  Polled,   // it polled
  GaveUp,   // it polled for the whole plan, then slept (`polled`)
  Skipped,  // the budget let it not poll
  Crowded,  // the node was oversubscribed: it did not poll, or stopped
};

// sched_yield(2), where this thread's YieldPacer lets a yield at `now`.
void paced_yield(Clock::time_point now) {
  thread_local YieldPacer pacer;
  if (!pacer.due(now)) return;
  const Clock::time_point before = Clock::now();
  sched_yield();
  pacer.yielded(before, Clock::now());
}

void learn(Spell spell, SpinBudget *budget) {
  if (budget == nullptr) return;
  if (spell == Spell::Polled)
    budget->paid();
  else if (spell == Spell::GaveUp)
    budget->missed();
  else if (spell == Spell::Skipped)
    budget->skipped();
}

}  // namespace

bool drive(Work &work, const Policy &policy, Deadline deadline) {
  std::vector<pollfd> fds;
  std::vector<pollfd> none;
  // The wait's start or its last news, taken at the first look at the clock: a wait whose
  // first poll completes it reads none (each read is tens of nanoseconds of a round trip).
  Clock::time_point last_news{};
  bool news = false, polling = false;
  unsigned quiet = 0;
  const bool adaptive = policy.mode == config::Progress::Mode::Adaptive;
  const bool budget_open = policy.budget == nullptr || policy.budget->may_poll();
  Spell spell = Spell::None;
  nanoseconds polled{0};  // GaveUp: how long it polled
  for (;;) {
    if (work.done()) {
      if (adaptive && spell == Spell::GaveUp && late_but_near(Clock::now() - last_news, polled))
        spell = Spell::Polled;
      if (adaptive) learn(spell, policy.budget);
      return true;
    }
    const Turn turn = work.turn();
    if (turn == Turn::Moved) {
      news = true;
      continue;
    }
    if (polling && !news && ++quiet % kTurnsPerLook != 0) continue;
    const Clock::time_point now = Clock::now();
    if (news || last_news == Clock::time_point{}) last_news = now;
    const bool was_polling = polling && !news;
    news = polling = false;
    if (deadline.expired()) {
      if (adaptive) learn(spell, policy.budget);
      return false;
    }
    const nanoseconds idle = now - last_news;
    const WaitPlan plan = work.plan(wait_plan(policy.expected, policy.spin, work.woken()));
    // Adaptive: a poll on an oversubscribed node holds the core the peer needs to answer.
    const bool crowded = adaptive && turn == Turn::Waiting && node_oversubscribed(now, &work);
    if (turn == Turn::Waiting && policy.mode != config::Progress::Mode::Block &&
        (policy.mode == config::Progress::Mode::Spin ||
         (idle < plan.poll && !crowded && budget_open))) {
      // A peer on this core (a software NAA on loopback) moves the data meanwhile.
      if (was_polling &&
          (work.background() || policy.yields || (adaptive && node_at_capacity(now, &work))))
        paced_yield(now);
      polling = true;
      if (spell == Spell::None) spell = Spell::Polled;
      continue;
    }
    if (adaptive && turn == Turn::Waiting && spell != Spell::GaveUp && spell != Spell::Crowded) {
      spell = crowded                  ? Spell::Crowded
              : spell == Spell::Polled ? Spell::GaveUp
              : !budget_open           ? Spell::Skipped
                                       : spell;
      if (spell == Spell::GaveUp) polled = idle;
    }
    const Clock::time_point end = now + deadline.remaining();
    if (work.background() && policy.mode != config::Progress::Mode::Block && idle < plan.length) {
      sleep(none, now, std::min(end, now + plan.period));  // nobody has to wake a doze
      continue;
    }
    fds.clear();
    const Armed armed = work.arm(fds);
    if (armed.ready) continue;
    Clock::time_point until = std::min(end, armed.due);
    // What no descriptor signals (a peer gone) is looked at now and then.
    if (turn == Turn::Waiting)
      until = std::min(until, now + (work.woken() ? Clock::duration(idle_slice(idle))
                                                  : Clock::duration(idle_nap(idle))));
    sleep(fds, now, until);
    work.woke();
  }
}

}  // namespace naa::progress
