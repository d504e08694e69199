// SPDX-License-Identifier: BSD-3-Clause
// Regions of finished connections, kept for the next client that asks for the same sizes: a
// region's memfd_create, ftruncate, mmap and madvise were about a fifth of the server's share
// of an ofi+tcp connection's setup on loopback (doc/performance.md), and their munmap and
// close a part of its teardown, which a client creating handles one after another waits for.
//
// What a client could read of its predecessor's: the server writes every output region back
// after each invocation, also for a function code without a kernel, whose output the client
// never wrote; so a region is zeroed when it is given back (off the next client's setup path)
// and comes out of the pool as a new one would, zero-filled. A region that a kernel worker
// mapped (an isolated kernel ran on it) is never kept: a process the plugin started could
// outlive the worker and still map it.
//
// Bounded, and idle when idle: at most kKeptRegions regions of at most kKeptBytes each, taken
// by exact size; each holds a descriptor (its memfd), so whatever has not been taken within
// `age` goes (expire(), from the accepting loop), and all goes at once when the server runs
// short of descriptors (clear(): from the accepting loop, and when a region cannot be made).
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>

#include "kernel_worker.hpp"

namespace naa::server {

class RegionPool {
 public:
  static constexpr size_t kKeptRegions = 8;
  static constexpr size_t kKeptBytes = size_t{1} << 20;

  RegionPool() = default;
  RegionPool(const RegionPool &) = delete;
  RegionPool &operator=(const RegionPool &) = delete;

  // A kept region of exactly `size` bytes (> 0), zero-filled, or nothing.
  std::optional<SharedRegion> take(size_t size);
  // Keeps `r` (zeroing it) if it fits the bounds, and says so; frees it otherwise.
  bool give_back(SharedRegion r);
  // Frees what has been kept for `age` or longer.
  void expire(std::chrono::steady_clock::duration age);
  // When expire(age) will free the oldest region kept; never (time_point::max()) while none
  // is: the accepting loop sleeps to it.
  std::chrono::steady_clock::time_point expiry(std::chrono::steady_clock::duration age) const;
  // Frees everything kept.
  void clear();
  size_t kept() const;

 private:
  struct Kept {
    SharedRegion region;
    std::chrono::steady_clock::time_point since;
  };
  mutable std::mutex mu_;
  std::list<Kept> kept_;  // under mu_; the most recently given back first
};

}  // namespace naa::server
