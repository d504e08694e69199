// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi_rdm_listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "log.hpp"
#include "transport/ofi_shm_names.hpp"

namespace naa::transport::ofi_detail {
namespace {

// A port number for a listener that holds no TCP port (shm alone, asked for port 0): a bound,
// never listening socket keeps it from any other server while the listener lives.
int reserve_port(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    throw Error(NAA_ERR_CONNECTION, std::string("cannot reserve a port number: ") + strerror(err));
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// Whether this process can still open `count` descriptors: the kernel hands out the lowest free
// number, so the highest `count` numbers below RLIMIT_NOFILE are taken only when nearly all
// are; `fd` is any open descriptor to probe with (two system calls, no /proc scan).
bool descriptors_spare(int fd, size_t count) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > static_cast<rlim_t>(INT32_MAX)) return true;
  if (lim.rlim_cur <= count) return false;
  const int lowest = static_cast<int>(lim.rlim_cur - count);
  const int probe = fcntl(fd, F_DUPFD_CLOEXEC, lowest);
  if (probe < 0) return false;
  ::close(probe);
  return probe == lowest;
}

}  // namespace

OfiRdmListener::OfiRdmListener(const std::string &provider, const std::string &host,
                               uint16_t port) {
  InfoPtr probe = find_info(provider, false, FI_EP_RDM, nullptr, nullptr, 0);
  if (!probe)
    throw Error(NAA_ERR_UNSUPPORTED, "no libfabric provider" + provider_phrase(provider) +
                                         " offers what libnaa needs");
  named_ = probe->addr_format == FI_ADDR_STR;
  prov_name_ = probe->fabric_attr->prov_name;
  if (named_ && port == 0) reserved_fd_ = reserve_port(&port);
  std::string service = named_ ? shm_service(port) : std::to_string(port);
  if (named_) claim_name(service);
  const char *node = named_ || host.empty() ? nullptr : host.c_str();
  int rc = 0;
  InfoPtr info = find_info(prov_name_, false, FI_EP_RDM, node, service.c_str(), FI_SOURCE, &rc);
  if (!info) {
    release_port();
    fail(NAA_ERR_UNSUPPORTED, "libfabric provider " + prov_name_ + " cannot listen on " + host +
                                  ":" + std::to_string(port), rc);
  }
  try {
    fabric_ = std::make_shared<OfiFabric>(info.get());
    ep_ = std::make_unique<OfiEndpoint>(fabric_, std::move(info), nullptr);
  } catch (...) {
    release_port();
    throw;
  }
  port_ = port;
  // A connection request is rare and its sender waits for far more than this anyway; an idle
  // server that napped at most kNapMax woke 1000 times a second, 7 % of a core on a loaded
  // 2-core machine (test_hostile's idle check).
  ep_->set_nap_limit(kListenerNapLimit);
  if (named_) name_fd_ = hold_shm_name(service);
  // What each request's fresh endpoint is opened with, found once: fi_getinfo costs tens of
  // milliseconds. Over shm each gets a source of its own (give_unique_shm_source).
  fresh_info_ = find_info(prov_name_, false, FI_EP_RDM, named_ || host.empty() ? nullptr : host.c_str(),
                          named_ ? nullptr : "0", named_ ? 0 : FI_SOURCE, &rc);
  if (!fresh_info_) fail(NAA_ERR_UNSUPPORTED, "no endpoint for connection requests", rc);
  if (!named_) {
    std::string name = ep_->own_name();
    if (name.size() >= sizeof(sockaddr_in))
      port_ = ntohs(reinterpret_cast<const sockaddr_in *>(name.data())->sin_port);
  }
}

OfiRdmListener::~OfiRdmListener() {
  ep_.reset();
  if (name_fd_ >= 0) ::close(name_fd_);
  release_port();
}

std::unique_ptr<Endpoint> OfiRdmListener::next_request(Deadline deadline) {
  // libfabric 1.17's shm provider crashes inside fi_cq_read when a new peer's request
  // arrives while the process has no descriptor left to map that peer (seen with naa-server
  // flooded by idle TCP connections). Its queue is left unread while descriptors are short,
  // in short slices: the request waits in the peer's queue, and is read once naa-server's
  // handshake sweep has closed the silent connections that held them.
  std::optional<control::Message> request;
  while (!request) {
    if (deadline.expired()) return nullptr;
    const auto slice = std::chrono::milliseconds(deadline.remaining_ms(kDescriptorCheckMs));
    if (named_ && name_fd_ >= 0 && !descriptors_spare(name_fd_, kSpareDescriptors)) {
      std::this_thread::sleep_for(slice);
      continue;
    }
    request = ep_->next_control(control::Type::Request, Deadline::after(slice));
  }
  InfoPtr info(fi_dupinfo(fresh_info_.get()));
  if (!info) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
  if (named_) give_unique_shm_source(info.get());
  auto ep = std::make_unique<OfiEndpoint>(fabric_, std::move(info), nullptr, request->data);
  ep->attach(request->name, request->pid);
  return ep;
}

void OfiRdmListener::claim_name(const std::string &name) {
  NameState state = shm_name_state(name);
  if (state == NameState::Live) {
    release_port();
    throw Error(NAA_ERR_CONNECTION, "cannot listen with shm as " + name +
                                        ": another server listens there");
  }
  if (state == NameState::Stale) {
    NAA_LOG_INFO("removing shm region %s, left by a server that died", name.c_str());
    shm_unlink(("/" + name).c_str());
  }
}

void OfiRdmListener::release_port() {
  if (reserved_fd_ >= 0) ::close(reserved_fd_);
  reserved_fd_ = -1;
}

}  // namespace naa::transport::ofi_detail
