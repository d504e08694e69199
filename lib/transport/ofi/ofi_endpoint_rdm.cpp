// SPDX-License-Identifier: BSD-3-Clause
// An OfiEndpoint's connection over a FI_EP_RDM endpoint, which has no connection manager: the
// control messages (ofi_control.hpp) that make, refuse and end it, the address vector entry of
// its one peer, and the liveness of a same-host peer's process.
#include "transport/ofi/ofi_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include "process_id.hpp"
#include "diag/log.hpp"
#include "wait_plan.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/ofi/shm/leftovers.hpp"
#include "transport/ofi/shm/request.hpp"

namespace naa::transport::ofi {

void OfiEndpoint::attach(const std::string &name, uint32_t pid) {
  peer_addr_ = insert_address(name);
  forget_previous_peer();
  peer_name_ = name;
  peer_ = address_text(info_->addr_format, name);
  watch_process(pid);
  if (same_host_) peer_bell_ = rope_for(name);
}

void OfiEndpoint::accept_by_message(const std::string &private_data, const Deadline *deadline) {
  send_control(peer_addr_, control::Type::Accept, private_data, deadline);
  connected_ = true;
}

// Bounded as a whole by kControlFlush: a peer that never takes the reject (stopped, or named
// a region nobody maps) costs the caller that long, not kPostRetryLimit.
void OfiEndpoint::reject_by_message(const char *reason) {
  const Deadline deadline = Deadline::after(kControlFlush);
  try {
    send_control(peer_addr_, control::Type::Reject,
                 reason != nullptr ? std::string(reason, strlen(reason) + 1) : std::string(),
                 &deadline);
    flush_control(deadline);
  } catch (const Error &e) {
    NAA_LOG_INFO("rejecting %s: %s", peer_.c_str(), e.what());
  }
}

std::optional<control::Message> OfiEndpoint::next_control(control::Type type, Deadline deadline) {
  for (;;) {
    if (auto m = take_control(type)) return m;
    if (deadline.expired()) return std::nullopt;
    Completion c[8];
    size_t n = sleep_on_cq(c, 8, deadline);
    stash_.insert(stash_.end(), c, c + n);
  }
}

// The listener's answer is due within microseconds of the ring: polled for while due (the wait
// plan, from how long the process's last answers took, TransportOptions::setup_spin at
// least), then napped for. Napping at once, a warm naa_create over shm would wake from a
// nap begun just before the answer came, which sleeps several times what it asked for.
std::optional<control::Message> OfiEndpoint::await_accept(Deadline deadline) {
  static naa::SharedExpected accept_took;
  const auto start = Deadline::Clock::now();
  const Deadline poll_until = Deadline::after(
      setup_sleeps_ ? naa::microseconds(0) : naa::wait_plan(accept_took.value(), setup_spin_).poll);
  std::optional<control::Message> answer;
  while (!(answer = poll_control(control::Type::Accept)) && !poll_until.expired() &&
         !deadline.expired())
    sched_yield();  // the listener may need this core
  if (!answer) answer = next_control(control::Type::Accept, deadline);
  if (answer) accept_took.observe(Deadline::Clock::now() - start);
  return answer;
}

std::optional<control::Message> OfiEndpoint::poll_control(control::Type type) {
  if (auto m = take_control(type)) return m;
  Completion c[8];
  size_t n = read_cq(c, 8);
  stash_.insert(stash_.end(), c, c + n);
  return take_control(type);
}

std::optional<control::Message> OfiEndpoint::take_control(control::Type type) {
  while (!control_in_.empty()) {
    control::Message m = std::move(control_in_.front());
    control_in_.pop_front();
    if (m.type == type || (type == control::Type::Accept && m.type == control::Type::Reject))
      return m;
    NAA_LOG_WARN("%s: unexpected %s ignored", peer_.c_str(), control::type_name(m.type));
  }
  return std::nullopt;
}

std::string OfiEndpoint::own_name() const {
  char buf[control::kMaxName];
  size_t len = sizeof buf;
  check(fi_getname(&ep_->fid, buf, &len), "fi_getname");
  return std::string(buf, std::min(len, sizeof buf));
}

// Receives for the control messages, posted for the endpoint's whole life; sends use the
// second half of the same registered buffer.
void OfiEndpoint::open_control() {
  control_buf_.resize(2 * kControlSlots * control::kMaxMessage);
  control_mr_ =
      context_->register_raw(control_buf_.data(), control_buf_.size(), FI_SEND | FI_RECV, ep_);
  for (size_t i = 0; i < kControlSlots; ++i) post_control_recv(control_slot(i));
}

void OfiEndpoint::post_control_recv(uint8_t *slot) {
  retry_post("fi_trecv", [&] {
    return fi_trecv(ep_, slot, control::kMaxMessage, fi_mr_desc(control_mr_), FI_ADDR_UNSPEC,
                    control::kControlTag, 0, slot);
  });
}

void OfiEndpoint::send_control(fi_addr_t to, control::Type type, const std::string &data,
                               const Deadline *deadline) {
  control::Message m;
  m.type = type;
  m.pid = static_cast<uint32_t>(naa::this_process());
  if (type == control::Type::Request || type == control::Type::Accept) m.name = own_name();
  m.data = data;
  uint8_t *slot = control_slot(kControlSlots + control_send_next_++ % kControlSlots);
  size_t len = control::encode(m, slot, control::kMaxMessage);
  if (len == 0) throw Error(NAA_ERR_INTERNAL, "control message too long");
  // shm maps the peer's region at the first send to it, which takes a descriptor: see
  // descriptor_gate.hpp. FI_COMPLETION: the endpoint's sends complete selectively, and
  // flush_control waits for this one's completion (without it, every goodbye would wait out
  // kControlFlush, and naa_finalize over shm with it).
  iovec iov{slot, len};
  void *desc = fi_mr_desc(control_mr_);
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = to;
  msg.tag = control::kControlTag;
  msg.context = slot;
  bool starved = false;
  DescriptorClaim claim;
  try {
    retry_post(
        "fi_tsend",
        [&]() -> ssize_t {
          std::unique_lock<std::mutex> gate(descriptor_gate(), std::defer_lock);
          if (same_host_) {
            gate.lock();
            starved = !descriptors_spare(kSpareDescriptors);
            claim.hold(starved);
            if (starved) {
              context_->drop_idle_bells();
              return -FI_EAGAIN;
            }
          }
          const ssize_t rc = fi_tsendmsg(ep_, &msg, FI_COMPLETION);
          // shm's first send to a peer only hands the peer our name and fails: the listener must
          // take the name before our request can go, which it does when it looks. Our name may
          // wait in its queue from here on: stamped, the region stays until it was read
          // (shm::stamp_region).
          if (rc == -FI_EAGAIN && type == control::Type::Request) {
            if (same_host_) shm::stamp_region(m.name);
            ring_listener();
          }
          return rc;
        },
        deadline);
  } catch (const Error &) {
    if (!starved) throw;
    throw Error(NAA_ERR_NO_RESOURCES,
                "cannot send to " + peer_ +
                    ": this process stayed short of file descriptors (RLIMIT_NOFILE)");
  }
  ++control_sends_pending_;
  if (to == peer_addr_) wake_peer(len);
  nap_.reset();  // an answer is due: the waits for it start short
}

// A same-host listener that sleeps is rung: it looks at its queue then.
void OfiEndpoint::ring_listener() {
  if (same_host_ && info_->dest_addr != nullptr)
    context_->ring_listener(
        std::string(static_cast<const char *>(info_->dest_addr), info_->dest_addrlen));
}

void OfiEndpoint::flush_control(Deadline deadline) {
  while (control_sends_pending_ > 0 && !deadline.expired()) {
    Completion c[8];
    size_t n = read_cq(c, 8);
    stash_.insert(stash_.end(), c, c + n);
  }
}

// Best effort: the peer learns at once that we are gone; if this fails, its liveness check or
// deadline tells it later.
void OfiEndpoint::say_goodbye() noexcept {
  try {
    // One bound for posting and completing: a dead peer's full queue (rxm) must not hold a
    // server's shutdown for kPostRetryLimit per connection.
    const Deadline deadline = Deadline::after(kControlFlush);
    send_control(peer_addr_, control::Type::Goodbye, {}, &deadline);
    flush_control(deadline);
  } catch (const std::exception &e) {
    NAA_LOG_DEBUG("goodbye to %s not sent: %s", peer_.c_str(), e.what());
  }
}

void OfiEndpoint::on_control(uint8_t *slot, size_t len, fi_addr_t source) {
  control::Message m;
  std::string why;
  if (!control::decode(slot, std::min(len, control::kMaxMessage), &m, &why)) {
    NAA_LOG_WARN("%s: malformed control message ignored: %s", peer_.c_str(), why.c_str());
  } else if (m.type == control::Type::Goodbye) {
    // A listener has no peer; a goodbye there is a stray one. On a reused endpoint, one from
    // the endpoint's old peer (or anyone else) must not end the new connection.
    if (connected_ && (!sources_ || source == peer_addr_))
      peer_left_ = peer_goodbye_ = true;
    else if (connected_)
      NAA_LOG_WARN("%s: goodbye from another endpoint than the peer dropped", peer_.c_str());
  } else if (control_in_.size() < 64) {  // a flood of requests must not grow it without end
    control_in_.push_back(std::move(m));
  }
  post_control_recv(slot);
}

// Each address once: shm counts its insertions against 256 peers.
fi_addr_t OfiEndpoint::insert_address(const std::string &name) {
  auto known = av_names_.find(name);
  if (known != av_names_.end()) {
    if (same_host_) count_address(true);
    return known->second;
  }
  fi_addr_t addr = FI_ADDR_UNSPEC;
  // FI_ADDR_STR names are NUL-terminated strings; c_str() adds the NUL to either kind.
  int rc = fi_av_insert(av_, name.c_str(), 1, &addr, 0, nullptr);
  if (rc != 1)
    throw Error(NAA_ERR_CONNECTION, "cannot address " + address_text(info_->addr_format, name) +
                                        ": " + fi_error_text(rc < 0 ? rc : -FI_EADDRNOTAVAIL));
  av_names_[name] = addr;
  ++av_inserted_;
  if (same_host_) count_address(false);
  return addr;
}

// shm: a client's kept endpoint keeps its entry of the listener it asked (park), so that a warm
// naa_create does not map the listener's 16 MiB region again (~30 us), while the object behind
// the name is the one it mapped. It is looked at before the entry is made, so an entry is
// never taken for an object made after the look: a server started anew at the same port has a
// new object under the same name, whose region the old entry does not reach (a request sent
// there would be read by nobody); the old entry goes and the new region is mapped.
fi_addr_t OfiEndpoint::address_listener(const std::string &server) {
  std::optional<shm::Object> now = shm::listener_object(server);
  auto kept = av_names_.find(server);
  if (kept != av_names_.end()) {
    const bool same = server == listener_ && now && listener_object_ == now;
    if (!same) forget_address(kept->second);
    count_listener(same);
  }
  listener_ = server;
  listener_object_ = now;
  return insert_address(server);
}

void OfiEndpoint::forget_address(fi_addr_t addr) {
  for (auto i = av_names_.begin(); i != av_names_.end(); ++i)
    if (i->second == addr) {
      av_names_.erase(i);
      int rc = fi_av_remove(av_, &addr, 1, 0);
      if (rc != 0) throw Error(NAA_ERR_TRANSPORT, "fi_av_remove: " + fi_error_text(rc));
      return;
    }
}

// A same-host peer that dies without a goodbye (killed) is noticed through its process: a
// pidfd becomes readable when it exits, which needs no cooperation from the peer and no
// traffic. Peers elsewhere are bounded by the deadlines of whatever waits for them. A kept
// client endpoint's next peer is mostly in the process of its last one (the same naa-server):
// that peer's pidfd serves again while it is not readable, i.e. while that process lives, so
// the pid is still its own (a pidfd_open less in every warm naa_create).
void OfiEndpoint::watch_process(uint32_t pid) {
  if (!same_host_ || pid == 0) return;
  peer_pid_ = static_cast<pid_t>(pid);
  const int kept = std::exchange(kept_pidfd_, -1);
  if (kept >= 0) {
    pollfd p{kept, POLLIN, 0};
    if (kept_pidfd_pid_ == peer_pid_ && ::poll(&p, 1, 0) == 0) {
      peer_pidfd_ = kept;
      count_pidfd(true);
      return;
    }
    ::close(kept);
  }
#ifdef SYS_pidfd_open
  peer_pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, peer_pid_, 0));
  if (peer_pidfd_ < 0 && errno == ESRCH) peer_left_ = true;
  count_pidfd(false);
#endif
}

// shm unlinks an endpoint's region when the endpoint closes; a killed process leaves it in
// /dev/shm. The peer that saw it die removes it: the object is named after the endpoint's
// address without its "fi_shm://" prefix (fi_shm(7)), and its owner is gone for good. Only a
// name that carries the dead process's pid and is this user's: the name came from the peer,
// which could have named the listener's region or another client's.
void OfiEndpoint::remove_dead_peer_region() {
  if (!shm::region_of(peer_name_, peer_pid_)) return;
  const std::string object = shm::region_object(peer_name_);
  if (shm_unlink(object.c_str()) == 0)
    NAA_LOG_INFO("removed the shm region %s of peer process %d, which is gone", object.c_str() + 1,
                 static_cast<int>(peer_pid_));
  shm_unlink(shm::bell_object(peer_name_).c_str());  // and its bell, where it had one
}

bool OfiEndpoint::peer_process_gone() const {
  if (peer_pid_ == 0) return false;
  if (peer_pidfd_ >= 0) {
    pollfd p{peer_pidfd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  return kill(peer_pid_, 0) != 0 && errno == ESRCH;
}

void OfiEndpoint::connect_by_message(Deadline deadline, const std::string &private_data) {
  const std::string what = "connection to " + peer_;
  std::string server(static_cast<const char *>(info_->dest_addr), info_->dest_addrlen);
  fi_addr_t listener = address_listener(server);
  try {
    send_control(listener, control::Type::Request, private_data, &deadline);
  } catch (const Error &e) {
    request_unsent_ = true;
    // Over PROVIDER;ofi_rxm nothing listening shows as a send queue that never drains.
    throw Error(NAA_ERR_CONNECTION,
                what + ": nothing takes connection requests there (" + e.what() + ")");
  }
  ring_listener();  // the request is in the listener's queue
  std::optional<control::Message> answer = await_accept(deadline);
  if (!answer)
    throw Error(NAA_ERR_TIMEOUT, what + " timed out: no answer from " +
                                     address_text(info_->addr_format, server) +
                                     " (is an naa-server listening there with this transport?)");
  if (answer->type == control::Type::Reject) {
    std::string reason = private_data_text(answer->data.data(), answer->data.size());
    throw Refused(NAA_ERR_CONNECTION,
                  what + ": refused by the NAA" + (reason.empty() ? "" : " (\"" + reason + "\")"),
                  reason == kShmGroupOnly);
  }
  std::string name = answer->name;
  // A server listening on the wildcard address names its endpoint 0.0.0.0:PORT: the client
  // reaches it where it reached the listener.
  if (info_->addr_format == FI_SOCKADDR_IN && name.size() >= sizeof(sockaddr_in) &&
      server.size() >= sizeof(sockaddr_in)) {
    auto *in = reinterpret_cast<sockaddr_in *>(name.data());
    if (in->sin_addr.s_addr == htonl(INADDR_ANY))
      in->sin_addr = reinterpret_cast<const sockaddr_in *>(server.data())->sin_addr;
  }
  peer_addr_ = insert_address(name);
  forget_previous_peer();
  peer_name_ = name;
  peer_data_ = answer->data;
  watch_process(answer->pid);
  if (same_host_) peer_bell_ = rope_for(name);
  connected_ = true;
}

}  // namespace naa::transport::ofi
