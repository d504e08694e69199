// SPDX-License-Identifier: BSD-3-Clause
// The libfabric transport Context: one fabric and one domain per (provider, fabric, domain,
// endpoint type, progress) for the whole process, shared by every endpoint, listener and
// naa-server client on it, and the registration cache of that domain (registration_cache.hpp).
// It dies with its last user. Private to lib/transport.
//
// What stays per endpoint, and why: the endpoint, its event queue (MSG connection events), its
// address vector (RDM) and its completion queue (a closed MSG endpoint's EQ and CQ go to the
// next one, drained: ofi_queue_stock.hpp). A CQ shared by several MSG endpoints could not
// tell which endpoint a peer's write-with-immediate (a remote CQ-data completion) belongs to:
// libfabric gives such a completion no op_context, and fi_cq_readfrom names a source only on
// RDM endpoints. (Verbs can share one: its completions carry the QP number.)
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "transport/ofi/ofi_fabric.hpp"
#include "transport/ofi/ofi_queue_stock.hpp"
#include "transport/ofi/ofi_idle_endpoint.hpp"
#include "transport/registration_cache.hpp"

namespace naa::transport::ofi {

class OfiContext;

// A registered range; deregistered when its last user lets go.
struct OfiRegistration {
  OfiRegistration(std::shared_ptr<OfiContext> c, fid_mr *m) : context(std::move(c)), mr(m) {}
  ~OfiRegistration() { fi_close(&mr->fid); }
  OfiRegistration(const OfiRegistration &) = delete;
  OfiRegistration &operator=(const OfiRegistration &) = delete;
  std::shared_ptr<OfiContext> context;  // the domain outlives its registrations
  fid_mr *mr;
};

class OfiContext : public std::enable_shared_from_this<OfiContext> {
 public:
  // The process's Context for what `info` describes: the live one, else a new one opened with
  // `info`. A forked child gets its own (a parent's fabric objects are not the child's to use).
  static std::shared_ptr<OfiContext> acquire(const fi_info *info);

  OfiContext() = default;
  ~OfiContext();
  OfiContext(const OfiContext &) = delete;
  OfiContext &operator=(const OfiContext &) = delete;

  // A registration for use on `ep`, shared with the other users of the same range and access
  // while they live; its own where the provider binds registrations to an endpoint
  // (FI_MR_ENDPOINT).
  std::shared_ptr<OfiRegistration> register_memory(void *addr, size_t length, uint64_t access,
                                                   fid_ep *ep);
  // A registration of `ep`'s own (bound to it where the provider asks for that).
  fid_mr *register_raw(void *addr, size_t length, uint64_t access, fid_ep *ep);

  // How many registrations are live (for tests and naa-bench).
  size_t live_registrations() const { return cache_.live(); }

  // Idle shm endpoints (ofi_idle_endpoint.hpp). park() keeps `idle` (closing the oldest of its
  // side beyond `bound`); while any is kept the Context stays open, until the process
  // exits (libfabric's shm provider unlinks their regions then). take() hands out the newest
  // of the side asked for, or nothing.
  // `oldest`: behind the others (one whose old peer has not said goodbye yet).
  void park(std::unique_ptr<IdleRdm> idle, size_t bound, bool oldest = false);
  std::unique_ptr<IdleRdm> take(bool client);
  size_t idle_endpoints() const;
  // Closes the bells the idle endpoints kept, their ropes to their old peers' bells and the
  // rope to the last listener rung (a socket each): called by a step that found descriptors
  // short, holding the descriptor gate.
  void drop_idle_bells();
  // Rings the bell of the shm listener at `address` ("fi_ns://SERVICE") where it sleeps on
  // it; nothing for any other address. The rope serves the next requests to that listener while
  // its bell page stays the one the rope maps (a stat where a new rope takes an shm_open, an
  // fstat, an mmap and a socket).
  void ring_listener(const std::string &address);

  fid_fabric *fabric = nullptr;
  fid_domain *domain = nullptr;
  // The EQ and CQ of the last closed MSG endpoint, for the next one (ofi_queue_stock.hpp).
  OfiQueueStock queues;

 private:
  uint64_t mr_mode_ = 0;
  // Keys we choose (providers without FI_MR_PROV_KEY) must be unique in the domain.
  std::atomic<uint64_t> next_key_{1};
  RegistrationCache<OfiRegistration> cache_;
  mutable std::mutex idle_mutex_;
  std::deque<std::unique_ptr<IdleRdm>> idle_;
  std::shared_ptr<OfiContext> kept_open_;  // ourselves, while idle_ holds endpoints
  std::mutex listener_rope_mutex_;
  std::unique_ptr<shm::BellRope> listener_rope_;
};

}  // namespace naa::transport::ofi
