// The libfabric transport. `provider` names a libfabric provider ("tcp", "verbs", ...) or is
// empty to take the first provider that offers FI_EP_MSG with RMA and remote CQ data.
#pragma once

#include "transport/transport.hpp"

namespace naa::transport {

std::unique_ptr<Transport> open_ofi_transport(const std::string &provider);

}  // namespace naa::transport
