// SPDX-License-Identifier: BSD-3-Clause
// The verbs transport (doc/protocol.md §1): librdmacm connection management in RDMA_PS_TCP,
// one RC queue pair per connection, MRSP over SEND/RECV, each invocation one pre-built chain of
// RDMA WRITEs ending in a WRITE WITH IMM, all posted by a single ibv_post_send.
//
// The parts: verbs_endpoint*.cpp (the Endpoint), verbs_listener.cpp (the Listener), verbs_cm.cpp
// (rdma_cm and what they share); this file holds the Transport and what the rest of libnaa asks
// of the RDMA devices.
#include "transport/verbs/verbs.hpp"

#include <netinet/in.h>

#include <memory>

#include "error.hpp"
#include "diag/log.hpp"
#include "transport/host.hpp"
#include "transport/verbs/verbs_cm.hpp"
#include "transport/verbs/verbs_endpoint.hpp"
#include "transport/verbs/verbs_listener.hpp"

namespace naa::transport::verbs {

namespace {

bool have_rdma_devices() {
  int n = 0;
  ibv_device **list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  return n > 0;
}

void require_rdma_devices(const std::string &what) {
  if (!have_rdma_devices())
    throw Error(NAA_ERR_UNSUPPORTED, what +
                                         ": this machine has no RDMA device (ibv_get_device_list "
                                         "found none; NAA_TRANSPORT=auto would use ofi+tcp)");
}

class VerbsTransport : public Transport {
 public:
  explicit VerbsTransport(std::string device) : device_(std::move(device)) {}
  const char *name() const override { return "verbs"; }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data,
                                    const BeforeConnect &) override {  // no room: §3.4
    const std::string what = "NAA " + host + ":" + std::to_string(port);
    require_rdma_devices(what);
    auto ch = std::make_unique<CmChannel>();
    CmId id = resolved_id(*ch, host, port, local_ip, device_, deadline, what);
    auto ep = std::make_unique<VerbsEndpoint>(std::move(ch), std::move(id));
    ep->connect(deadline, private_data);
    return ep;
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    require_rdma_devices("listening on " + host);
    return std::make_unique<VerbsListener>(host, port);
  }

 private:
  const std::string device_;
};

}  // namespace

std::unique_ptr<Transport> open_verbs_transport(const std::string &device) {
  return std::make_unique<VerbsTransport>(device);
}

bool verbs_routes_to(const std::string &host, const std::string &local_ip,
                     const std::string &device, Deadline deadline) {
  if (!have_rdma_devices()) return false;
  try {
    CmChannel ch;
    return resolved_id(ch, host, 0, local_ip, device, deadline, host)->verbs != nullptr;
  } catch (const Error &e) {
    NAA_LOG_DEBUG("verbs does not reach %s: %s", host.c_str(), e.what());
    return false;
  }
}

bool verbs_can_listen_on(const std::string &host) {
  if (!have_rdma_devices()) return false;
  try {
    CmChannel ch;
    CmId id = create_id(ch);
    sockaddr_in sa = resolve_ipv4(host, 0, NAA_ERR_CONFIG);
    // The wildcard binds to no device, and listens on all of them.
    return rdma_bind_addr(id.get(), reinterpret_cast<sockaddr *>(&sa)) == 0 &&
           (id.get()->verbs != nullptr || sa.sin_addr.s_addr == htonl(INADDR_ANY));
  } catch (const Error &) {
    return false;
  }
}

}  // namespace naa::transport::verbs
