// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_queue_stock.hpp"

#include <rdma/fi_errno.h>

#include "transport/ofi/ofi_fabric.hpp"

namespace naa::transport::ofi {
namespace {

// A queue with more than this many leftover entries is not worth keeping.
constexpr int kDrainReads = 16;

void close_queues(const OfiQueues &q) {
  close_fid(q.cq != nullptr ? &q.cq->fid : nullptr);
  close_fid(q.eq != nullptr ? &q.eq->fid : nullptr);
}

// Reads every entry and error left (a closed endpoint's flushed receives, a late shutdown
// event); false when the queues do not come empty.
bool drained(const OfiQueues &q) {
  for (int i = 0;; ++i) {
    if (i == kDrainReads) return false;
    fi_cq_data_entry entries[8];
    const ssize_t rc = fi_cq_read(q.cq, entries, 8);
    if (rc == -FI_EAGAIN) break;
    if (rc == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(q.cq, &err, 0) < 0) return false;
    } else if (rc < 0) {
      return false;
    }
  }
  for (int i = 0;; ++i) {
    if (i == kDrainReads) return false;
    uint32_t event = 0;
    alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + 256];
    const ssize_t rc = fi_eq_read(q.eq, &event, buf, sizeof buf, 0);
    if (rc == -FI_EAGAIN) return true;
    if (rc == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      if (fi_eq_readerr(q.eq, &err, 0) < 0) return false;
    } else if (rc < 0) {
      return false;
    } else if (event == FI_CONNREQ) {
      fi_freeinfo(reinterpret_cast<fi_eq_cm_entry *>(buf)->info);
    }
  }
}

}  // namespace

std::optional<OfiQueues> OfiQueueStock::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<OfiQueues> q = kept_;
  kept_.reset();
  return q;
}

void OfiQueueStock::give_back(OfiQueues q) {
  if (q.eq == nullptr || q.cq == nullptr || !drained(q)) return close_queues(q);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kept_) {
      kept_ = q;
      kept_at_ = std::chrono::steady_clock::now();
      return;
    }
  }
  close_queues(q);
}

void OfiQueueStock::clear() {
  if (std::optional<OfiQueues> q = take()) close_queues(*q);
}

void OfiQueueStock::expire(std::chrono::steady_clock::duration age) {
  std::optional<OfiQueues> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_ && std::chrono::steady_clock::now() - kept_at_ >= age) old.swap(kept_);
  }
  if (old) close_queues(*old);
}

std::chrono::steady_clock::time_point OfiQueueStock::expiry(
    std::chrono::steady_clock::duration age) {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_ ? kept_at_ + age : std::chrono::steady_clock::time_point::max();
}

}  // namespace naa::transport::ofi
