// SPDX-License-Identifier: BSD-3-Clause
// The next connection request for a test that expects a client. Over ofi+tcp next_request()
// also returns nullptr after a wake-up that brought a connection's socket before its request
// (so that naa-server's sweep of silent connections can look, transport.hpp); on a loaded
// machine the request of a client that is on its way can come that late.
#pragma once

#include <memory>

#include "deadline.hpp"
#include "transport/transport.hpp"

inline std::unique_ptr<naa::transport::Endpoint> request_within(naa::transport::Listener &listener,
                                                                naa::Deadline deadline) {
  for (;;) {
    if (auto ep = listener.next_request(deadline)) return ep;
    if (deadline.expired()) return nullptr;
  }
}
