// SPDX-License-Identifier: BSD-3-Clause
#include "progress/wait_set.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace naa::progress {

std::shared_ptr<WaitSet> WaitSet::of_this_thread() {
  thread_local std::shared_ptr<WaitSet> set;
  thread_local pid_t pid = 0;
  const pid_t now = getpid();
  if (!set || pid != now) {
    const int epfd = epoll_create1(EPOLL_CLOEXEC);
    set = epfd >= 0 ? std::make_shared<WaitSet>(epfd, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
                    : nullptr;
    pid = now;
  }
  return set;
}

// The wake descriptor's event names the set itself, which no owner is.
WaitSet::WaitSet(int epfd, int wake_fd) : epfd_(epfd), wake_fd_(wake_fd) {
  if (wake_fd_ < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = this;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

WaitSet::~WaitSet() {
  if (wake_fd_ >= 0) close(wake_fd_);
  close(epfd_);
}

bool WaitSet::add(const void *owner, int fd, uint64_t *seen) {
  std::lock_guard<std::mutex> lock(mu_);
  *seen = drops_.load(std::memory_order_relaxed);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = const_cast<void *>(owner);
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  fds_[owner] = fd;
  return true;
}

// Touched even if it was dropped: its thread may still count on it being here.
void WaitSet::remove(const void *owner) {
  std::lock_guard<std::mutex> lock(mu_);
  forget(owner);
  touched_locked(owner);
}

void WaitSet::drop(const void *owner) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!forget(owner)) return;
  drops_.fetch_add(1, std::memory_order_release);
  touched_locked(owner);
}

bool WaitSet::forget(const void *owner) {
  const auto it = fds_.find(owner);
  if (it == fds_.end()) return false;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, it->second, nullptr);
  fds_.erase(it);
  return true;
}

void WaitSet::touched(const void *owner) {
  std::lock_guard<std::mutex> lock(mu_);
  touched_locked(owner);
}

void WaitSet::touched_locked(const void *owner) {
  if (touched_.size() < kMaxTouched)
    touched_.push_back(owner);
  else
    overflowed_ = true;
  touches_.fetch_add(1, std::memory_order_release);
}

bool WaitSet::touches(uint64_t *seen, std::vector<const void *> *out, bool *every) {
  if (touches_.load(std::memory_order_acquire) == *seen) return false;
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  *seen = touches_.load(std::memory_order_relaxed);
  out->swap(touched_);
  *every = overflowed_;
  overflowed_ = false;
  return true;
}

bool WaitSet::holds(const void *owner, uint64_t *seen) {
  const uint64_t drops = drops_.load(std::memory_order_acquire);
  if (drops == *seen) return true;
  std::lock_guard<std::mutex> lock(mu_);
  *seen = drops;
  return fds_.count(owner) != 0;
}

size_t WaitSet::fired(const void **out, size_t max) {
  epoll_event ev[64];
  const int n = epoll_wait(epfd_, ev, static_cast<int>(std::min<size_t>(max, 64)), 0);
  size_t owners = 0;
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.ptr == this)
      drain_wake();
    else
      out[owners++] = ev[i].data.ptr;
  }
  return owners;
}

void WaitSet::wake(const void *owner) {
  touched(owner);
  const uint64_t one = 1;
  if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0) {
    // EAGAIN: the counter is full, the set is awake anyway.
  }
}

void WaitSet::drain_wake() {
  uint64_t count;
  if (wake_fd_ >= 0 && read(wake_fd_, &count, sizeof count) < 0) {
    // EAGAIN: nothing to drain.
  }
}

}  // namespace naa::progress
