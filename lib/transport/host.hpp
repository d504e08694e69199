// SPDX-License-Identifier: BSD-3-Clause
// Host names and addresses as every transport needs them, whatever the fabric: resolution
// with the same errors and wording everywhere, and whether a host is this one.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "naa.h"

namespace naa::transport {

// `host`:`port` as an IPv4 socket address ("" or "*": the wildcard). Throws `code` naming the
// host when it resolves to no IPv4 address.
sockaddr_in resolve_ipv4(const std::string &host, uint16_t port, naa_error_t code);

// Throws NAA_ERR_CONNECTION ("cannot resolve NAA host") when `host` resolves to no address of
// any family: checked before a fabric looks it up, because libfabric answers an unresolvable
// name with the same -FI_ENODATA as "no provider".
void require_resolvable(const std::string &host);

// NAA_LOCAL_IP's value as an address; throws NAA_ERR_CONFIG when it is not a dotted IPv4
// address (naa(7)).
in_addr local_ipv4(const std::string &local_ip);

// True when `host` (a name or an address) resolves to this host: a loopback address or one of
// its interfaces' addresses. Such an NAA is reachable over shared memory.
bool is_local_host(const std::string &host);

}  // namespace naa::transport
