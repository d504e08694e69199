// SPDX-License-Identifier: BSD-3-Clause
// Every runtime parameter of libnaa, in one table (config/params.hpp): the resolver's (rm), the
// transport layer's own (NAA_TRANSPORT, NAA_MODULE_DIR), libnaa's as a whole (config), then
// each transport row's own, registered from its row in registry.cpp. The transport layer is the
// highest that declares parameters, so the table is composed here; what reads a handle's
// settings (session, naa-info, naa-server) reads this table.
#pragma once

#include "config/params.hpp"
#include "transport/transport.hpp"

namespace naa::transport {

const config::params::Table &parameters();

// Every parameter of parameters(), as config::params::Values::read reads them.
config::params::Values read_parameters(const char *const *overrides = nullptr);

// What a transport takes from `values` (NAA_PROGRESS=provider, NAA_SPIN_US, NAA_RDMA_DEVICE,
// NAA_OFI_WRITE_CHUNK, NAA_SHM_IDLE_ENDPOINTS): a handle's settings, and programs that open a
// transport without a handle (naa-server, naa-bench --raw). `values` are read from
// parameters().
TransportOptions options_from(const config::params::Values &values);

}  // namespace naa::transport
