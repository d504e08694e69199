// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_listener.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <rdma/fi_cm.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "diag/log.hpp"
#include "wait_plan.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/interruptible_nap.hpp"
#include "transport/ofi/ofi_endpoint.hpp"

namespace naa::transport::ofi {

OfiListener::OfiListener(const std::string &provider, const std::string &host, uint16_t port,
                         const TransportOptions &options)
    : options_(options) {
  InfoPtr hints = make_hints(provider);
  fi_info *info = nullptr;
  std::string service = std::to_string(port);
  int rc = fi_getinfo(kApiVersion, host.empty() ? nullptr : host.c_str(), service.c_str(),
                      FI_SOURCE, hints.get(), &info);
  if (rc < 0)
    fail(NAA_ERR_UNSUPPORTED,
         "no libfabric provider" + provider_phrase(provider) + " can listen on " + host + ":" +
             service,
         rc);
  info_.reset(info);
  fabric_ = OfiContext::acquire(info_.get());
  // A descriptor to sleep on outside the descriptor gate, where the provider offers one.
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_FD;
  fid_eq *eq = nullptr;
  if (fi_eq_open(fabric_->fabric, &eq_attr, &eq, nullptr) != 0) {
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    check(fi_eq_open(fabric_->fabric, &eq_attr, &eq, nullptr), "fi_eq_open");
  }
  eq_.reset(eq);
  if (eq_attr.wait_obj != FI_WAIT_FD || fi_control(&eq_->fid, FI_GETWAIT, &eq_fd_) != 0)
    eq_fd_ = -1;
  fid_pep *pep = nullptr;
  check(fi_passive_ep(fabric_->fabric, info_.get(), &pep, nullptr), "fi_passive_ep");
  pep_.reset(pep);
  check(fi_pep_bind(pep_.get(), &eq_->fid, 0), "fi_pep_bind");
  rc = fi_listen(pep_.get());
  if (rc < 0) fail(NAA_ERR_CONNECTION, "cannot listen on " + host + ":" + service, rc);
  sockaddr_storage addr{};
  size_t len = sizeof addr;
  check(fi_getname(&pep_->fid, &addr, &len), "fi_getname");
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 &>(addr).sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in &>(addr).sin_port);
}

// The provider accepts a connection's socket inside fi_eq_read: that read takes the descriptor
// gate, the sleep before it does not. While a same-host step claims the descriptors that are
// left (descriptor_gate.hpp), the read waits: the connections wait in the kernel's backlog,
// and the EQ's descriptor stays readable, so the wait is a nap.
// It sleeps to the caller's deadline, or to the queue stock's expiry while the stock holds a
// pair: an idle server's listener wakes for neither.
// A wake-up that brought a connection's socket but no request (and no request while polling
// after it) ends the call before the next sleep: naa-server's sweep of connections that send
// nothing (handshake_sweeper.hpp) learns of the socket only that way, as it no longer wakes
// to look on its own while it has nothing to look at.
std::unique_ptr<Endpoint> OfiListener::next_request(Deadline deadline) {
  bool held_off = false;
  bool stirred = false;
  naa::YieldingPoller yielding;
  for (;;) {
    uint32_t event = 0;
    // The connection request's private data follows the entry.
    alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
    fi_eq_cm_entry &entry = *reinterpret_cast<fi_eq_cm_entry *>(buf);
    const bool polling = !held_off && (request_due_ != Deadline::Clock::time_point{} ||
                                       pace_.due(Deadline::Clock::now()));
    bool woken = false;
    if (!polling) yielding.stop();
    if (held_off) {
      if (nap_unless_interrupted(interrupt_fd_, std::min<Deadline::Clock::duration>(
                                                    kHeldOffNap, deadline.remaining())))
        return nullptr;
    } else if (polling) {
      yielding.poll();
      sched_yield();  // the client may share this core (loopback): it moves meanwhile
    } else {
      if (stirred) return nullptr;
      const Woken w = sleep_until_event(deadline.sooner(fabric_->queues.expiry(kQueuesKept)));
      if (w == Woken::ByInterrupt) return nullptr;
      woken = w == Woken::ByEvent;
    }
    ssize_t rc = -FI_EAGAIN;
    {
      std::lock_guard<std::mutex> gate(descriptor_gate());
      held_off = !accepts_spare();
      if (!held_off) rc = fi_eq_read(eq_.get(), &event, buf, sizeof buf, 0);
    }
    if (rc == -FI_EAGAIN && !held_off) poll_for_request(woken);
    if (rc >= 0 && event == FI_CONNREQ) {
      if (request_due_ != Deadline::Clock::time_point{})
        request_took_.observe(Deadline::Clock::now() - socket_came_);
      request_due_ = {};
      polls_pay_ = true;
      size_t data_len =
          static_cast<size_t>(rc) > sizeof entry ? static_cast<size_t>(rc) - sizeof entry : 0;
      auto ep = std::make_unique<OfiEndpoint>(fabric_, InfoPtr(entry.info), pep_.get(),
                                              std::string(buf + sizeof entry, data_len));
      ep->limit_writes(options_.write_chunk);
      ep->plan_setup_waits(options_);
      pace_.found(Deadline::Clock::now());
      return ep;
    }
    if (woken) {
      ++stirs_;
      stirred = true;
    }
    if (rc >= 0 && entry.info != nullptr) fi_freeinfo(entry.info);
    fabric_->queues.expire(kQueuesKept);
    if (rc == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      fi_eq_readerr(eq_.get(), &err, 0);
      NAA_LOG_WARN("listener: %s", fi_error_text(err.err).c_str());
    }
    if (deadline.expired()) return nullptr;
  }
}

// Until an event, the interrupt descriptor or `deadline`; without a descriptor to sleep on,
// short naps.
OfiListener::Woken OfiListener::sleep_until_event(Deadline deadline) {
  if (eq_fd_ < 0) {
    const bool interrupted = nap_unless_interrupted(
        interrupt_fd_, std::min<Deadline::Clock::duration>(kNoDescriptorNap, deadline.remaining()));
    return interrupted ? Woken::ByInterrupt : Woken::No;
  }
  fid_t eq = &eq_->fid;
  if (fi_trywait(fabric_->fabric, &eq, 1) != FI_SUCCESS)
    return Woken::ByEvent;  // something is there already
  pollfd p[2] = {{eq_fd_, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
  if (::poll(p, interrupt_fd_ >= 0 ? 2 : 1, deadline.remaining_ms(INT32_MAX)) <= 0)
    return Woken::No;
  if (interrupt_fd_ >= 0 && p[1].revents != 0) return Woken::ByInterrupt;
  return Woken::ByEvent;
}

// After a read that found no event: a wake-up that brought only a connection's socket starts
// a poll for its request, one that is no longer due ends, finding none.
void OfiListener::poll_for_request(bool woken) {
  const auto now = Deadline::Clock::now();
  if (request_due_ != Deadline::Clock::time_point{}) {
    if (now < request_due_) return;
    request_due_ = {};
    polls_pay_ = false;
    return;
  }
  if (!woken || !polls_pay_ || options_.setup_sleeps) return;
  socket_came_ = now;
  request_due_ = now + naa::wait_plan(request_took_.value(), options_.setup_spin).poll;
}

}  // namespace naa::transport::ofi
