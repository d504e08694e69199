// SPDX-License-Identifier: BSD-3-Clause
#include "region_pool.hpp"

#include <cstring>

namespace naa::server {

std::optional<SharedRegion> RegionPool::take(size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (it->region.size() == size) {
      SharedRegion r = std::move(it->region);
      kept_.erase(it);
      return r;
    }
  return std::nullopt;
}

bool RegionPool::give_back(SharedRegion r) {
  if (r.addr() == nullptr || r.size() > kKeptBytes) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() >= kKeptRegions) return false;
  }
  // Outside the lock: another thread's take() does not wait for this one's bytes.
  std::memset(r.addr(), 0, r.size());
  std::list<Kept> one;
  one.push_back({std::move(r), std::chrono::steady_clock::now()});
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.size() >= kKeptRegions) return false;
  kept_.splice(kept_.begin(), one);
  return true;
}

void RegionPool::expire(std::chrono::steady_clock::duration age) {
  std::list<Kept> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    // The oldest are last.
    auto first_old = kept_.end();
    while (first_old != kept_.begin() && now - std::prev(first_old)->since >= age) --first_old;
    old.splice(old.end(), kept_, first_old, kept_.end());
  }
}

std::chrono::steady_clock::time_point RegionPool::expiry(
    std::chrono::steady_clock::duration age) const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.empty() ? std::chrono::steady_clock::time_point::max() : kept_.back().since + age;
}

void RegionPool::clear() {
  std::list<Kept> all;
  std::lock_guard<std::mutex> lock(mu_);
  all.swap(kept_);
}

size_t RegionPool::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.size();
}

}  // namespace naa::server
