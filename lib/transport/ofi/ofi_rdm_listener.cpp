// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_rdm_listener.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "diag/log.hpp"
#include "wait_plan.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/interruptible_nap.hpp"
#include "transport/nap.hpp"
#include "transport/ofi/shm/leftovers.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/ofi/shm/request.hpp"

namespace naa::transport::ofi {
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

}  // namespace

OfiRdmListener::OfiRdmListener(const std::string &provider, const std::string &host, uint16_t port,
                               size_t write_chunk, size_t idle_endpoints)
    : write_chunk_(write_chunk), idle_endpoints_(idle_endpoints) {
  InfoPtr probe = find_info(provider, false, FI_EP_RDM, nullptr, nullptr, 0);
  if (!probe)
    throw Error(NAA_ERR_UNSUPPORTED,
                "no libfabric provider" + provider_phrase(provider) + " offers what libnaa needs");
  named_ = probe->addr_format == FI_ADDR_STR;
  prov_name_ = probe->fabric_attr->prov_name;
  if (named_ && port == 0) reserved_fd_ = reserve_port(&port);
  std::string service = named_ ? shm_service(port) : std::to_string(port);
  if (named_) {
    claim_name(service);
    shm::remove_dead_processes_regions();
  }
  const char *node = named_ || host.empty() ? nullptr : host.c_str();
  int rc = 0;
  InfoPtr info = find_info(prov_name_, false, FI_EP_RDM, node, service.c_str(), FI_SOURCE, &rc);
  if (!info) {
    release_port();
    fail(NAA_ERR_UNSUPPORTED,
         "libfabric provider " + prov_name_ + " cannot listen on " + host + ":" +
             std::to_string(port),
         rc);
  }
  try {
    fabric_ = OfiContext::acquire(info.get());
    ep_ = std::make_unique<OfiEndpoint>(fabric_, std::move(info), nullptr);
  } catch (...) {
    release_port();
    throw;
  }
  port_ = port;
  if (named_) name_fd_ = shm::hold_name(service);
  // Without a name to ring (PROVIDER;ofi_rxm) it only naps. The name is ours now: a page
  // under it is a dead server's.
  const std::string bell =
      named_ ? shm::listener_bell_object(shm::kListenerAddressPrefix + service) : std::string();
  if (named_) shm_unlink(bell.c_str());
  bell_ = std::make_unique<shm::Bell>(bell);
  // What each request's fresh endpoint is opened with, found once: fi_getinfo costs tens of
  // milliseconds. Over shm each gets a source of its own (shm::give_unique_source).
  fresh_info_ =
      find_info(prov_name_, false, FI_EP_RDM, named_ || host.empty() ? nullptr : host.c_str(),
                named_ ? nullptr : "0", named_ ? 0 : FI_SOURCE, &rc);
  if (!fresh_info_) fail(NAA_ERR_UNSUPPORTED, "no endpoint for connection requests", rc);
  if (named_ && idle_endpoints_ > 0) {
    InfoPtr spare(fi_dupinfo(fresh_info_.get()));
    if (!spare) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
    shm::give_unique_source(spare.get());
    OfiEndpoint(fabric_, std::move(spare), nullptr, {}, OfiEndpoint::Reuse::Server, idle_endpoints_)
        .park_unused();
  }
  if (!named_) {
    std::string name = ep_->own_name();
    if (name.size() >= sizeof(sockaddr_in))
      port_ = ntohs(reinterpret_cast<const sockaddr_in *>(name.data())->sin_port);
  }
}

OfiRdmListener::~OfiRdmListener() {
  ep_.reset();
  // The endpoints kept for the next client (park_unused) stay open until the process exits,
  // their bells would stay in /dev/shm after it: a stopped listener has no next client.
  if (named_) fabric_->drop_idle_bells();
  if (name_fd_ >= 0) ::close(name_fd_);
  release_port();
}

std::unique_ptr<Endpoint> OfiRdmListener::next_request(Deadline deadline) {
  // libfabric 1.17's shm provider crashes inside fi_cq_read when a new peer's request
  // arrives while the process has no descriptor left to map that peer (seen with naa-server
  // flooded by idle TCP connections). Its queue is left unread while descriptors are short:
  // the request waits in the peer's queue, and is read once naa-server's handshake sweep has
  // closed the silent connections that held them. The count, the read and the mapping of the
  // new peer happen under the descriptor gate, which the tcp listener's accepts take too.
  // Between looks it sleeps on its bell (shm/bell.hpp), which a client rings when its
  // request is in the queue, and before that when shm wants the listener to take its name
  // first, if the listener sleeps: to the caller's deadline (kUnrungLook at most), as every
  // request comes with a ring (napping instead, an idle server looked at its queue 330 times a
  // second, 2 % of a core). The bell is raised before the last look ahead of a sleep, so that
  // a request posted after that look rings, and lowered when the sleep ends; a listener that
  // is awake (looking, or polling while a request is due) is not rung. While descriptors are
  // short a ring cannot be answered, so it naps, growing to kListenerNapLimit, and looks again
  // after each nap. From the second ring of a call on, two rings end a sleep kRingSpacing apart
  // at the closest, so that a process ringing on and on costs the listener at most that many
  // looks. The first ring is free: it is often one that came after its request had been taken
  // (a client rings after its send, and the listener may look between the two); spacing from
  // it on made the next client's request wait out kRingSpacing and the timer's slack (130 us
  // of each warm naa_create over shm once they came faster than that).
  // While the next request is due (request_pace.hpp) it polls instead of sleeping. Every
  // sleep also ends when the interrupt descriptor (naa-server's stop) is readable, and none
  // is longer than kUnrungLook.
  Nap nap(kListenerNapLimit);
  Deadline::Clock::time_point bell_from{};  // rings before this do not end a nap
  unsigned rings = 0;                       // sleeps of this call that a ring ended
  DescriptorClaim claim;  // while starved: the tcp listener leaves the freed descriptors to it
  naa::YieldingPoller yielding;
  // Raised: the look at the top of the loop is the last before a sleep on the bell.
  struct Raised {
    shm::Bell &bell;
    bool up = false;
    void lower() {
      if (up) bell.lower();
      up = false;
    }
    ~Raised() { lower(); }
  } raised{*bell_};
  for (;;) {
    bool starved = false;
    {
      std::lock_guard<std::mutex> gate(descriptor_gate());
      starved = named_ && !descriptors_spare(kSpareDescriptors);
      claim.hold(starved);
      if (starved) fabric_->drop_idle_bells();
      if (!starved) {
        if (const auto at = Deadline::Clock::now(); at - stamped_ >= kStampEvery) {
          shm::stamp_listener(name_fd_);  // before the read: every name queued until now is taken
          stamped_ = at;
        }
        if (std::optional<control::Message> request = ep_->poll_control(control::Type::Request)) {
          raised.lower();
          std::string why;
          if (named_ && !shm::request_plausible(request->name, request->pid, &why)) {
            dropped(request->name, why);
            continue;
          }
          InfoPtr info(fi_dupinfo(fresh_info_.get()));
          if (!info) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
          if (named_) shm::give_unique_source(info.get());
          auto ep = std::make_unique<OfiEndpoint>(fabric_, std::move(info), nullptr, request->data,
                                                  OfiEndpoint::Reuse::Server, idle_endpoints_);
          ep->limit_writes(write_chunk_);
          ep->attach(request->name, request->pid);
          pace_.found(Deadline::Clock::now());
          return ep;
        }
      }
    }
    if (deadline.expired()) return nullptr;
    const auto now = Deadline::Clock::now();
    if (!starved && pace_.due(now)) {
      raised.lower();
      yielding.poll();
      sched_yield();  // the client may share this core: it moves meanwhile
      continue;
    }
    yielding.stop();
    const auto length = std::min<Deadline::Clock::duration>(starved ? nap.length() : kUnrungLook,
                                                            deadline.remaining());
    if (now < bell_from) {
      raised.lower();
      if (nap_unless_interrupted(interrupt_fd_,
                                 std::min<Deadline::Clock::duration>(length, bell_from - now)))
        return nullptr;
      continue;
    }
    if (!raised.up && bell_->ok()) {
      bell_->raise();
      raised.up = true;
      continue;  // the last look
    }
    raised.up = false;  // sleep() lowers it
    const shm::Bell::Woken w = bell_->sleep(length, interrupt_fd_);
    if (w == shm::Bell::Woken::ByInterrupt) return nullptr;
    if (w == shm::Bell::Woken::ByRing) {
      ++rung_;
      if (++rings > 1) bell_from = Deadline::Clock::now() + kRingSpacing;
    }
  }
}

// Unanswered: an answer would go to a region that may not be there (and retry), or to a process
// that did not ask. One log line a second at most, for a flood of them.
void OfiRdmListener::dropped(const std::string &name, const std::string &why) {
  ++dropped_;
  const auto now = std::chrono::steady_clock::now();
  if (now - dropped_logged_ < std::chrono::seconds(1)) return;
  dropped_logged_ = now;
  std::string shown = std::string(name.c_str()).substr(0, 80);
  for (char &c : shown) c = c >= 0x20 && c < 0x7f ? c : '?';  // any bytes: not for the log raw
  NAA_LOG_WARN("shm connection request from %s dropped unanswered: %s (%lu so far)", shown.c_str(),
               why.c_str(), dropped_);
}

void OfiRdmListener::claim_name(const std::string &name) {
  NameState state = shm_name_state(name);
  if (state == NameState::Live) {
    release_port();
    throw Error(NAA_ERR_CONNECTION,
                "cannot listen with shm as " + name + ": another server listens there");
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

}  // namespace naa::transport::ofi
