// SPDX-License-Identifier: BSD-3-Clause
#include "load.hpp"

#include <chrono>
#include <exception>

#include "error.hpp"
#include "handle.hpp"

namespace naa::bench {

BusyThreads::BusyThreads(unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    threads_.emplace_back([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
      }
    });
}

BusyThreads::~BusyThreads() {
  stop_.store(true);
  for (std::thread &t : threads_) t.join();
}

LoadClients::LoadClients(const Settings &s, unsigned n, size_t size) {
  for (unsigned i = 0; i < n; ++i)
    threads_.emplace_back(&LoadClients::run, this, std::cref(s), size);
  // Each thread counts itself ready after its first round trip, or when it failed.
  while (ready_.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

LoadClients::~LoadClients() {
  stop_.store(true);
  for (std::thread &t : threads_)
    if (t.joinable()) t.join();
}

void LoadClients::stop() {
  stop_.store(true);
  for (std::thread &t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) throw Error(NAA_ERR_CONNECTION, "a load client failed: " + failure_);
}

void LoadClients::run(const Settings &s, size_t size) {
  bool counted = false;
  try {
    Handle h(s, size);
    h.round_trip();
    ready_.fetch_add(1);
    counted = true;
    while (!stop_.load(std::memory_order_relaxed)) {
      h.round_trip();
      round_trips_.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (const std::exception &e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = e.what();
    if (!counted) ready_.fetch_add(1);
  }
}

}  // namespace naa::bench
