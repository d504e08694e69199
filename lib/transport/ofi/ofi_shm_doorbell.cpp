// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_shm_doorbell.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstring>
#include <thread>

#include "diag/log.hpp"
#include "transport/interruptible_nap.hpp"
#include "transport/ofi/ofi_shm_names.hpp"

namespace naa::transport::ofi {
namespace {

// The abstract name (leading NUL: no file to leave behind when the server is killed) of the
// doorbell of the listener named `service`.
socklen_t doorbell_address(const std::string &service, sockaddr_un *addr) {
  const std::string name = service + ".doorbell";
  *addr = {};
  addr->sun_family = AF_UNIX;
  const size_t len = std::min(name.size(), sizeof addr->sun_path - 1);
  std::memcpy(addr->sun_path + 1, name.data(), len);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
}

}  // namespace

ShmDoorbell::ShmDoorbell(const std::string &service) {
  if (service.empty()) return;
  sockaddr_un addr;
  const socklen_t len = doorbell_address(service, &addr);
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr *>(&addr), len) == 0) return;
  NAA_LOG_INFO("shm listener %s: no doorbell (%s); connection requests are looked for between naps",
               service.c_str(), strerror(errno));
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ShmDoorbell::~ShmDoorbell() {
  if (fd_ >= 0) ::close(fd_);
}

ShmDoorbell::Woken ShmDoorbell::wait(Deadline::Clock::duration timeout, int interrupt) {
  if (fd_ < 0) return nap_unless_interrupted(interrupt, timeout) ? Woken::ByInterrupt : Woken::No;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  pollfd p[2] = {{fd_, POLLIN, 0}, {interrupt, POLLIN, 0}};
  if (::ppoll(p, interrupt >= 0 ? 2 : 1, &ts, nullptr) <= 0) return Woken::No;
  if (interrupt >= 0 && p[1].revents != 0) return Woken::ByInterrupt;
  char byte[64];
  while (recv(fd_, byte, sizeof byte, 0) > 0) {
  }
  return Woken::ByRing;
}

void ring_shm_doorbell(const std::string &server) {
  const std::string service(server.c_str());  // FI_ADDR_STR: up to its NUL
  if (service.rfind(kListenerAddressPrefix, 0) != 0) return;
  sockaddr_un addr;
  const socklen_t len = doorbell_address(service.substr(sizeof kListenerAddressPrefix - 1), &addr);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  const char ring = 1;
  if (sendto(fd, &ring, 1, MSG_NOSIGNAL, reinterpret_cast<sockaddr *>(&addr), len) != 1)
    NAA_LOG_DEBUG("shm doorbell of %s not rung (%s): the listener finds the request after its nap",
                  service.c_str(), strerror(errno));
  ::close(fd);
}

}  // namespace naa::transport::ofi
