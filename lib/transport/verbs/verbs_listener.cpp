// SPDX-License-Identifier: BSD-3-Clause
// The verbs listener: rdma_bind_addr and rdma_listen, then each connection request migrated to
// an event channel of its own.
#include "transport/verbs/verbs_listener.hpp"

#include <arpa/inet.h>

#include "error.hpp"
#include "diag/log.hpp"
#include "transport/host.hpp"
#include "transport/verbs/verbs_endpoint.hpp"

namespace naa::transport::verbs {
namespace {

constexpr int kBacklog = 64;

}  // namespace

VerbsListener::VerbsListener(const std::string &host, uint16_t port) : id_(create_id(ch_)) {
  sockaddr_in sa = resolve_ipv4(host, port, NAA_ERR_CONFIG);
  if (rdma_bind_addr(id_.get(), reinterpret_cast<sockaddr *>(&sa)) != 0)
    fail_errno(NAA_ERR_CONNECTION,
               "cannot bind rdma_cm to " + addr_name(reinterpret_cast<sockaddr *>(&sa)));
  if (rdma_listen(id_.get(), kBacklog) != 0) fail_errno(NAA_ERR_CONNECTION, "rdma_listen");
  port_ = ntohs(rdma_get_src_port(id_.get()));
  if (id_->verbs != nullptr)
    NAA_LOG_INFO("verbs: listening on %s:%u, device %s", host.c_str(), port_,
                 ibv_get_device_name(id_->verbs->device));
}

std::unique_ptr<Endpoint> VerbsListener::next_request(Deadline deadline) {
  for (;;) {
    CmEvent e(ch_.next(deadline, interrupt_fd_));
    if (!e) return nullptr;
    if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      NAA_LOG_WARN("verbs listener: rdma_cm event %s", rdma_event_str(e->event));
      continue;
    }
    std::string data;
    if (e->param.conn.private_data != nullptr)
      data.assign(static_cast<const char *>(e->param.conn.private_data),
                  e->param.conn.private_data_len);
    CmId id(e->id);  // a request's id is ours once its event is acked
    e.reset();
    // Each connection gets its own event channel, so that its thread sees only its events.
    auto ch = std::make_unique<CmChannel>();
    if (rdma_migrate_id(id.get(), ch->get()) != 0) fail_errno(NAA_ERR_TRANSPORT, "rdma_migrate_id");
    return std::make_unique<VerbsEndpoint>(std::move(ch), std::move(id), std::move(data));
  }
}

}  // namespace naa::transport::verbs
