// SPDX-License-Identifier: BSD-3-Clause
// A listener over a passive FI_EP_MSG endpoint: connection requests come as the connection
// manager's events, each with its request's endpoint. Private to lib/transport.
#pragma once

#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <memory>
#include <string>

#include "transport/ofi_fabric.hpp"
#include "transport/transport.hpp"

namespace naa::transport::ofi_detail {

class OfiListener : public Listener {
 public:
  OfiListener(const std::string &provider, const std::string &host, uint16_t port);

  uint16_t port() const override { return port_; }
  std::unique_ptr<Endpoint> next_request(Deadline deadline) override;

 private:
  InfoPtr info_;
  std::shared_ptr<OfiFabric> fabric_;
  FidPtr<fid_eq> eq_;
  FidPtr<fid_pep> pep_;  // closed before eq_, which it is bound to
  uint16_t port_ = 0;
};

}  // namespace naa::transport::ofi_detail
