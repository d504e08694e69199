// SPDX-License-Identifier: BSD-3-Clause
// The descriptor a thread sleeps on until a MSG endpoint's CQ may hold a completion.
//
// Opened with FI_WAIT_FD, libfabric 1.17's tcp keeps the connection's socket in an epoll set
// for good and progresses the CQ through epoll_wait: every segment that arrives then runs
// epoll's wake-up callback, asleep or not, and a 1-byte round trip between two polling
// processes takes longer than with the CQ opened without a wait object
// (doc/performance.md). Opened with FI_WAIT_POLLFD, the provider progresses with
// poll(2) and lists its descriptors (FI_GETWAIT); this class puts them into an epoll set of
// its own when a thread means to sleep (arm()) and takes them out when the endpoint turns out
// to spin instead (polled()), so that a polling side pays no wake-ups. An endpoint that sleeps
// for every completion (naa_waitany's handles, an idle naa-server connection) stays in: each
// epoll_ctl costs more than the wake-ups it would save (more still where the set is itself
// watched by a wait set: the kernel then checks the wake-up paths; naa_waitany over many
// handles, doc/performance.md).
//
// Where a provider has no FI_WAIT_POLLFD, the CQ's FI_WAIT_FD descriptor is used as it is, and
// arm() and disarm() do nothing. Private to lib/transport.
#pragma once

#include <poll.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <memory>
#include <vector>

namespace naa::transport::ofi_detail {

class OfiCqWait {
 public:
  // Opens `*cq` on `domain` with a wait object: FI_WAIT_POLLFD, else FI_WAIT_FD. nullptr (and
  // *cq unset) when the provider has neither.
  static std::unique_ptr<OfiCqWait> open(fid_domain *domain, fi_cq_attr attr, fid_cq **cq);
  ~OfiCqWait();
  OfiCqWait(const OfiCqWait &) = delete;
  OfiCqWait &operator=(const OfiCqWait &) = delete;

  int fd() const { return fd_; }
  // After fi_trywait succeeded: makes fd() readable for the next completion. False when the
  // provider's descriptors changed since the last call (a connection's socket is listed only
  // after the CQ's next read): poll once more, then arm again.
  bool arm();
  // Every poll of the CQ: one that finds something after more than kSpinPolls that found
  // nothing since arm() ends a spin, nobody slept, and the descriptors leave the set.
  void polled(bool found);
  // The descriptors leave the set (before the endpoint's socket closes).
  void disarm();
  static constexpr int kSpinPolls = 4;

 private:
  OfiCqWait(fid_cq *cq, int fd, bool own_set) : cq_(cq), fd_(fd), own_set_(own_set) {}

  fid_cq *cq_;
  int fd_;
  bool own_set_;  // fd_ is our epoll set (FI_WAIT_POLLFD), not the provider's descriptor
  bool armed_ = false;
  int empty_polls_ = 0;  // since arm()
  uint64_t change_index_ = UINT64_MAX;
  std::vector<pollfd> registered_;  // the provider's descriptors in our set, while armed
};

}  // namespace naa::transport::ofi_detail
