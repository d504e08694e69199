// SPDX-License-Identifier: BSD-3-Clause
// naa-server's stop: a flag for the loops that look at it between steps, and a descriptor
// (an eventfd) that becomes readable when it is raised, for the waits that sleep on
// descriptors: an idle connection then sleeps until its client does something, its idle
// timeout, or the stop, instead of waking every few hundred milliseconds to look at the flag
// (1000 idle clients cost 3.65 % of a core that way, 1 % per ~400). raise() is
// async-signal-safe: the signal handler calls it.
#pragma once

#include <atomic>

namespace naa::server {

class StopSignal {
 public:
  StopSignal();  // without an eventfd (none left), fd() is -1 and waiters keep their slices
  ~StopSignal();
  StopSignal(const StopSignal &) = delete;
  StopSignal &operator=(const StopSignal &) = delete;

  void raise() noexcept;
  bool raised() const { return raised_.load(); }
  const std::atomic<bool> &flag() const { return raised_; }
  // Readable for good once raised (never read: every waiter sees it), or -1.
  int fd() const { return fd_; }

 private:
  std::atomic<bool> raised_{false};
  int fd_;
};

}  // namespace naa::server
