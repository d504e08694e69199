// SPDX-License-Identifier: BSD-3-Clause
// The listener of providers that offer only FI_EP_RDM (shm, PROVIDER;ofi_rxm). Private to
// lib/transport.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/ofi_endpoint.hpp"
#include "transport/ofi_fabric.hpp"
#include "transport/transport.hpp"

namespace naa::transport::ofi_detail {

// A reliable-datagram listener: an RDM endpoint at a well-known address that receives
// connection requests; each one gets a fresh endpoint of its own (see the top of ofi.cpp).
class OfiRdmListener : public Listener {
 public:
  OfiRdmListener(const std::string &provider, const std::string &host, uint16_t port);
  ~OfiRdmListener() override;

  uint16_t port() const override { return port_; }
  std::unique_ptr<Endpoint> next_request(Deadline deadline) override;

 private:
  void claim_name(const std::string &name);
  void release_port();

  static constexpr std::chrono::microseconds kListenerNapLimit{8000};

  bool named_ = false;
  std::string prov_name_;
  int reserved_fd_ = -1;
  int name_fd_ = -1;
  std::shared_ptr<OfiFabric> fabric_;
  std::unique_ptr<OfiEndpoint> ep_;
  InfoPtr fresh_info_;
  uint16_t port_ = 0;
};

}  // namespace naa::transport::ofi_detail
