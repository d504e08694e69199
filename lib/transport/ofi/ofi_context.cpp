// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_context.hpp"

#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "process_id.hpp"
#include "diag/log.hpp"

namespace naa::transport::ofi {
namespace {

// What makes two infos share a domain. The process id keeps a forked child off its parent's.
std::string context_key(const fi_info *info) {
  auto text = [](const char *s) { return std::string(s != nullptr ? s : "") + '\n'; };
  return std::to_string(naa::this_process()) + '\n' + text(info->fabric_attr->prov_name) +
         text(info->fabric_attr->name) + text(info->domain_attr->name) +
         std::to_string(info->ep_attr->type) + '\n' +
         std::to_string(info->domain_attr->data_progress) + '\n' + std::to_string(info->caps);
}

}  // namespace

std::shared_ptr<OfiContext> OfiContext::acquire(const fi_info *info) {
  static std::mutex mutex;
  // Never destroyed: a Context a handle still holds at exit must not meet a destroyed map.
  static auto *live = new std::map<std::string, std::weak_ptr<OfiContext>>;
  const std::string key = context_key(info);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live->find(key);
  if (it != live->end())
    if (auto shared = it->second.lock()) return shared;
  auto context = std::make_shared<OfiContext>();
  check(fi_fabric(info->fabric_attr, &context->fabric, nullptr), "fi_fabric");
  check(fi_domain(context->fabric, const_cast<fi_info *>(info), &context->domain, nullptr),
        "fi_domain");
  context->mr_mode_ = info->domain_attr->mr_mode;
  NAA_LOG_DEBUG("opened a libfabric context: provider %s, fabric %s, domain %s",
                info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name);
  for (auto i = live->begin(); i != live->end();)  // forget the Contexts that are gone
    i = i->second.expired() ? live->erase(i) : std::next(i);
  (*live)[key] = context;
  return context;
}

OfiContext::~OfiContext() {
  queues.clear();  // opened on the fabric and the domain
  idle_.clear();   // their fabric objects before the domain
  close_fid(domain != nullptr ? &domain->fid : nullptr);
  close_fid(fabric != nullptr ? &fabric->fid : nullptr);
}

IdleRdm::~IdleRdm() {
  if (old_peer_pidfd >= 0) ::close(old_peer_pidfd);
  close_fid(ep != nullptr ? &ep->fid : nullptr);
  close_fid(control_mr != nullptr ? &control_mr->fid : nullptr);
  close_fid(av != nullptr ? &av->fid : nullptr);
  close_fid(cq != nullptr ? &cq->fid : nullptr);
}

void OfiContext::park(std::unique_ptr<IdleRdm> idle, size_t bound, bool oldest) {
  std::unique_ptr<IdleRdm> evicted;  // closed outside the lock
  std::shared_ptr<OfiContext> self = shared_from_this();
  std::lock_guard<std::mutex> lock(idle_mutex_);
  const bool client = idle->client;
  if (oldest)
    idle_.push_front(std::move(idle));
  else
    idle_.push_back(std::move(idle));
  size_t same = 0;
  for (const auto &i : idle_) same += i->client == client;
  if (same > bound) {
    for (auto i = idle_.begin(); i != idle_.end(); ++i)
      if ((*i)->client == client) {
        evicted = std::move(*i);
        idle_.erase(i);
        break;
      }
  }
  kept_open_ = std::move(self);
}

std::unique_ptr<IdleRdm> OfiContext::take(bool client) {
  std::shared_ptr<OfiContext> last;  // released outside the lock (it may be our last owner)
  std::lock_guard<std::mutex> lock(idle_mutex_);
  std::unique_ptr<IdleRdm> found;
  for (auto i = idle_.rbegin(); i != idle_.rend(); ++i)
    if ((*i)->client == client) {
      found = std::move(*i);
      idle_.erase(std::next(i).base());
      break;
    }
  if (idle_.empty()) last = std::move(kept_open_);
  return found;
}

void OfiContext::drop_idle_bells() {
  std::vector<std::unique_ptr<shm::Bell>> dropped;  // closed outside the lock
  std::vector<std::unique_ptr<shm::BellRope>> ropes;
  {
    std::lock_guard<std::mutex> lock(listener_rope_mutex_);
    if (listener_rope_) ropes.push_back(std::move(listener_rope_));
  }
  std::lock_guard<std::mutex> lock(idle_mutex_);
  for (auto &i : idle_) {
    if (i->bell) dropped.push_back(std::move(i->bell));
    if (i->peer_bell) ropes.push_back(std::move(i->peer_bell));
  }
}

void OfiContext::ring_listener(const std::string &address) {
  const std::string object = shm::listener_bell_object(address);
  if (object.empty()) return;
  std::lock_guard<std::mutex> lock(listener_rope_mutex_);
  if (!listener_rope_ || !listener_rope_->still_for(object))
    listener_rope_ = std::make_unique<shm::BellRope>(object);
  listener_rope_->pull();
}

size_t OfiContext::idle_endpoints() const {
  std::lock_guard<std::mutex> lock(idle_mutex_);
  return idle_.size();
}

fid_mr *OfiContext::register_raw(void *addr, size_t length, uint64_t access, fid_ep *ep) {
  fid_mr *mr = nullptr;
  const bool prov_key = (mr_mode_ & (FI_MR_PROV_KEY | FI_MR_BASIC)) != 0;
  uint64_t key = prov_key ? 0 : next_key_++;
  int rc = fi_mr_reg(domain, addr, length, access, 0, key, 0, &mr, nullptr);
  if (rc < 0)
    fail(NAA_ERR_NO_RESOURCES, "registering " + std::to_string(length) + " bytes failed", rc);
  if (mr_mode_ & FI_MR_ENDPOINT) {
    int bind = fi_mr_bind(mr, &ep->fid, 0);
    if (bind == 0) bind = fi_mr_enable(mr);
    if (bind < 0) {
      close_fid(&mr->fid);
      fail(NAA_ERR_TRANSPORT, "binding a memory region to its endpoint", bind);
    }
  }
  return mr;
}

std::shared_ptr<OfiRegistration> OfiContext::register_memory(void *addr, size_t length,
                                                             uint64_t access, fid_ep *ep) {
  auto make = [&] {
    return std::make_unique<OfiRegistration>(shared_from_this(),
                                             register_raw(addr, length, access, ep));
  };
  if (mr_mode_ & FI_MR_ENDPOINT) return make();
  return cache_.get(addr, length, access, make);
}

}  // namespace naa::transport::ofi
