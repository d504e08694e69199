// SPDX-License-Identifier: BSD-3-Clause
// The registrations of one transport Context, shared between its live handles: a buffer that a
// second handle registers (same range, same access) while the first still uses it gets the
// first one's registration instead of a second one. The last user's release deregisters it.
//
// Why only between live handles (doc/transport.md, "Registration cache"): a registration that
// outlived its last handle could pin pages the program has since freed, and a later buffer at the
// same address would be handed a registration of the old pages (verbs pins them). While a handle
// lives, its buffers must stay valid (naa_create(3)), so a live registration is never stale.
// Keeping registrations across handles is left to the provider where it has a cache with a
// memory monitor of its own (libfabric's verbs, efa: FI_MR_CACHE_MONITOR).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace naa::transport {

template <class Registration>
class RegistrationCache {
 public:
  using Ptr = std::shared_ptr<Registration>;

  // The live registration of [addr, addr + length) with `access`, else make()'s (a
  // std::unique_ptr<Registration>, or a throw). Under the lock: two handles registering the
  // same buffer at once register it once.
  template <class Make>
  Ptr get(const void *addr, size_t length, uint64_t access, Make make) {
    const Key key{reinterpret_cast<uintptr_t>(addr), length, access};
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->live.find(key);
    if (it != state_->live.end())
      if (Ptr shared = it->second.lock()) return shared;
    std::unique_ptr<Registration> fresh = make();
    std::shared_ptr<State> state = state_;
    Ptr shared(fresh.release(), [state, key](Registration *r) {
      delete r;
      std::lock_guard<std::mutex> lock(state->mutex);
      auto found = state->live.find(key);
      // A handle may have registered the range anew since this one's count reached zero.
      if (found != state->live.end() && found->second.expired()) state->live.erase(found);
    });
    state_->live[key] = shared;
    return shared;
  }

  size_t live() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->live.size();
  }

 private:
  using Key = std::tuple<uintptr_t, size_t, uint64_t>;
  // Apart from the cache: a registration's release may come after its Context is gone.
  struct State {
    mutable std::mutex mutex;
    std::map<Key, std::weak_ptr<Registration>> live;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace naa::transport
