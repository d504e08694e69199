// SPDX-License-Identifier: BSD-3-Clause
#include "progress/completion.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "deadline.hpp"
#include "progress/driver.hpp"

namespace naa {
namespace {

// naa_status.error took bytes that were padding: programs built before it keep their layout.
static_assert(offsetof(naa_status, error) == 1 && offsetof(naa_status, immediate) == 4,
              "naa_status changed its layout");

using Clock = Deadline::Clock;

void clear(naa_status *statuses, size_t n) {
  if (statuses != nullptr) std::fill(statuses, statuses + n, naa_status{});
}

// Ends a handle that done() found finished or failed; false, ending nothing, when another
// thread ended it meanwhile and invoked it again: the new invocation is still in flight.
bool end_now(Session &s, naa_status *status, int *rc) {
  bool flag = false;
  *rc = s.test(&flag, status);
  if (!flag && *rc == NAA_SUCCESS) return false;
  if (status != nullptr) status->error = static_cast<uint8_t>(*rc);
  return true;
}

// The in-flight handles of one blocking call, each with its own deadline (its NAA_TIMEOUT
// from the call), driven by the calling thread through the progress driver: handles of
// NAA_PROGRESS=thread are taken from the engine for the call, as naa_wait does, and given back
// still running when it ends. A turn polls the handles that are not armed and looks at the
// descriptors of the armed ones in one ppoll(2), so that a thousand idle handles cost one
// system call a turn, not a thousand polls under a thousand locks; it sleeps on all the
// descriptors at once. The mode that polls most among them decides how it waits.
class Waiter final : private progress::Work {
 public:
  explicit Waiter(const Sessions &sessions) : sessions_(sessions) {
    const auto now = Clock::now();
    bool all_block = true;
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (!sessions[i]) continue;
      pending_.push_back(i);
      deadline_.push_back(now + sessions[i]->timeout());
      progress::Policy p;
      fds_.push_back(pollfd{sessions[i]->join_wait(&p), POLLIN, 0});
      unwoken_.push_back(false);
      if (p.mode == Progress::Mode::Spin) policy_.mode = Progress::Mode::Spin;
      all_block = all_block && p.mode == Progress::Mode::Block;
      policy_.spin = std::max(policy_.spin, p.spin);
      policy_.expected = std::max(policy_.expected, p.expected);
    }
    if (all_block) policy_.mode = Progress::Mode::Block;
  }
  ~Waiter() {
    for (const auto &s : sessions_)
      if (s && s->progress().mode == Progress::Mode::Thread) s->give_back();
  }
  Waiter(const Waiter &) = delete;
  Waiter &operator=(const Waiter &) = delete;

  bool empty() const { return pending_.empty(); }

  // Blocks until a pending handle has completed, failed or passed its deadline, then ends it
  // (status may be null) and returns its position in `sessions`; *rc is its result.
  size_t next(naa_status *status, int *rc) {
    status_ = status;
    rc_ = rc;
    for (;;) {
      found_ = kNone;
      const Deadline first = Deadline::at(*std::min_element(deadline_.begin(), deadline_.end()));
      if (progress::drive(*this, policy_, first)) return remove(found_);
      const auto now = Clock::now();
      for (size_t k = 0; k < pending_.size(); ++k)
        if (now >= deadline_[k]) {
          *rc = sessions_[pending_[k]]->expire(status);
          if (status != nullptr) status->error = static_cast<uint8_t>(*rc);
          return remove(k);
        }
    }
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  bool done() override { return found_ != kNone; }

  // The handles not known to be armed are polled, and, when this call waits on more than one,
  // armed at once if that found nothing; those armed (by this call or an earlier one) are
  // polled only when their descriptor says something came: all of them in one ppoll(2), which
  // skips the negative descriptors of the others.
  progress::Turn turn() override {
    bool any_armed = false;
    for (size_t k = 0; k < pending_.size(); ++k) {
      if (fds_[k].fd < 0) {
        if (ends(k)) return progress::Turn::Moved;
        if (pending_.size() > 1 && !unwoken_[k] && !arm_one(k)) return progress::Turn::Moved;
      }
      any_armed = any_armed || fds_[k].fd >= 0;
    }
    const timespec now{0, 0};
    if (!any_armed || ::ppoll(fds_.data(), fds_.size(), &now, nullptr) <= 0)
      return progress::Turn::Waiting;
    for (size_t k = 0; k < pending_.size(); ++k) {
      if (fds_[k].fd < 0 || fds_[k].revents == 0) continue;
      fds_[k].fd = -1;
      if (ends(k)) return progress::Turn::Moved;
    }
    return progress::Turn::Moved;  // something came, not yet an end: look again
  }

  bool ends(size_t k) {
    Session &s = *sessions_[pending_[k]];
    if (!s.done() || !end_now(s, status_, rc_)) return false;
    found_ = k;
    return true;
  }

  bool woken() override { return every_fd_; }

  // Armed first: a completion that lands between arming and the last look is then either
  // seen or signalled.
  progress::Armed arm(std::vector<pollfd> &fds) override {
    progress::Armed all;
    every_fd_ = true;
    for (size_t k = 0; k < pending_.size(); ++k) {
      if (fds_[k].fd >= 0) continue;
      if (!arm_one(k, &all, &fds)) {
        all.ready = true;
        return all;
      }
    }
    fds.insert(fds.end(), fds_.begin(), fds_.end());
    return all;
  }

  // Arms pending handle k; false when something may be there already. An endpoint with a
  // timer due (a paced final write) stays unarmed, polled every turn, its descriptor in `fds`.
  bool arm_one(size_t k, progress::Armed *all = nullptr, std::vector<pollfd> *fds = nullptr) {
    progress::Armed one;
    const int fd = sessions_[pending_[k]]->arm(&one);
    if (one.ready) return false;
    if (all != nullptr) all->due = std::min(all->due, one.due);
    if (fd >= 0 && one.due == progress::Clock::time_point::max()) fds_[k].fd = fd;
    else if (fd >= 0 && fds != nullptr) fds->push_back(pollfd{fd, POLLIN, 0});
    if (fd < 0) {
      every_fd_ = false;
      unwoken_[k] = true;
    }
    return true;
  }

  size_t remove(size_t k) {
    const size_t i = pending_[k];
    pending_.erase(pending_.begin() + static_cast<long>(k));
    fds_.erase(fds_.begin() + static_cast<long>(k));
    unwoken_.erase(unwoken_.begin() + static_cast<long>(k));
    deadline_.erase(deadline_.begin() + static_cast<long>(k));
    return i;
  }

  const Sessions &sessions_;
  std::vector<size_t> pending_;
  std::vector<Clock::time_point> deadline_;
  progress::Policy policy_{Progress::Mode::SpinThenBlock, {}, {}};
  std::vector<pollfd> fds_;  // per pending handle: its descriptor while armed, else -1
  std::vector<bool> unwoken_;  // per pending handle: no descriptor (shm), arming is no use
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

int test_any(const Sessions &sessions, int *index, bool *flag, naa_status *status) {
  clear(status, 1);
  *index = NAA_UNDEFINED;
  *flag = std::none_of(sessions.begin(), sessions.end(), [](const auto &s) { return s != nullptr; });
  for (size_t i = 0; i < sessions.size() && !*flag; ++i) {
    int rc = NAA_SUCCESS;
    if (!sessions[i] || !sessions[i]->done() || !end_now(*sessions[i], status, &rc)) continue;
    *flag = true;
    *index = static_cast<int>(i);
    return rc;
  }
  return NAA_SUCCESS;
}

int test_all(const Sessions &sessions, bool *flag, naa_status *statuses) {
  clear(statuses, sessions.size());
  *flag = std::all_of(sessions.begin(), sessions.end(),
                      [](const auto &s) { return s == nullptr || s->done(); });
  if (!*flag) return NAA_SUCCESS;
  bool failed = false;
  for (size_t i = 0; i < sessions.size(); ++i) {
    int rc = NAA_SUCCESS;
    if (sessions[i]) end_now(*sessions[i], statuses != nullptr ? &statuses[i] : nullptr, &rc);
    failed = failed || rc != NAA_SUCCESS;
  }
  return failed ? NAA_ERR_IN_STATUS : NAA_SUCCESS;
}

}  // namespace naa
