// SPDX-License-Identifier: BSD-3-Clause
// For the tests on the transport interface: a connection ended as libnaa and naa-server end
// one.
#pragma once

#include <chrono>
#include <exception>
#include <memory>

#include "deadline.hpp"
#include "transport/transport.hpp"

namespace naa::test {

// The client's end goes (its goodbye), the server's end sees it and goes.
inline void end_connection(std::unique_ptr<transport::Endpoint> client,
                           std::unique_ptr<transport::Endpoint> server) {
  client.reset();
  try {
    for (;;) {
      transport::Completion c[4];
      server->wait(c, 4, Deadline::after(std::chrono::seconds(20)));
    }
  } catch (const std::exception &) {  // the peer's goodbye
  }
  server.reset();
}

}  // namespace naa::test
