// SPDX-License-Identifier: BSD-3-Clause
// The descriptor a thread sleeps on until a MSG endpoint's CQ may hold a completion.
//
// Opened with FI_WAIT_FD, libfabric 1.17's tcp keeps the connection's socket in an epoll set
// for good and progresses the CQ through epoll_wait: every segment that arrives then runs
// epoll's wake-up callback, asleep or not, and a 1-byte round trip between two polling
// processes took 2-5 us longer than with the CQ opened without a wait object
// (doc/performance.md, session 16). Opened with FI_WAIT_POLLFD, the provider progresses with
// poll(2) and lists its descriptors (FI_GETWAIT); this class puts them into an epoll set of
// its own only while a thread means to sleep (arm()) and takes them out once a poll found
// something (disarm()), so that only a sleep pays for being woken.
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
  // A poll found something: the descriptors leave the set until the next arm().
  void disarm();
  bool armed() const { return armed_; }

 private:
  OfiCqWait(fid_cq *cq, int fd, bool own_set) : cq_(cq), fd_(fd), own_set_(own_set) {}

  fid_cq *cq_;
  int fd_;
  bool own_set_;  // fd_ is our epoll set (FI_WAIT_POLLFD), not the provider's descriptor
  bool armed_ = false;
  uint64_t change_index_ = UINT64_MAX;
  std::vector<pollfd> registered_;  // the provider's descriptors in our set, while armed
};

}  // namespace naa::transport::ofi_detail
