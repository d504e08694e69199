// SPDX-License-Identifier: BSD-3-Clause
// The verbs transport: RC queue pairs over librdmacm (RDMA_PS_TCP), the transport the NAAICE
// FPGA NAAs speak. rdma_cm chooses device, port and RoCEv2 GID from the route to the peer's
// address; NAA_LOCAL_IP or NAA_RDMA_DEVICE pin the source side.
#pragma once

#include "transport/transport.hpp"

namespace naa::transport::verbs {

// `device` (NAA_RDMA_DEVICE, may be empty) names the RDMA device to connect from when no
// local_ip is given.
std::unique_ptr<Transport> open_verbs_transport(const std::string &device);

// True when an RDMA device routes to `host` (rdma_cm resolves an address and a route to it
// within `deadline`): what NAA_TRANSPORT=auto asks before it chooses verbs.
bool verbs_routes_to(const std::string &host, const std::string &local_ip,
                     const std::string &device, Deadline deadline);

// True when a verbs listener on `host` reaches an RDMA device: `host` is the address of one,
// or the wildcard 0.0.0.0 on a machine that has one.
bool verbs_can_listen_on(const std::string &host);

}  // namespace naa::transport::verbs
