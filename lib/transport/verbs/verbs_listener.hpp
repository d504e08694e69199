// SPDX-License-Identifier: BSD-3-Clause
// A verbs listener: an rdma_cm id listening on an address, whose connection requests become
// VerbsEndpoints on event channels of their own. Private to lib/transport.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/transport.hpp"
#include "transport/verbs/verbs_cm.hpp"

namespace naa::transport::verbs {

class VerbsListener : public Listener {
 public:
  VerbsListener(const std::string &host, uint16_t port);

  uint16_t port() const override { return port_; }
  std::unique_ptr<Endpoint> next_request(Deadline deadline) override;

 protected:
  bool sleeps_through() const override { return true; }

 private:
  CmChannel ch_;
  CmId id_;  // after ch_: destroyed before it
  uint16_t port_ = 0;
};

}  // namespace naa::transport::verbs
