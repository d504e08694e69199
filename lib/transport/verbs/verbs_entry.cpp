// SPDX-License-Identifier: BSD-3-Clause
// The registry's entry of rdma-core (registry.hpp): verbs.
#include <infiniband/verbs.h>

#include "diag/log.hpp"
#include "transport/registry.hpp"
#include "transport/verbs/verbs.hpp"

namespace naa::transport::verbs {
namespace {

class Verbs final : public Entry {
 public:
  std::unique_ptr<Transport> open(const std::string &,
                                  const TransportOptions &options) const override {
    return open_verbs_transport(options.device);
  }
  std::string reaches(const Destination &d) const override {
    return verbs_routes_to(d.host, d.local_ip, d.device, d.deadline) ? "verbs" : "";
  }
  std::string listens(const std::string &host) const override {
    if (verbs_can_listen_on(host)) return "verbs";
    NAA_LOG_INFO("no RDMA device serves %s: not listening with verbs", host.c_str());
    return "";
  }
  std::vector<std::string> details() const override {
    int n = 0;
    ibv_device **devices = ibv_get_device_list(&n);
    std::vector<std::string> lines{"rdma-core (librdmacm + libibverbs); " + std::to_string(n) +
                                   " RDMA device(s)" + (n > 0 ? ":" : "")};
    for (int i = 0; i < n; ++i) lines.emplace_back(ibv_get_device_name(devices[i]));
    if (devices != nullptr) ibv_free_device_list(devices);
    return lines;
  }
};

}  // namespace

const Entry *verbs_entry() {
  static const Verbs entry;
  return &entry;
}

}  // namespace naa::transport::verbs
