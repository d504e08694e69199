// SPDX-License-Identifier: BSD-3-Clause
// The verbs transport Context: one protection domain per RDMA device for the whole process,
// shared by every queue pair on that device (a client's handles, naa-server's clients), and the
// registration cache of that domain (registration_cache.hpp). It dies with its last user.
// Private to lib/transport.
//
// The completion queue and its channel stay per queue pair for now: one CQ for the device
// (a completion names its QP by qp_num, so it could be shared) pays off only with one progress
// driver that polls it for every handle and hands completions to their sessions.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "transport/registration_cache.hpp"

namespace naa::transport::verbs_detail {

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

  explicit VerbsContext(ibv_pd *pd) : pd(pd) {}
  ~VerbsContext() { ibv_dealloc_pd(pd); }
  VerbsContext(const VerbsContext &) = delete;
  VerbsContext &operator=(const VerbsContext &) = delete;

  // [addr, addr + length) registered with `access`, shared with the other live users of the
  // same range and access; null with errno set when ibv_reg_mr fails.
  std::shared_ptr<VerbsRegistration> register_memory(void *addr, size_t length, int access);

  ibv_pd *const pd;

 private:
  RegistrationCache<VerbsRegistration> cache_;
};

}  // namespace naa::transport::verbs_detail
