// SPDX-License-Identifier: BSD-3-Clause
#include "session/completion.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "deadline.hpp"
#include "progress/driver.hpp"
#include "progress/wait_set.hpp"

namespace naa::session {
namespace {

// naa_status.error took bytes that were padding: programs built before it keep their layout.
static_assert(offsetof(naa_status, error) == 1 && offsetof(naa_status, immediate) == 4,
              "naa_status changed its layout");

using Clock = Deadline::Clock;

void clear(naa_status *statuses, size_t n) {
  if (statuses != nullptr) std::fill(statuses, statuses + n, naa_status{});
}

// Ends invocation `invocation` of a handle that done() found finished or failed, or that
// ended elsewhere (Session::end); false, ending nothing, when it is still in flight.
bool end_now(Session &s, uint64_t invocation, naa_status *status, int *rc) {
  bool flag = false;
  *rc = s.end(invocation, &flag, status);
  if (!flag && *rc == NAA_SUCCESS) return false;
  if (status != nullptr) status->error = static_cast<uint8_t>(*rc);
  return true;
}

// What a thread's waits know of each handle of its last call, kept for its next call: most
// programs pass the same array again, and a handle that did not change then costs its Session
// neither a lock nor a cache miss (asking each handle again makes a call over many handles
// cost in proportion to all of them).
// Watched: armed in the thread's set, nobody polled it since; Idle: nothing in flight, in the
// set. Each stays so until the handle touches the set (WaitSet::touched: polled, invoked,
// moved to another set, gone); Ask: its wait is joined again.
enum class Known : uint8_t { Ask, Watched, Idle };

struct Memory {
  std::vector<Session *> sessions;  // the last call's
  std::vector<Known> known;
  // What each told as it last joined a wait: how to wait for it, its NAA_TIMEOUT, the
  // invocation waited for.
  std::vector<progress::Policy> policy;
  std::vector<std::chrono::milliseconds> timeout;
  std::vector<uint64_t> invocation;
  std::shared_ptr<progress::WaitSet> set;  // the set `known` is about
  uint64_t touches = 0;                    // the set's touches already applied to `known`
  std::vector<const void *> touched;       // scratch for touches()
  // (session, its position in `sessions`), by session: a touch finds its positions without
  // a pass over a thousand handles.
  std::vector<std::pair<const void *, size_t>> where;
  // The Waiter's per-call arrays (see there), kept here so that a call allocates none.
  std::vector<const void *> owners;
  std::vector<char> unwoken;
  std::vector<size_t> polled, taken;
  bool busy = false;  // a wait of this thread uses it (a wait from a log handler gets its own)

  // For a call over `now` sleeping on `now_set`: what is known of another array or set is
  // forgotten.
  void resume(const Sessions &now, const std::shared_ptr<progress::WaitSet> &now_set) {
    if (now_set == set && now == sessions) return;
    sessions = now;
    set = now_set;
    where.resize(now.size());
    for (size_t i = 0; i < now.size(); ++i) where[i] = {now[i], i};
    std::sort(where.begin(), where.end());
    known.assign(now.size(), Known::Ask);
    policy.resize(now.size());
    timeout.resize(now.size());
    invocation.resize(now.size());
  }

  // The handles that touched the set since the last look are asked again; unwatched(i) for
  // each that was Watched.
  template <class Unwatched>
  void apply_touches(Unwatched &&unwatched) {
    bool every = false;
    if (!set || !set->touches(&this->touches, &touched, &every)) return;
    auto forget = [&](size_t i) {
      if (known[i] == Known::Watched) unwatched(i);
      known[i] = Known::Ask;
    };
    if (every) {
      for (size_t i = 0; i < known.size(); ++i) forget(i);
    } else {
      for (const void *t : touched) {
        auto at = std::lower_bound(where.begin(), where.end(), std::make_pair(t, size_t{0}));
        for (; at != where.end() && at->first == t; ++at) forget(at->second);
      }
    }
  }
};

// The calling thread's Memory, or, if a wait of this thread already uses it, `own`.
Memory &lease(std::unique_ptr<Memory> &own) {
  thread_local Memory memory;
  Memory &m = memory.busy ? *(own = std::make_unique<Memory>()) : memory;
  m.busy = true;
  return m;
}

// The in-flight handles of one blocking call, each with its own deadline (its NAA_TIMEOUT
// from the call), driven by the calling thread through the progress driver: handles of
// NAA_PROGRESS=thread are taken from the engine for the call, as naa_wait does, and given back
// still running when it ends. The thread's set of descriptors (progress/wait_set.hpp) is kept
// across its calls, and so is the arming of the handles in it: a turn polls only the handles
// not Watched and asks the set, in one epoll_wait(2), which of the others fired; a sleep is
// one ppoll(2) on the set. A thousand idle handles thus cost no system call of their own, and a
// wake-up turns only the handles whose descriptor fired. What the thread knows of its handles
// is kept too (Memory): a call over the same array asks only the handles that changed. The
// mode that polls most among them decides how it waits.
class Waiter final : private progress::Work {
 public:
  explicit Waiter(const Sessions &sessions)
      : sessions_(sessions), set_(progress::WaitSet::of_this_thread()), mem_(lease(own_)) {
    mem_.resume(sessions, set_);
    mem_.apply_touches([](size_t) {});
    const size_t n = sessions.size();
    owners_.assign(n, nullptr);
    unwoken_.assign(n, 0);
    polled_.clear();
    taken_.clear();
    // A thousand handles make this loop most of the call's start, while the request just
    // posted waits for this thread's next poll to move on (libfabric tcp moves data as it is
    // polled): plain pointers, and the sums in locals, not in members that the stores through
    // `owners` might alias.
    const Known *known = mem_.known.data();
    const progress::Policy *policy = mem_.policy.data();
    const std::chrono::milliseconds *timeout = mem_.timeout.data();
    Session *const *s = sessions.data();
    const void **owners = owners_.data();
    size_t left = 0;
    auto first = std::chrono::milliseconds::max();
    bool any_spin = false, all_block = true, any_adaptive = false;
    std::chrono::microseconds spin{0};
    std::chrono::nanoseconds expected{0};
    for (size_t i = 0; i < n; ++i) {
      if (s[i] == nullptr || known[i] == Known::Idle) continue;
      if (known[i] == Known::Ask && !join(i)) continue;
      ++left;
      owners[i] = s[i];
      first = std::min(first, timeout[i]);
      const progress::Policy &p = policy[i];
      any_spin = any_spin || p.mode == config::Progress::Mode::Spin;
      all_block = all_block && p.mode == config::Progress::Mode::Block;
      any_adaptive = any_adaptive || p.mode == config::Progress::Mode::Adaptive;
      spin = std::max(spin, p.spin);
      expected = std::max(expected, p.expected);
    }
    left_ = left;
    first_ = first;
    if (any_spin)
      policy_.mode = config::Progress::Mode::Spin;
    else if (all_block)
      policy_.mode = config::Progress::Mode::Block;
    else if (any_adaptive)
      policy_.mode = config::Progress::Mode::Adaptive;
    policy_.spin = spin;
    policy_.expected = expected;
  }
  ~Waiter() {
    for (const size_t i : taken_) {
      sessions_[i]->give_back();
      mem_.known[i] = Known::Ask;  // the engine polls it
    }
    mem_.busy = false;
  }
  Waiter(const Waiter &) = delete;
  Waiter &operator=(const Waiter &) = delete;

  bool empty() const { return left_ == 0; }

  // Blocks until a pending handle has completed, failed or passed its deadline, then ends it
  // (status may be null) and returns its position in `sessions`; *rc is its result.
  size_t next(naa_status *status, int *rc) {
    status_ = status;
    rc_ = rc;
    for (;;) {
      found_ = kNone;
      if (recount_) {
        first_ = std::chrono::milliseconds::max();
        for (size_t i = 0; i < owners_.size(); ++i)
          if (owners_[i] != nullptr) first_ = std::min(first_, mem_.timeout[i]);
        recount_ = false;
      }
      if (progress::drive(*this, policy_, Deadline::at(start_ + first_))) return remove(found_);
      const auto now = Clock::now();
      for (size_t i = 0; i < owners_.size(); ++i)
        if (owners_[i] != nullptr && now >= start_ + mem_.timeout[i]) {
          *rc = sessions_[i]->expire(mem_.invocation[i], status);
          if (status != nullptr) status->error = static_cast<uint8_t>(*rc);
          return remove(i);
        }
    }
  }

 private:
  using Watch = Session::Watch;
  static constexpr size_t kNone = SIZE_MAX;

  // Asks handle i how to wait for it (taking it from the progress engine); false when nothing
  // is in flight.
  bool join(size_t i) {
    Session &s = *sessions_[i];
    progress::Policy p;
    const Watch w = s.join_wait(&p, set_.get(), &mem_.invocation[i]);
    mem_.policy[i] = p;
    mem_.timeout[i] = s.timeout();
    mem_.known[i] = w == Watch::Watched ? Known::Watched
                    : w == Watch::Idle  ? Known::Idle
                                        : Known::Ask;
    if (w == Watch::Inactive || w == Watch::Idle) return false;
    if (p.mode == config::Progress::Mode::Thread) taken_.push_back(i);
    if (w != Watch::Watched) polled_.push_back(i);
    return true;
  }

  bool watched(size_t i) const { return mem_.known[i] == Known::Watched; }

  bool done() override { return found_ != kNone; }

  // The handles not Watched are polled, and, when this call waits on more than one, armed at
  // once if that found nothing; of the Watched ones only those the set says fired, or that
  // touched the set (another thread polled them or took them into its own set), are polled
  // (and are no longer Watched until armed again). A handle of the set that this call does
  // not wait for is dropped from it when it fires: level-triggered, it would fire at every
  // look. A turn therefore costs what is polled and what fired, not the handles waited for.
  progress::Turn turn() override {
    mem_.apply_touches([this](size_t i) { polled_.push_back(i); });
    for (size_t n = 0; n < polled_.size();) {
      const size_t i = polled_[n];
      if (ends(i)) return progress::Turn::Moved;
      if (left_ > 1 && !unwoken_[i]) {
        if (!arm_one(n)) return progress::Turn::Moved;
        if (watched(i)) continue;  // arm_one took it out of polled_
      }
      ++n;
    }
    if (!set_) return progress::Turn::Waiting;
    const void *fired[64];
    const size_t n = set_->fired(fired, 64);
    bool news = false;
    for (size_t f = 0; f < n; ++f) {
      const auto it = std::find(owners_.begin(), owners_.end(), fired[f]);
      const size_t i = static_cast<size_t>(it - owners_.begin());
      if (it == owners_.end() || !watched(i)) {
        if (it == owners_.end()) set_->drop(fired[f]);
        continue;
      }
      mem_.known[i] = Known::Ask;
      polled_.push_back(i);
      news = true;
      if (ends(i)) return progress::Turn::Moved;
    }
    return news ? progress::Turn::Moved : progress::Turn::Waiting;
  }

  bool ends(size_t i) {
    Session &s = *sessions_[i];
    const uint64_t invocation = mem_.invocation[i];
    if (!s.done(invocation) || !end_now(s, invocation, status_, rc_)) return false;
    found_ = i;
    return true;
  }

  bool woken() override { return every_fd_; }

  // Armed first: a completion that lands between arming and the last look is then either
  // seen or signalled.
  progress::Armed arm(std::vector<pollfd> &fds) override {
    progress::Armed all;
    every_fd_ = set_ != nullptr;
    for (size_t n = 0; n < polled_.size();) {
      const size_t i = polled_[n];
      if (!arm_one(n, &all)) {
        all.ready = true;
        return all;
      }
      if (!watched(i)) ++n;
    }
    if (set_) fds.push_back(pollfd{set_->fd(), POLLIN, 0});
    return all;
  }

  // Arms polled_[n]; false when something may be there already. Armed in the set, it leaves
  // polled_ (the last one takes its place). An endpoint with a timer due (a paced final
  // write) is in the set but stays polled.
  bool arm_one(size_t n, progress::Armed *all = nullptr) {
    const size_t i = polled_[n];
    progress::Armed one;
    const Watch w = sessions_[i]->arm(&one, set_);
    if (one.ready) return false;
    if (all != nullptr) all->due = std::min(all->due, one.due);
    if (w == Watch::None) {
      every_fd_ = false;
      unwoken_[i] = true;
    }
    if (w == Watch::Watched) {
      mem_.known[i] = Known::Watched;
      polled_[n] = polled_.back();
      polled_.pop_back();
    }
    return true;
  }

  size_t remove(size_t i) {
    owners_[i] = nullptr;
    mem_.known[i] = Known::Ask;
    --left_;
    const auto it = std::find(polled_.begin(), polled_.end(), i);
    if (it != polled_.end()) polled_.erase(it);
    recount_ = true;  // the earliest deadline may be later now
    return i;
  }

  const Sessions &sessions_;
  const std::shared_ptr<progress::WaitSet> set_;  // null: epoll failed, every handle polled
  std::unique_ptr<Memory> own_;                   // when the thread's Memory is in use
  Memory &mem_;
  // The call's start: each handle's deadline is its NAA_TIMEOUT after it.
  const Clock::time_point start_ = Clock::now();
  std::chrono::milliseconds first_ = std::chrono::milliseconds::max();  // the least pending one's
  bool recount_ = false;  // a handle ended: first_ is to be found again
  // Per handle of the call: its session while pending (as the set names it, null once
  // ended or when inactive), whether it has no descriptor (shm: arming is no use). Whether it
  // is Watched in set_ is mem_.known.
  std::vector<const void *> &owners_ = mem_.owners;
  std::vector<char> &unwoken_ = mem_.unwoken;
  std::vector<size_t> &polled_ = mem_.polled;  // the pending handles not Watched, in no order
  std::vector<size_t> &taken_ = mem_.taken;    // the handles taken from the progress engine
  size_t left_ = 0;                            // pending handles
  progress::Policy policy_{config::Progress::Mode::SpinThenBlock, {}, {}};
  size_t found_ = kNone;
  naa_status *status_ = nullptr;
  int *rc_ = nullptr;
  bool every_fd_ = true;
};

}  // namespace

int wait_all(const Sessions &sessions, naa_status *statuses) {
  clear(statuses, sessions.size());
  Waiter waiter(sessions);
  bool failed = false;
  while (!waiter.empty()) {
    naa_status st{};
    int rc = NAA_SUCCESS;
    size_t i = waiter.next(&st, &rc);
    if (statuses != nullptr) statuses[i] = st;
    failed = failed || rc != NAA_SUCCESS;
  }
  return failed ? NAA_ERR_IN_STATUS : NAA_SUCCESS;
}

int wait_any(const Sessions &sessions, int *index, naa_status *status) {
  clear(status, 1);
  *index = NAA_UNDEFINED;
  Waiter waiter(sessions);
  if (waiter.empty()) return NAA_SUCCESS;
  int rc = NAA_SUCCESS;
  *index = static_cast<int>(waiter.next(status, &rc));
  return rc;
}

int test_any(const Sessions &sessions, const std::vector<uint64_t> &invocations, int *index,
             bool *flag, naa_status *status) {
  clear(status, 1);
  *index = NAA_UNDEFINED;
  *flag =
      std::none_of(sessions.begin(), sessions.end(), [](const auto &s) { return s != nullptr; });
  for (size_t i = 0; i < sessions.size() && !*flag; ++i) {
    int rc = NAA_SUCCESS;
    if (!sessions[i] || !sessions[i]->done(invocations[i]) ||
        !end_now(*sessions[i], invocations[i], status, &rc))
      continue;
    *flag = true;
    *index = static_cast<int>(i);
    return rc;
  }
  return NAA_SUCCESS;
}

int test_all(const Sessions &sessions, const std::vector<uint64_t> &invocations, bool *flag,
             naa_status *statuses) {
  clear(statuses, sessions.size());
  *flag = true;
  for (size_t i = 0; i < sessions.size() && *flag; ++i)
    *flag = sessions[i] == nullptr || sessions[i]->done(invocations[i]);
  if (!*flag) return NAA_SUCCESS;
  bool failed = false;
  for (size_t i = 0; i < sessions.size(); ++i) {
    int rc = NAA_SUCCESS;
    if (sessions[i])
      end_now(*sessions[i], invocations[i], statuses != nullptr ? &statuses[i] : nullptr, &rc);
    failed = failed || rc != NAA_SUCCESS;
  }
  return failed ? NAA_ERR_IN_STATUS : NAA_SUCCESS;
}

}  // namespace naa::session
