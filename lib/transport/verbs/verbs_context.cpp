// SPDX-License-Identifier: BSD-3-Clause
#include "transport/verbs/verbs_context.hpp"

#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <utility>

#include "transport/verbs/verbs_cm.hpp"

namespace naa::transport::verbs {

std::shared_ptr<VerbsContext> VerbsContext::acquire(ibv_context *device) {
  static std::mutex mutex;
  // Never destroyed: a Context a handle still holds at exit must not meet a destroyed map.
  static auto *live = new std::map<std::pair<pid_t, ibv_context *>, std::weak_ptr<VerbsContext>>;
  const auto key = std::make_pair(getpid(), device);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live->find(key);
  if (it != live->end())
    if (auto shared = it->second.lock()) return shared;
  ibv_pd *pd = ibv_alloc_pd(device);
  if (pd == nullptr) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_alloc_pd");
  std::shared_ptr<VerbsContext> context;
  try {
    context = std::make_shared<VerbsContext>(device, pd);
  } catch (...) {
    ibv_dealloc_pd(pd);
    throw;
  }
  for (auto i = live->begin(); i != live->end();)  // forget the Contexts that are gone
    i = i->second.expired() ? live->erase(i) : std::next(i);
  (*live)[key] = context;
  return context;
}

std::shared_ptr<VerbsRegistration> VerbsContext::register_memory(void *addr, size_t length,
                                                                 int access) {
  struct Failed {
    int err;
  };
  try {
    return cache_.get(addr, length, static_cast<uint64_t>(access), [&] {
      ibv_mr *mr = ibv_reg_mr(pd, addr, length, access);
      if (mr == nullptr) throw Failed{errno};
      return std::make_unique<VerbsRegistration>(shared_from_this(), mr);
    });
  } catch (const Failed &f) {
    errno = f.err;
    return nullptr;
  }
}

}  // namespace naa::transport::verbs
