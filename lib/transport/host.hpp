// SPDX-License-Identifier: BSD-3-Clause
// Questions about hosts that every transport's choice needs, whatever the fabric.
#pragma once

#include <string>

namespace naa::transport {

// True when `host` (a name or an address) resolves to this host: a loopback address or one of
// its interfaces' addresses. Such an NAA is reachable over shared memory.
bool is_local_host(const std::string &host);

}  // namespace naa::transport
