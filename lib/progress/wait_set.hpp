// SPDX-License-Identifier: BSD-3-Clause
// The descriptors a waiting thread sleeps on, kept across its calls: naa_waitany over a
// thousand handles costs one epoll_wait(2) a turn, not a ppoll(2) over a thousand descriptors,
// and a wake-up turns only the handles whose descriptor fired (lib/session/completion.cpp).
// One set per thread that waits (of_this_thread()); an owner (a Session) is registered in at
// most one set at a time, with its endpoint's descriptor, level-triggered, by add(); it leaves
// the set (remove()) before that descriptor is closed, so no event ever names an owner gone.
// A registration that fires while its thread waits for other handles is dropped (drop()):
// level-triggered, it would fire at every look; its owner learns it through holds().
// The set's thread remembers, across its calls, which of its handles are armed in the set or
// idle (completion.cpp): an owner tells the set (touched()) when that may have ended (it was
// polled, invoked, or left the set), and the thread asks only those again.
// Another thread can wake the set's thread out of its sleep (wake(): naa_cancel of a handle
// it waits for): a descriptor of the set's own, in its epoll instance and, for a wait on one
// endpoint that does not sleep on the set, to be slept on alone (wake_fd()).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace naa::progress {

class WaitSet {
 public:
  // The calling thread's set (a new one in a fork()ed child: the epoll instance is shared
  // with the parent); null if epoll_create1 fails (the caller then polls).
  static std::shared_ptr<WaitSet> of_this_thread();

  WaitSet(int epfd, int wake_fd);
  ~WaitSet();
  WaitSet(const WaitSet &) = delete;
  WaitSet &operator=(const WaitSet &) = delete;

  int fd() const { return epfd_; }  // readable when a registered descriptor is

  // false: the descriptor could not be registered (the owner is then polled). *seen: the
  // count of drops so far, for holds().
  bool add(const void *owner, int fd, uint64_t *seen);
  void remove(const void *owner);
  // Whether `owner` is still registered: a cheap answer unless a drop() happened since
  // `*seen` (the count of drops the owner last saw, updated).
  bool holds(const void *owner, uint64_t *seen);

  // Without waiting: up to `max` owners whose descriptor is readable.
  size_t fired(const void **out, size_t max);
  void drop(const void *owner);

  // From any thread: what the set's thread knows of `owner` may be out of date.
  void touched(const void *owner);
  // Whether an owner was touched since `*seen` (one atomic load when none was: asked every
  // turn); if so, *seen is brought up to date and the owners touched are in `out`, or
  // `*every` is set when more were touched than the set kept (then any of them may have been).
  bool touches(uint64_t *seen, std::vector<const void *> *out, bool *every);

  // From any thread: `owner` touched, and the set's thread woken from its sleep, or its next
  // sleep kept from starting, until it drains the wake (fired() does, or drain_wake()).
  void wake(const void *owner);
  // Readable from a wake() until drained; -1 when the set has none (the sleeps then end by
  // their timeouts only).
  int wake_fd() const { return wake_fd_; }
  void drain_wake();

 private:
  bool forget(const void *owner);  // under mu_; whether it was there
  void touched_locked(const void *owner);

  // Touches kept for the set's thread, at most this many: an owner invoked over and over while
  // its thread never waits again must not grow them without bound.
  static constexpr size_t kMaxTouched = 1024;

  const int epfd_;
  const int wake_fd_;  // an eventfd, also in epfd_ (-1: none)
  std::mutex mu_;
  std::unordered_map<const void *, int> fds_;  // owner -> its registered descriptor
  std::atomic<uint64_t> drops_{0};
  std::atomic<uint64_t> touches_{0};
  std::vector<const void *> touched_;  // since the thread last asked; under mu_
  bool overflowed_ = false;            // more than kMaxTouched; under mu_
};

}  // namespace naa::progress
