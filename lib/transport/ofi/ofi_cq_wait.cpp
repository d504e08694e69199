// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_cq_wait.hpp"

#include <rdma/fi_errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "error.hpp"
#include "transport/ofi/ofi_fabric.hpp"

namespace naa::transport::ofi {
namespace {

// The provider's descriptors and the index of their last change (FI_GETWAIT of an
// FI_WAIT_POLLFD object); false where it does not list them.
bool list_descriptors(fid_cq *cq, std::vector<pollfd> *fds, uint64_t *change_index) {
  fds->resize(std::max<size_t>(fds->size(), 4));
  for (;;) {
    fi_wait_pollfd list{};
    list.nfds = fds->size();
    list.fd = fds->data();
    const int rc = fi_control(&cq->fid, FI_GETWAIT, &list);
    if (rc == -FI_ETOOSMALL) {
      fds->resize(list.nfds);
      continue;
    }
    if (rc != 0) return false;
    fds->resize(list.nfds);
    *change_index = list.change_index;
    return true;
  }
}

void control(int set, int op, const pollfd &p) {
  epoll_event ev{};
  ev.events = static_cast<uint16_t>(p.events);  // POLLIN, POLLOUT, ... are EPOLLIN, EPOLLOUT, ...
  ev.data.fd = p.fd;
  // A descriptor closed meanwhile (the socket of a connection that ended) has left the set
  // by itself: its removal fails, harmlessly.
  if (epoll_ctl(set, op, p.fd, &ev) != 0 && op != EPOLL_CTL_DEL)
    throw Error(NAA_ERR_TRANSPORT,
                std::string("epoll_ctl on the completion queue's descriptors: ") + strerror(errno));
}

}  // namespace

std::unique_ptr<OfiCqWait> OfiCqWait::open(fid_domain *domain, fi_cq_attr attr, fid_cq **cq) {
  attr.wait_obj = FI_WAIT_POLLFD;
  if (fi_cq_open(domain, &attr, cq, nullptr) == 0) {
    std::vector<pollfd> fds;
    uint64_t index = 0;
    const int set = list_descriptors(*cq, &fds, &index) ? epoll_create1(EPOLL_CLOEXEC) : -1;
    if (set >= 0) return std::unique_ptr<OfiCqWait>(new OfiCqWait(*cq, set, true));
    close_fid(&(*cq)->fid);
  }
  attr.wait_obj = FI_WAIT_FD;
  if (fi_cq_open(domain, &attr, cq, nullptr) == 0) {
    int fd = -1;
    if (fi_control(&(*cq)->fid, FI_GETWAIT, &fd) == 0)
      return std::unique_ptr<OfiCqWait>(new OfiCqWait(*cq, fd, false));
    close_fid(&(*cq)->fid);
  }
  *cq = nullptr;
  return nullptr;
}

OfiCqWait::~OfiCqWait() {
  if (own_set_) ::close(fd_);
}

bool OfiCqWait::arm() {
  if (!own_set_) return true;
  std::vector<pollfd> now;
  uint64_t index = 0;
  if (!list_descriptors(cq_, &now, &index))
    throw Error(NAA_ERR_TRANSPORT,
                "the completion queue no longer lists its descriptors (FI_GETWAIT)");
  if (index != change_index_) {
    disarm();
    change_index_ = index;
    return false;
  }
  // The first is the list's own signal (libfabric's ofi_pollfds), raised by every change to the
  // list and read only by a blocking fi_cq_sread: in our set it would stay readable.
  if (!now.empty()) now.erase(now.begin());
  for (const pollfd &p : now) {
    auto was = std::find_if(registered_.begin(), registered_.end(),
                            [&](const pollfd &r) { return r.fd == p.fd; });
    if (was == registered_.end())
      control(fd_, EPOLL_CTL_ADD, p);
    else if (was->events != p.events)
      control(fd_, EPOLL_CTL_MOD, p);  // POLLOUT: a send waits
  }
  for (const pollfd &r : registered_)
    if (std::none_of(now.begin(), now.end(), [&](const pollfd &p) { return p.fd == r.fd; }))
      control(fd_, EPOLL_CTL_DEL, r);
  registered_ = std::move(now);
  armed_ = true;
  empty_polls_ = 0;
  return true;
}

void OfiCqWait::polled(bool found) {
  if (!armed_) return;
  if (!found) {
    ++empty_polls_;
  } else if (empty_polls_ > kSpinPolls) {
    disarm();
  } else {
    empty_polls_ = 0;
  }
}

void OfiCqWait::disarm() {
  for (const pollfd &r : registered_) control(fd_, EPOLL_CTL_DEL, r);
  registered_.clear();
  armed_ = false;
}

}  // namespace naa::transport::ofi
