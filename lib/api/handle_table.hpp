// SPDX-License-Identifier: BSD-3-Clause
// Maps the opaque ids in naa_handle to live objects. An id is never a pointer: it packs a
// per-process salt, a per-slot generation and the slot index, so stale copies, finalized
// handles, zeroed memory and garbage (even another process's handles) fail the lookup.
// Each slot also remembers the process that made it: a fork()ed child inherits the table and
// the parent's sockets, and must neither use the parent's handles nor tear them down.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <unistd.h>

#include "process_id.hpp"

namespace naa::api {

template <class T>
class HandleTable {
 public:
  HandleTable() : salt_(make_salt()) {}

  uint64_t insert(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mu_);
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot &slot = slots_[index];
    ++slot.generation;  // never wraps: remove() retires a slot at the last generation
    slot.object = std::move(object);
    slot.owner = this_process();
    return pack(index, slot.generation);
  }

  // The object, kept alive by the returned pointer even if removed meanwhile; null if invalid.
  std::shared_ptr<T> find(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot *slot = lookup(id);
    return slot != nullptr ? slot->object : nullptr;
  }

  // find() of ids(0) .. ids(n - 1) into out[0..n) (null where invalid) without a reference
  // each: every object found stays alive until unpin_all() of the same ids, a remove()
  // meanwhile taking effect then. A call over a thousand handles thus takes the table's lock
  // twice and touches the table's slots only, not the thousand objects' reference counts.
  // Returns whether every id but 0 was found (the caller need not look through out[] again).
  template <class Ids>
  bool pin_all(size_t n, Ids &&ids, T **out) {
    bool all = true;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t id = ids(i);
      Slot *slot = const_cast<Slot *>(lookup(id));
      out[i] = slot != nullptr ? slot->object.get() : nullptr;
      if (slot != nullptr)
        ++slot->pins;
      else
        all = all && id == 0;
    }
    return all;
  }
  // `pinned` is what pin_all() gave for the same ids. Objects removed meanwhile are destroyed
  // here, after the table's lock is released (`removed` is declared before the lock).
  template <class Ids>
  void unpin_all(size_t n, Ids &&ids, T *const *pinned) {
    std::vector<std::shared_ptr<T>> removed;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      if (pinned[i] == nullptr) continue;
      const uint32_t index = static_cast<uint32_t>(ids(i) & 0xffffffffu) - 1;
      Slot &slot = slots_[index];
      if (--slot.pins == 0 && slot.removed) removed.push_back(release(index));
    }
  }

  // True when `id` names a live handle of the process this one was fork()ed from.
  bool inherited(uint64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot *slot = lookup_any_owner(id);
    return slot != nullptr && slot->owner != this_process();
  }

  // The parent's objects are never destroyed in a child (their destructors would shut down
  // the parent's connections): the child's copy of them is simply left alone.
  // Null also while the object is pinned: it goes at the last unpin_all().
  std::shared_ptr<T> remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot *slot = const_cast<Slot *>(lookup(id));
    if (slot == nullptr) return nullptr;
    slot->removed = true;
    if (slot->pins > 0) return nullptr;
    return release(static_cast<uint32_t>(id & 0xffffffffu) - 1);
  }

 private:
  struct Slot {
    std::shared_ptr<T> object;
    uint32_t pins = 0;     // pin_all()s not yet unpinned
    bool removed = false;  // by remove(), while pinned: the object goes at the last unpin
    uint16_t generation = 0;
    pid_t owner = 0;
  };

  // Under mu_: the removed slot's object, the slot free for reuse.
  std::shared_ptr<T> release(uint32_t index) {
    Slot &slot = slots_[index];
    slot.removed = false;
    // A slot whose generation is used up is retired, not reused: otherwise a stale id would
    // name a live handle again after 65535 reuses. It costs one slot per 65535 handles.
    if (slot.generation != UINT16_MAX) free_.push_back(index);
    return std::move(slot.object);
  }

  uint64_t pack(uint32_t index, uint16_t generation) const {
    return uint64_t{salt_} << 48 | uint64_t{generation} << 32 | (uint64_t{index} + 1);
  }

  const Slot *lookup(uint64_t id) const {
    const Slot *slot = lookup_any_owner(id);
    return slot != nullptr && slot->owner == this_process() ? slot : nullptr;
  }

  const Slot *lookup_any_owner(uint64_t id) const {
    if (static_cast<uint16_t>(id >> 48) != salt_) return nullptr;
    uint64_t index = (id & 0xffffffffu);
    if (index == 0 || index > slots_.size()) return nullptr;
    const Slot &slot = slots_[index - 1];
    if (slot.object == nullptr || slot.removed ||
        slot.generation != static_cast<uint16_t>(id >> 32))
      return nullptr;
    return &slot;
  }

  static uint16_t make_salt() {
    auto t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    uint64_t x = t ^ (static_cast<uint64_t>(getpid()) << 17);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    auto salt = static_cast<uint16_t>(x);
    return salt != 0 ? salt : 0x5a17;
  }

  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  const uint16_t salt_;
};

}  // namespace naa::api
