// SPDX-License-Identifier: BSD-3-Clause
// Caps the bytes of NAA memory that one client, one peer host and all clients together may
// hold, so that a client announcing absurd sizes is refused with MRSP's "not enough memory"
// instead of exhausting the server, and one host cannot take the whole budget.
//
// Memory is counted when announced, not when first touched: over verbs the regions are pinned
// by their registration at MRSP time, so announced is committed there. Untouched regions are
// kept from holding the budget hostage by the per-peer cap and by --idle-timeout, which ends
// sessions that stop invoking.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace naa::server {

class MemoryBudget {
 public:
  MemoryBudget(uint64_t per_client, uint64_t total, uint64_t per_peer = UINT64_MAX)
      : per_client_(per_client), total_(total), per_peer_(per_peer) {}

  bool reserve(uint64_t bytes, const std::string &peer = {}) {
    if (bytes > per_client_) return false;
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t &mine = by_peer_[peer];
    if (used_ + bytes > total_ || mine + bytes > per_peer_) {
      if (mine == 0) by_peer_.erase(peer);
      return false;
    }
    used_ += bytes;
    mine += bytes;
    return true;
  }

  // What a request from peer could still reserve, for a refusal to tell the client.
  uint64_t available(const std::string &peer = {}) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_peer_.find(peer);
    const uint64_t mine = it != by_peer_.end() ? it->second : 0;
    return std::min(
        {per_client_, total_ - std::min(used_, total_), per_peer_ - std::min(mine, per_peer_)});
  }

  void release(uint64_t bytes, const std::string &peer = {}) {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= bytes;
    auto it = by_peer_.find(peer);
    if (it != by_peer_.end() && (it->second -= bytes) == 0) by_peer_.erase(it);
  }

 private:
  const uint64_t per_client_;
  const uint64_t total_;
  const uint64_t per_peer_;
  std::mutex mu_;
  uint64_t used_ = 0;
  std::map<std::string, uint64_t> by_peer_;
};

}  // namespace naa::server
