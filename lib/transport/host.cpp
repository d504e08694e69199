// SPDX-License-Identifier: BSD-3-Clause
#include "transport/host.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>

#include "error.hpp"

namespace naa::transport {
namespace {

bool is_loopback(const sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
  return false;
}

bool same_address(const sockaddr *a, const sockaddr *b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in *>(b)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6 *>(b)->sin6_addr,
                       sizeof(in6_addr)) == 0;
  return false;
}

using AddrInfo = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// The addresses of `host` in `family` (AF_UNSPEC: any), or the getaddrinfo error code.
AddrInfo lookup(const std::string &host, int family, int *gai) {
  addrinfo want{}, *found = nullptr;
  want.ai_family = family;
  want.ai_socktype = SOCK_STREAM;
  *gai = host.empty() ? EAI_NONAME : getaddrinfo(host.c_str(), nullptr, &want, &found);
  return AddrInfo(*gai == 0 ? found : nullptr, &freeaddrinfo);
}

}  // namespace

sockaddr_in resolve_ipv4(const std::string &host, uint16_t port, naa_error_t code) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (host.empty() || host == "*") return sa;  // the wildcard
  int gai = 0;
  AddrInfo found = lookup(host, AF_INET, &gai);
  if (!found)
    throw Error(code, "cannot resolve '" + host + "' to an IPv4 address: " + gai_strerror(gai));
  sa.sin_addr = reinterpret_cast<const sockaddr_in *>(found->ai_addr)->sin_addr;
  return sa;
}

void require_resolvable(const std::string &host) {
  int gai = 0;
  if (!lookup(host, AF_UNSPEC, &gai))
    throw Error(NAA_ERR_CONNECTION, "cannot resolve NAA host '" + host + "': " + gai_strerror(gai));
}

in_addr local_ipv4(const std::string &local_ip) {
  in_addr a{};
  if (inet_pton(AF_INET, local_ip.c_str(), &a) != 1)
    throw Error(NAA_ERR_CONFIG, "NAA_LOCAL_IP '" + local_ip + "' is not an IPv4 address");
  return a;
}

// A loopback address is answered without the interfaces: reading them (getifaddrs, a netlink
// dump) would be a large share of every warm naa_create over shm to 127.0.0.1.
bool is_local_host(const std::string &host) {
  int gai = 0;
  AddrInfo found = lookup(host, AF_UNSPEC, &gai);
  if (!found) return false;
  for (const addrinfo *a = found.get(); a != nullptr; a = a->ai_next)
    if (is_loopback(a->ai_addr)) return true;
  ifaddrs *interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return false;
  bool local = false;
  for (const addrinfo *a = found.get(); a != nullptr && !local; a = a->ai_next)
    for (ifaddrs *i = interfaces; i != nullptr && !local; i = i->ifa_next)
      local = i->ifa_addr != nullptr && same_address(a->ai_addr, i->ifa_addr);
  freeifaddrs(interfaces);
  return local;
}

}  // namespace naa::transport
