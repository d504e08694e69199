// SPDX-License-Identifier: BSD-3-Clause
// An OfiEndpoint's life (opening its domain, queues and endpoint; closing them), its sends and
// receives, and its completions.
#include "transport/ofi/ofi_endpoint.hpp"

#include <poll.h>
#include <rdma/fi_cm.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "process_id.hpp"
#include "diag/log.hpp"

namespace naa::transport::ofi {

OfiEndpoint::OfiEndpoint(std::shared_ptr<OfiContext> context, InfoPtr info, fid_pep *pep,
                         std::string request_data, Reuse reuse, size_t idle_bound)
    : context_(std::move(context)),
      info_(std::move(info)),
      reuse_(reuse),
      idle_bound_(idle_bound),
      pep_(pep),
      peer_data_(std::move(request_data)) {
  rdm_ = info_->ep_attr->type == FI_EP_RDM;
  // Only shm guarantees a peer on this host, whose process can be watched.
  same_host_ = rdm_ && std::strcmp(info_->fabric_attr->prov_name, "shm") == 0;
  sources_ = same_host_ && (info_->caps & FI_SOURCE);
  cq_wakes_ = !same_host_;
  if (same_host_) event_checks_ = EventCheckPacer(EventCheckPacer::kCheapPollsPerCheck);
  peer_ = rdm_ ? "?" : sockaddr_name(info_->dest_addr);
  imm_consumes_recv_ = (info_->mode & FI_RX_CQ_DATA) || (info_->rx_attr->mode & FI_RX_CQ_DATA);
  const uint64_t mr_mode = info_->domain_attr->mr_mode;
  virt_addr_ = (mr_mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC)) != 0;
  ordered_writes_ =
      (info_->tx_attr->msg_order & FI_ORDER_WAW) && (info_->tx_attr->comp_order & FI_ORDER_STRICT);
  max_msg_ = info_->ep_attr->max_msg_size;
  inject_size_ = info_->tx_attr->inject_size;
  // A request a server may still refuse gets no domain, queues or endpoint until it is
  // accepted or memory is registered for it: a refusal costs nothing.
  if (pep_ == nullptr) open_once();
}

OfiEndpoint::~OfiEndpoint() {
  if (connected_ && !rdm_) fi_shutdown(ep_, 0);
  // A server endpoint answers a shm client's goodbye with its own, after everything it sent: a
  // client endpoint is reused once that has come (ofi_endpoint_reuse.cpp). Not to a client of
  // this process: shm frees a closed endpoint's region in the process that mapped it.
  const bool peer_left_first = peer_left_;
  if (connected_ && rdm_ &&
      (!peer_left_ ||
       (reuse_ == Reuse::Server && sources_ && peer_goodbye_ && peer_pid_ != naa::this_process())))
    say_goodbye();
  if (!park(peer_left_first)) close();
  if (peer_pidfd_ >= 0) ::close(peer_pidfd_);
  if (kept_pidfd_ >= 0) ::close(kept_pidfd_);
}

void OfiEndpoint::limit_writes(size_t chunk) {
  if (chunk >= max_msg_) return;
  max_msg_ = chunk;
  NAA_LOG_INFO("writes to %s split at %zu bytes (NAA_OFI_WRITE_CHUNK)", peer_.c_str(), chunk);
}

void OfiEndpoint::post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) {
  void *desc = static_cast<const OfiMemoryRegion &>(mr).desc;
  retry_post("fi_recv", [&] {
    return fi_recv(ep_, buf, length, desc, FI_ADDR_UNSPEC, reinterpret_cast<void *>(context));
  });
  if (sources_) posted_recvs_.push_back({context, buf, length, desc});
}

// libfabric has no solicited-event bit; the peer wakes on any completion.
void OfiEndpoint::post_send(const void *buf, size_t length, const MemoryRegion &mr,
                            uint64_t context) {
  iovec iov{const_cast<void *>(buf), length};
  void *desc = static_cast<const OfiMemoryRegion &>(mr).desc;
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = peer_addr_;
  msg.context = reinterpret_cast<void *>(context);
  retry_post("fi_sendmsg", [&] { return fi_sendmsg(ep_, &msg, FI_COMPLETION); });
  wake_peer(length);
  ++tx_pending_;
  nap_.reset();  // an answer is due (MRSP): the waits for it start short
}

size_t OfiEndpoint::poll(Completion *out, size_t max) {
  size_t n = 0;
  while (n < max && !stash_.empty()) {
    out[n++] = stash_.front();
    stash_.pop_front();
  }
  if (n < max) n += read_cq(out + n, max - n);
  if (n == 0 && bell_) bell_->publish_cpu();  // where it polls, for peer_beside()
  if (n == 0 && (peer_left_ || event_checks_.due())) check_events();
  if (n > 0) nap_.reset();
  if (cq_wait_) cq_wait_->polled(n > 0);
  return n;
}

size_t OfiEndpoint::wait(Completion *out, size_t max, Deadline deadline) {
  for (;;) {
    if (size_t n = poll(out, max)) return n;
    if (deadline.expired()) return 0;
    if (size_t n = sleep_on_cq(out, std::min<size_t>(max, 8), deadline, interrupt_fd_)) return n;
    check_events();  // a slice slept through: the peer may be gone
    if (interrupted_) return 0;
  }
}

// shm only once nothing has come for kQuietBeforeSleep: a transfer that needs both sides'
// progress (sleep_on_bell) after a short pause still has the caller's slices to move it.
bool OfiEndpoint::wait_sleeps_through() const {
  if (!cq_wakes_) return rings_bell() && peer_pidfd_ >= 0 && nap_.idle() >= kQuietBeforeSleep;
  return wait_fd_ >= 0 && eq_fd_ >= 0;
}

bool OfiEndpoint::arm_wait() {
  check_events();
  if (rings_bell()) return arm_bell();
  if (wait_fd_ < 0) return true;  // nothing to arm: the caller naps instead (shm)
  fid_t cq = &cq_->fid;
  return fi_trywait(context_->fabric, &cq, 1) == FI_SUCCESS && (!cq_wait_ || cq_wait_->arm());
}

void OfiEndpoint::open_once() {
  if (ep_ != nullptr) return;
  try {
    open();
  } catch (...) {
    close();
    throw;
  }
}

// The EQ (MSG) and the CQ: those of a closed MSG endpoint where its Context kept them
// (ofi_queue_stock.hpp), else new ones.
void OfiEndpoint::open_queues() {
  if (!rdm_) {
    if (std::optional<OfiQueues> kept = context_->queues.take()) {
      eq_ = kept->eq;
      cq_ = kept->cq;
      eq_fd_ = kept->eq_fd;
      cq_wait_ = kept->cq_wait;
      wait_fd_ = cq_wait_ ? cq_wait_->fd() : -1;
      return;
    }
    // An fd here too, where the provider has one: a thread asleep on the CQ then also wakes
    // for a disconnect, which only the EQ shows.
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_FD;
    if (fi_eq_open(context_->fabric, &eq_attr, &eq_, nullptr) == 0) {
      if (fi_control(&eq_->fid, FI_GETWAIT, &eq_fd_) != 0) eq_fd_ = -1;
    } else {
      eq_attr.wait_obj = FI_WAIT_UNSPEC;
      check(fi_eq_open(context_->fabric, &eq_attr, &eq_, nullptr), "fi_eq_open");
    }
  }
  // An fd wait object where the provider has one: the progress thread sleeps on many
  // endpoints' descriptors at once (FI_GETWAIT names it only for FI_WAIT_FD).
  // shm's CQ does not wake its wait object for a peer's message (sleep_on_cq naps or rings), so
  // it gets none: its descriptors would be held for nothing, by idle endpoints too.
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  if (!rdm_) {  // a set of descriptors filled only for a sleep (ofi_cq_wait.hpp)
    cq_wait_ = OfiCqWait::open(context_->domain, cq_attr, &cq_);
    if (cq_wait_) {
      wait_fd_ = cq_wait_->fd();
      return;
    }
  } else {
    cq_attr.wait_obj = cq_wakes_ ? FI_WAIT_FD : FI_WAIT_NONE;
    if (fi_cq_open(context_->domain, &cq_attr, &cq_, nullptr) == 0) {
      if (!cq_wakes_ || fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
      return;
    }
  }
  cq_attr.wait_obj = FI_WAIT_UNSPEC;
  check(fi_cq_open(context_->domain, &cq_attr, &cq_, nullptr), "fi_cq_open");
}

void OfiEndpoint::open() {
  if (adopt_idle()) {
    if (!bell_) open_bell();  // a client's kept endpoint may have kept its own
    return;
  }
  open_queues();
  check(fi_endpoint(context_->domain, info_.get(), &ep_, nullptr), "fi_endpoint");
  if (rdm_) {
    fi_av_attr av_attr{};
    av_attr.type = info_->domain_attr->av_type;
    check(fi_av_open(context_->domain, &av_attr, &av_, nullptr), "fi_av_open");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
  } else {
    check(fi_ep_bind(ep_, &eq_->fid, 0), "fi_ep_bind(eq)");
  }
  // Selective completion for sends only (the chain signals just its last write); on the
  // receive side it would silence every receive posted without FI_COMPLETION.
  check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION), "fi_ep_bind(tx cq)");
  check(fi_ep_bind(ep_, &cq_->fid, FI_RECV), "fi_ep_bind(rx cq)");
  check(fi_enable(ep_), "fi_enable");
  if (rdm_) open_control();
  if (same_host_) {
    count_opened();
    open_bell();
  }
}

void OfiEndpoint::open_bell() {
  if (!same_host_) return;
  bell_ = std::make_unique<shm::Bell>(shm::bell_object(own_name()));
  if (!bell_->ok()) bell_.reset();
}

void OfiEndpoint::close() {
  if (cq_wait_) cq_wait_->disarm();  // while the socket is open: its removal is then no error
  const bool unbound = ep_ == nullptr || fi_close(&ep_->fid) == 0;
  if (control_mr_ != nullptr) close_fid(&control_mr_->fid);
  if (av_ != nullptr) close_fid(&av_->fid);
  if (!rdm_ && unbound && eq_ != nullptr && cq_ != nullptr) {
    context_->queues.give_back({eq_, cq_, eq_fd_, std::move(cq_wait_)});
    eq_ = nullptr;
    cq_ = nullptr;
  }
  if (cq_ != nullptr) close_fid(&cq_->fid);
  cq_wait_.reset();
  if (eq_ != nullptr) close_fid(&eq_->fid);
  ep_ = nullptr;
  control_mr_ = nullptr;
  av_ = nullptr;
  cq_ = nullptr;
  eq_ = nullptr;
}

// Throws for a failed operation of ours; a failed control message (a goodbye to a peer that
// is gone already) is only counted.
void OfiEndpoint::on_cq_error() {
  fi_cq_err_entry err{};
  fi_cq_readerr(cq_, &err, 0);
  if (err.op_context == &sink_context_) {  // drain_unexpected's: cancelled, or a long message
    sink_done_ = true;
    sink_cancelled_ = err.err == FI_ECANCELED;
    return;
  }
  if (parking_ && err.err == FI_ECANCELED && !is_control(err.op_context)) {
    forget_recv(reinterpret_cast<uint64_t>(err.op_context));
    return;
  }
  failed_ = true;
  if (is_control(err.op_context)) {
    if (!(err.flags & FI_RECV) && control_sends_pending_ > 0) --control_sends_pending_;
    NAA_LOG_DEBUG("control message to %s failed: %s", peer_.c_str(),
                  fi_error_text(err.err).c_str());
    return;
  }
  if (err.op_context == &fence_context_ && fence_pending_ > 0) --fence_pending_;
  // A failed operation on a connection the peer dropped is a connection error, not ours.
  check_events();
  throw Error(NAA_ERR_TRANSPORT,
              "operation to " + peer_ + " failed: " + fi_error_text(err.err) + " (" +
                  fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0) + ")");
}

void OfiEndpoint::check_events() {
  if (rdm_) {
    if (peer_left_) throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected");
    if (connected_ && peer_process_gone()) {
      peer_left_ = true;
      remove_dead_peer_region();
      throw Error(NAA_ERR_CONNECTION,
                  "peer " + peer_ + " (process " + std::to_string(peer_pid_) + ") is gone");
    }
    return;
  }
  uint32_t event = 0;
  fi_eq_cm_entry entry{};
  ssize_t rc = fi_eq_read(eq_, &event, &entry, sizeof entry, 0);
  if (rc == -FI_EAVAIL) raise_eq_error("connection to " + peer_, false);
  if (rc >= 0 && event == FI_SHUTDOWN) {
    connected_ = false;
    throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected");
  }
}

// One slice of sleep on the CQ (never past `deadline`), ended early by `interrupt` (>= 0) where
// it sleeps on descriptors: interrupted_ then tells so. shm's peers
// write into our region without waking the CQ's wait object (fi_cq_sread sleeps its whole
// timeout through a message), so there the slices are naps of a share of the time since the
// last completion (wait_plan.hpp): a message after a pause waits a share of the pause.
size_t OfiEndpoint::sleep_on_cq(Completion *out, size_t max, Deadline deadline, int interrupt) {
  interrupted_ = false;
  if (!cq_wakes_) {
    if (rings_bell()) return sleep_on_bell(out, max, deadline, interrupt);
    // To the microsecond: a millisecond count would be 0 in a deadline's last millisecond
    // and turn the nap into a spin.
    nap_.take(deadline.remaining());
    return read_cq(out, max);
  }
  if (wait_fd_ >= 0 && eq_fd_ >= 0) return sleep_on_fds(out, max, deadline, interrupt);
  // Without both descriptors, a disconnect that only the EQ shows is seen after a slice, which
  // grows with the time nothing came: a fixed slice would make many idle connections of
  // naa-server cost a share of a core (doc/performance.md).
  const auto slice =
      std::chrono::duration_cast<std::chrono::milliseconds>(naa::idle_slice(nap_.idle()));
  fi_cq_data_entry entries[8];
  ssize_t rc = fi_cq_sread(cq_, entries, std::min<size_t>(max, 8), nullptr,
                           deadline.remaining_ms(static_cast<int>(slice.count())));
  if (rc > 0) return translate(entries, nullptr, static_cast<size_t>(rc), out);
  if (rc == -FI_EAVAIL)
    on_cq_error();
  else if (rc != -FI_EAGAIN && rc != -FI_ETIMEDOUT && rc != -FI_EINTR)
    check(static_cast<int>(rc), "fi_cq_sread");
  return 0;
}

// Sleeps on the CQ's and the EQ's descriptors at once: a completion and a disconnect both
// wake it, so it needs no slice (the caller's check_events() reads the EQ).
size_t OfiEndpoint::sleep_on_fds(Completion *out, size_t max, Deadline deadline, int interrupt) {
  fid_t fids[2] = {&cq_->fid, &eq_->fid};
  if (fi_trywait(context_->fabric, fids, 2) == FI_SUCCESS && (!cq_wait_ || cq_wait_->arm())) {
    pollfd fds[3] = {{wait_fd_, POLLIN, 0}, {eq_fd_, POLLIN, 0}, {interrupt, POLLIN, 0}};
    // Rounded up: a millisecond count of 0 in a deadline's last millisecond would spin.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.remaining());
    const int timeout = static_cast<int>(std::min<std::chrono::milliseconds::rep>(
        std::max<std::chrono::milliseconds::rep>(left.count(), 0), INT32_MAX));
    if (::poll(fds, interrupt >= 0 ? 3 : 2, timeout) < 0 && errno != EINTR) check(-errno, "poll");
    interrupted_ = interrupt >= 0 && fds[2].revents != 0;
  }
  return read_cq(out, max);
}

// The rings of an earlier sleep are taken, the bell raised, and the queue looked at once more
// (what it holds is kept for the next poll): from here on the peer's next post rings, and the
// bell's descriptor stays readable until the next arming takes the ring, as a CQ's would.
bool OfiEndpoint::arm_bell() {
  bell_->lower();
  bell_->raise();
  Completion c[8];
  const size_t n = read_cq(c, 8);
  stash_.insert(stash_.end(), c, c + n);
  return n == 0 && !peer_left_;
}

// shm with a peer that rings (shm/bell.hpp): sleeps until rung, the peer's process ends,
// or `deadline`, whichever comes first: no nap, so no post waits for the end of one. Except
// while the peer is mid-transfer: a ring that delivered nothing was a post whose data has not
// all come (without CMA, shm moves large writes in segments that need both sides' progress,
// and only posts ring), so for kTransferWatch after one the sleeps are naps, as they were
// before an idle connection slept to its deadline (shm_sar.sh: a 16 MiB invocation after a
// pause then waited up to 1.2 s for the client's next ring).
size_t OfiEndpoint::sleep_on_bell(Completion *out, size_t max, Deadline deadline, int interrupt) {
  bell_->raise();
  size_t n = 0;
  bool rung = false;
  try {
    n = read_cq(out, max);
    if (n == 0 && control_in_.empty() && !peer_left_) {
      pollfd fds[3] = {{bell_->fd(), POLLIN, 0}, {interrupt, POLLIN, 0}, {peer_pidfd_, POLLIN, 0}};
      const nfds_t count = 1 + (interrupt >= 0 ? 1 : 0) + (peer_pidfd_ >= 0 ? 1 : 0);
      if (interrupt < 0) fds[1] = fds[2];
      auto sleep = std::max(deadline.remaining(), Deadline::Clock::duration::zero());
      if (Deadline::Clock::now() < transfer_watch_until_) sleep = std::min(sleep, nap_.length());
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(sleep).count();
      const timespec timeout{static_cast<time_t>(left / 1000000000),
                             static_cast<long>(left % 1000000000)};
      if (::ppoll(fds, count, &timeout, nullptr) < 0 && errno != EINTR) check(-errno, "ppoll");
      interrupted_ = interrupt >= 0 && fds[1].revents != 0;
      rung = fds[0].revents != 0;
    }
  } catch (...) {
    bell_->lower();
    throw;
  }
  bell_->lower();
  if (n == 0) n = read_cq(out, max);
  if (rung && n == 0) {
    transfer_watch_until_ = Deadline::Clock::now() + kTransferWatch;
    peer_transfer_ = true;
  }
  return n;
}

size_t OfiEndpoint::read_cq(Completion *out, size_t max) {
  fi_cq_data_entry entries[8];
  fi_addr_t sources[8];
  const size_t n = std::min<size_t>(max, 8);
  ssize_t rc = sources_ ? fi_cq_readfrom(cq_, entries, n, sources) : fi_cq_read(cq_, entries, n);
  if (rc > 0) return translate(entries, sources_ ? sources : nullptr, static_cast<size_t>(rc), out);
  if (rc == -FI_EAVAIL)
    on_cq_error();
  else if (rc != -FI_EAGAIN)
    check(static_cast<int>(rc), "fi_cq_read");
  else if ((awaiting_peer_ || peer_transfer_) && peer_bell_)
    peer_bell_->nudge();
  return 0;
}

bool OfiEndpoint::peer_beside() const {
  if (!peer_bell_ || !peer_bell_->peer_awake()) return false;
  const int cpu = peer_bell_->cpu();
  return cpu >= 0 && cpu == sched_getcpu();
}

// Completions of the transport's own operations (control messages, RDM's data writes) are
// consumed here, and with `sources` (FI_SOURCE) what came from another than the peer is
// dropped; the rest are handed on.
size_t OfiEndpoint::translate(const fi_cq_data_entry *entries, const fi_addr_t *sources, size_t n,
                              Completion *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const fi_cq_data_entry &e = entries[i];
    const fi_addr_t source = sources != nullptr ? sources[i] : FI_ADDR_UNSPEC;
    if (is_control(e.op_context)) {
      if (e.flags & FI_RECV)
        on_control(static_cast<uint8_t *>(e.op_context), e.len, source);
      else if (control_sends_pending_ > 0)
        --control_sends_pending_;
      continue;
    }
    if (e.op_context == &fence_context_ && !(e.flags & FI_REMOTE_CQ_DATA)) {
      if (fence_pending_ > 0) --fence_pending_;
      continue;
    }
    if (e.op_context == &sink_context_ && !(e.flags & FI_REMOTE_CQ_DATA)) {
      sink_done_ = true;
      continue;
    }
    const bool inbound = (e.flags & (FI_RECV | FI_REMOTE_CQ_DATA)) != 0;
    if (inbound && sources != nullptr && !from_peer(source)) {
      drop_stale(e, source);
      continue;
    }
    if (inbound) awaiting_peer_ = peer_transfer_ = false;  // the peer moved
    if (e.flags & FI_RECV) forget_recv(reinterpret_cast<uint64_t>(e.op_context));
    if (e.flags & FI_REMOTE_CQ_DATA)
      ++imms_received_;
    else if (!inbound && tx_pending_ > 0)
      --tx_pending_;
    Completion &c = out[k++];
    c.context = reinterpret_cast<uint64_t>(e.op_context);
    c.bytes = e.len;
    c.imm = 0;
    if (e.flags & FI_REMOTE_CQ_DATA) {
      c.kind = CompletionKind::RemoteImm;
      c.context = 0;
      c.imm = static_cast<uint32_t>(e.data);
    } else if (e.flags & FI_RECV) {
      c.kind = CompletionKind::Recv;
    } else if (e.flags & FI_SEND) {
      c.kind = CompletionKind::Send;
    } else {
      c.kind = CompletionKind::Writes;
    }
  }
  return k;
}

}  // namespace naa::transport::ofi
