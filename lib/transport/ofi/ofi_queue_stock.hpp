// SPDX-License-Identifier: BSD-3-Clause
// The event queue and completion queue of a closed FI_EP_MSG endpoint, kept by its Context for
// the next endpoint: opening the two with their wait objects (a socketpair and an epoll set
// each in libfabric 1.17's tcp provider) is a sizeable share of every ofi+tcp connection's setup
// on each side (doc/performance.md). A queue pair is kept only drained (its endpoint closed, every
// entry and error read), so the next endpoint never sees its predecessor's completions; a
// stale wake-up of its descriptor at most ends one sleep early. One pair at most: a program
// (or naa-server) making one connection after another finds it, and a burst of connections
// leaves no more descriptors behind than one; a listener closes a pair kept unused for a
// second (expire()), so that an idle naa-server holds none. Private to lib/transport.
#pragma once

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "transport/ofi/ofi_cq_wait.hpp"

namespace naa::transport::ofi_detail {

struct OfiQueues {
  fid_eq *eq = nullptr;
  fid_cq *cq = nullptr;
  int eq_fd = -1;                      // the EQ's wait descriptor, or -1
  std::shared_ptr<OfiCqWait> cq_wait;  // the CQ's, or nullptr
};

class OfiQueueStock {
 public:
  OfiQueueStock() = default;
  ~OfiQueueStock() { clear(); }
  OfiQueueStock(const OfiQueueStock &) = delete;
  OfiQueueStock &operator=(const OfiQueueStock &) = delete;

  std::optional<OfiQueues> take();
  // Keeps `q`, whose endpoint is closed, if it drains and the stock is empty; closes it
  // otherwise.
  void give_back(OfiQueues q);
  // Closes what is kept (before the domain and fabric it was opened on).
  void clear();
  // Closes what has been kept for `age` or longer.
  void expire(std::chrono::steady_clock::duration age);
  // When expire(age) will close what is kept; never (time_point::max()) while nothing is: a
  // listener sleeps to it, and no longer wakes for the stock while it is empty.
  std::chrono::steady_clock::time_point expiry(std::chrono::steady_clock::duration age);

 private:
  std::mutex mu_;
  std::optional<OfiQueues> kept_;                  // under mu_
  std::chrono::steady_clock::time_point kept_at_;  // under mu_
};

}  // namespace naa::transport::ofi_detail
