// SPDX-License-Identifier: BSD-3-Clause
// Caps the bytes of NAA memory that one client and all clients together may hold, so that a
// client announcing absurd sizes is refused with MRSP's "not enough memory" instead of
// exhausting the server.
#pragma once

#include <atomic>
#include <cstdint>

namespace naa::server {

class MemoryBudget {
 public:
  MemoryBudget(uint64_t per_client, uint64_t total) : per_client_(per_client), total_(total) {}

  bool reserve(uint64_t bytes) {
    if (bytes > per_client_) return false;
    uint64_t used = used_.load();
    do {
      if (used + bytes > total_) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes));
    return true;
  }
  void release(uint64_t bytes) { used_.fetch_sub(bytes); }

 private:
  const uint64_t per_client_;
  const uint64_t total_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace naa::server
