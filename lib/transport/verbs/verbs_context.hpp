// SPDX-License-Identifier: BSD-3-Clause
// The verbs transport Context: one protection domain per RDMA device for the whole process,
// shared by every queue pair on that device (a client's handles, naa-server's clients), the
// registration cache of that domain (registration_cache.hpp), and the completion queues those
// queue pairs share (verbs_shared_cq.hpp). It dies with its last user. Private to lib/transport.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "transport/registration_cache.hpp"
#include "transport/verbs/verbs_shared_cq.hpp"

namespace naa::transport::verbs {

class VerbsContext;

// A registered range; deregistered when its last user lets go.
struct VerbsRegistration {
  VerbsRegistration(std::shared_ptr<VerbsContext> c, ibv_mr *m) : context(std::move(c)), mr(m) {}
  ~VerbsRegistration() { ibv_dereg_mr(mr); }
  VerbsRegistration(const VerbsRegistration &) = delete;
  VerbsRegistration &operator=(const VerbsRegistration &) = delete;
  std::shared_ptr<VerbsContext> context;  // the protection domain outlives its registrations
  ibv_mr *mr;
};

class VerbsContext : public std::enable_shared_from_this<VerbsContext> {
 public:
  // The process's Context for `device` (an rdma_cm id's verbs context: rdma_cm opens each
  // device once per process). A forked child gets its own.
  static std::shared_ptr<VerbsContext> acquire(ibv_context *device);

  VerbsContext(ibv_context *device, ibv_pd *pd) : pd(pd), cqs(device) {}
  ~VerbsContext() { ibv_dealloc_pd(pd); }
  VerbsContext(const VerbsContext &) = delete;
  VerbsContext &operator=(const VerbsContext &) = delete;

  // [addr, addr + length) registered with `access`, shared with the other live users of the
  // same range and access; null with errno set when ibv_reg_mr fails.
  std::shared_ptr<VerbsRegistration> register_memory(void *addr, size_t length, int access);

  ibv_pd *const pd;
  CqSet cqs;

 private:
  RegistrationCache<VerbsRegistration> cache_;
};

}  // namespace naa::transport::verbs
