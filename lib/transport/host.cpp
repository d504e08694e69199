// SPDX-License-Identifier: BSD-3-Clause
#include "transport/host.hpp"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

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
                       &reinterpret_cast<const sockaddr_in6 *>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

}  // namespace

bool is_local_host(const std::string &host) {
  addrinfo want{}, *found = nullptr;
  want.ai_socktype = SOCK_STREAM;
  if (host.empty() || getaddrinfo(host.c_str(), nullptr, &want, &found) != 0) return false;
  ifaddrs *interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) interfaces = nullptr;
  bool local = false;
  for (addrinfo *a = found; a != nullptr && !local; a = a->ai_next) {
    local = is_loopback(a->ai_addr);
    for (ifaddrs *i = interfaces; i != nullptr && !local; i = i->ifa_next)
      local = i->ifa_addr != nullptr && same_address(a->ai_addr, i->ifa_addr);
  }
  if (interfaces != nullptr) freeifaddrs(interfaces);
  freeaddrinfo(found);
  return local;
}

}  // namespace naa::transport
