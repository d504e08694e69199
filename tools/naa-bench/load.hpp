// SPDX-License-Identifier: BSD-3-Clause
// --load and --load-clients: what else runs on the machine while naa-bench measures, started
// and stopped by naa-bench itself so that a figure says under which load it was taken. Busy
// threads hold cores as a compute job does; load clients are threads with handles of their own
// doing round trips against the same naa-server, as other ranks of a job would.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "settings.hpp"

namespace naa::bench {

// N threads spinning in a loop that touches no memory, from construction to destruction.
class BusyThreads {
 public:
  explicit BusyThreads(unsigned n);
  ~BusyThreads();
  BusyThreads(const BusyThreads &) = delete;
  BusyThreads &operator=(const BusyThreads &) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// N threads, each with a handle of `size` bytes of its own (created at the settings' server
// with the environment's runtime parameters), doing round trips back to back from construction
// until stop(). Construction returns once every handle exists and has done a round trip.
class LoadClients {
 public:
  LoadClients(const Settings &s, unsigned n, size_t size);
  ~LoadClients();
  LoadClients(const LoadClients &) = delete;
  LoadClients &operator=(const LoadClients &) = delete;

  // Round trips the clients completed so far, all together.
  uint64_t round_trips() const { return round_trips_.load(std::memory_order_relaxed); }
  // Stops and joins them; throws naa::Error with the first client's failure, if one failed.
  void stop();

 private:
  void run(const Settings &s, size_t size);

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<unsigned> ready_{0};
  std::mutex mu_;
  std::string failure_;  // under mu_
  std::vector<std::thread> threads_;
};

}  // namespace naa::bench
