// SPDX-License-Identifier: BSD-3-Clause
#include "progress/completion.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "deadline.hpp"
#include "progress/wait_plan.hpp"

namespace naa {
namespace {

// naa_status.error took bytes that were padding: programs built before it keep their layout.
static_assert(offsetof(naa_status, error) == 1 && offsetof(naa_status, immediate) == 4,
              "naa_status changed its layout");

using Clock = Deadline::Clock;

void clear(naa_status *statuses, size_t n) {
  if (statuses != nullptr) std::fill(statuses, statuses + n, naa_status{});
}

// Ends a handle that done() found finished or failed.
int end_now(Session &s, naa_status *status) {
  bool flag = false;
  int rc = s.test(&flag, status);
  if (status != nullptr) status->error = static_cast<uint8_t>(rc);
  return rc;
}

// As the progress engine: a dead peer shows in connection events that no wait descriptor
// signals, so a sleep ends at least this often to look; an endpoint without a descriptor is
// only seen by polling, so its sleeps are naps of the wait plan.
constexpr std::chrono::milliseconds kSlice{100};

// The in-flight handles of one blocking call, each with its own deadline (its NAA_TIMEOUT
// from the call), driven by the calling thread: handles of NAA_PROGRESS=thread are taken
// from the engine for the call, as naa_wait does, and given back still running when it ends.
class Waiter {
 public:
  explicit Waiter(const Sessions &sessions) : sessions_(sessions) {
    const auto now = Clock::now();
    Clock::time_point spin_end = now;
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (!sessions[i]) continue;
      pending_.push_back(i);
      deadline_.push_back(now + sessions[i]->timeout());
      sessions[i]->take_back();
      const Progress &p = sessions[i]->progress();
      if (p.mode == Progress::Mode::Spin) spin_end = std::max(spin_end, deadline_.back());
      else if (p.mode != Progress::Mode::Block)
        spin_end = std::max(spin_end, now + sessions[i]->poll_window());
    }
    spin_end_ = spin_end;
    started_ = now;
  }
  ~Waiter() {
    for (const auto &s : sessions_)
      if (s) s->give_back();
  }
  Waiter(const Waiter &) = delete;
  Waiter &operator=(const Waiter &) = delete;

  bool empty() const { return pending_.empty(); }

  // Blocks until a pending handle has completed, failed or passed its deadline, then ends it
  // (status may be null) and returns its position in `sessions`; *rc is its result.
  size_t next(naa_status *status, int *rc) {
    for (;;) {
      for (size_t k = 0; k < pending_.size(); ++k)
        if (sessions_[pending_[k]]->done()) return end(k, status, rc, false);
      const auto now = Clock::now();
      for (size_t k = 0; k < pending_.size(); ++k)
        if (now >= deadline_[k]) return end(k, status, rc, true);
      if (now < spin_end_) continue;
      sleep(now);
    }
  }

 private:
  size_t end(size_t k, naa_status *status, int *rc, bool expired) {
    const size_t i = pending_[k];
    Session &s = *sessions_[i];
    if (expired) {
      *rc = s.expire(status);
      if (status != nullptr) status->error = static_cast<uint8_t>(*rc);
    } else {
      *rc = end_now(s, status);
    }
    pending_.erase(pending_.begin() + static_cast<long>(k));
    deadline_.erase(deadline_.begin() + static_cast<long>(k));
    return i;
  }

  // Sleeps on every pending endpoint's descriptor at once, armed first: a completion that
  // lands between arming and the last look is then either seen or signalled.
  void sleep(Clock::time_point now) {
    fds_.clear();
    bool every_fd = true;
    for (size_t i : pending_) {
      bool ready = false;
      int fd = sessions_[i]->arm(&ready);
      if (ready) return;
      if (fd >= 0) fds_.push_back(pollfd{fd, POLLIN, 0});
      else every_fd = false;
    }
    const Clock::duration slice =
        every_fd ? Clock::duration(kSlice) : Clock::duration(progress::idle_nap(now - started_));
    auto until = std::min(*std::min_element(deadline_.begin(), deadline_.end()), now + slice);
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::max<Clock::duration>(until - now, Clock::duration::zero()))
                          .count();
    const timespec timeout{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    ::ppoll(fds_.data(), fds_.size(), &timeout, nullptr);
  }

  const Sessions &sessions_;
  std::vector<size_t> pending_;
  std::vector<Clock::time_point> deadline_;
  Clock::time_point spin_end_;
  Clock::time_point started_;
  std::vector<pollfd> fds_;
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

int test_any(const Sessions &sessions, int *index, bool *flag, naa_status *status) {
  clear(status, 1);
  *index = NAA_UNDEFINED;
  *flag = std::none_of(sessions.begin(), sessions.end(), [](const auto &s) { return s != nullptr; });
  for (size_t i = 0; i < sessions.size() && !*flag; ++i) {
    if (!sessions[i] || !sessions[i]->done()) continue;
    *flag = true;
    *index = static_cast<int>(i);
    return end_now(*sessions[i], status);
  }
  return NAA_SUCCESS;
}

int test_all(const Sessions &sessions, bool *flag, naa_status *statuses) {
  clear(statuses, sessions.size());
  *flag = std::all_of(sessions.begin(), sessions.end(),
                      [](const auto &s) { return s == nullptr || s->done(); });
  if (!*flag) return NAA_SUCCESS;
  bool failed = false;
  for (size_t i = 0; i < sessions.size(); ++i)
    if (sessions[i])
      failed = end_now(*sessions[i], statuses != nullptr ? &statuses[i] : nullptr) != NAA_SUCCESS ||
               failed;
  return failed ? NAA_ERR_IN_STATUS : NAA_SUCCESS;
}

}  // namespace naa
