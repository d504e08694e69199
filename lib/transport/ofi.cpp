// SPDX-License-Identifier: BSD-3-Clause
// The libfabric transport: connected FI_EP_MSG endpoints (provider tcp here, verbs/others where
// present) and reliable-datagram FI_EP_RDM endpoints (shm, tcp;ofi_rxm, verbs;ofi_rxm, lnx),
// fi_writemsg chains ending in a write with remote CQ data, MRSP over fi_sendmsg/fi_recv.
//
// An RDM endpoint has no connection manager, so the connection is made of messages
// (ofi_control.hpp): the server's listener is an RDM endpoint at a well-known address; for each
// connection request it opens a fresh RDM endpoint and answers from it, so that every Endpoint
// talks to exactly one peer, as a MSG connection does, and the Session and naa-server code is
// the same for both. The accept names the fresh endpoint: shm 1.17 reports a message's source
// only for addresses already in the address vector (no FI_SOURCE_ERR), so the client could not
// learn it otherwise. A peer leaves with a goodbye; one that dies without it is noticed by its
// process (shm) or, elsewhere (PROVIDER;ofi_rxm), by the deadline of whatever waits for it.
#include "transport/ofi.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <deque>
#include <optional>
#include <thread>

#include "error.hpp"
#include "log.hpp"
#include "params.hpp"
#include "transport/event_check.hpp"
#include "transport/host.hpp"
#include "transport/ofi_control.hpp"
#include "transport/split_writes.hpp"

namespace naa::transport {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 9);
// A post that keeps returning -FI_EAGAIN (queue full and no progress) is a dead fabric.
constexpr auto kPostRetryLimit = std::chrono::seconds(10);
// The longest a blocking read sleeps before re-checking the event queue for a disconnect.
constexpr int kWaitSliceMs = 100;
// Room for a CM event's private data (the auth key and naa-server's identity are far smaller).
constexpr size_t kMaxPrivateData = 256;
// Segments larger than this are split into writes of this size. Over ofi+tcp on loopback
// no split size beat unsplit writes (doc/performance.md; NAA_OFI_WRITE_CHUNK to measure).
size_t write_chunk_from_environment() { return params::current().write_chunk(); }

std::string fi_error_text(int rc) { return fi_strerror(rc < 0 ? -rc : rc); }

[[noreturn]] void fail(naa_error_t code, const std::string &what, int rc) {
  throw Error(code, what + ": " + fi_error_text(rc));
}

void check(int rc, const char *what) {
  if (rc < 0) fail(NAA_ERR_TRANSPORT, what, rc);
}

struct InfoDeleter {
  void operator()(fi_info *info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

void close_fid(fid_t f) {
  if (f != nullptr) fi_close(f);
}

// Owns a fabric object: closed on destruction, also when a constructor throws half way.
struct FidCloser {
  template <class T>
  void operator()(T *p) const {
    fi_close(&p->fid);
  }
};
template <class T>
using FidPtr = std::unique_ptr<T, FidCloser>;

std::string sockaddr_name(const void *addr) {
  if (addr == nullptr) return "?";
  char ip[INET6_ADDRSTRLEN] = "?";
  auto *sa = static_cast<const sockaddr *>(addr);
  if (sa->sa_family == AF_INET) {
    auto *in = static_cast<const sockaddr_in *>(addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto *in6 = static_cast<const sockaddr_in6 *>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

// What both sides ask of a provider. The mr_mode bits are the ones we can honour (verbs needs
// them); providers drop the bits they do not need, and we adapt to what remains.
// RDM endpoints also need tagged messages: the connection's control messages travel apart
// from MRSP's (ofi_control.hpp).
InfoPtr make_hints(const std::string &provider, bool auto_progress = false,
                   fi_ep_type type = FI_EP_MSG) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw Error(NAA_ERR_NO_RESOURCES, "fi_allocinfo failed");
  hints->ep_attr->type = type;
  hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE | (type == FI_EP_RDM ? FI_TAGGED : 0);
  hints->mode = FI_RX_CQ_DATA;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;  // one domain per endpoint, used under a lock
  if (auto_progress) hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  return hints;
}

class OfiFabric {
 public:
  explicit OfiFabric(fi_info *info) {
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
  }
  ~OfiFabric() { close_fid(&fabric->fid); }
  OfiFabric(const OfiFabric &) = delete;
  OfiFabric &operator=(const OfiFabric &) = delete;
  fid_fabric *fabric = nullptr;
};

class OfiMemoryRegion : public MemoryRegion {
 public:
  ~OfiMemoryRegion() override {
    if (mr != nullptr) fi_close(&mr->fid);
  }
  fid_mr *mr = nullptr;
  void *desc = nullptr;
};

class OfiWriteChain : public WriteChain {
 public:
  // Everything fi_writemsg needs, built once; post_writes only fills in the immediate.
  struct Op {
    iovec iov;
    void *desc;
    fi_rma_iov rma;
    fi_msg_rma msg;
  };
  std::vector<Op> ops;
};

// The text of an endpoint name, for log lines: FI_ADDR_STR names are text already.
std::string address_text(uint32_t format, const std::string &name) {
  if (format == FI_ADDR_STR) return std::string(name.c_str());
  if (name.size() >= sizeof(sockaddr)) return sockaddr_name(name.data());
  return "?";
}

class OfiEndpoint : public Endpoint {
 public:
  // A MSG endpoint on the server side comes from `pep` (for fi_reject). An RDM endpoint is a
  // listener's until attach() or connect() gives it its one peer.
  OfiEndpoint(std::shared_ptr<OfiFabric> fabric, InfoPtr info, fid_pep *pep,
              std::string request_data = {})
      : fabric_(std::move(fabric)), info_(std::move(info)), pep_(pep),
        peer_data_(std::move(request_data)) {
    rdm_ = info_->ep_attr->type == FI_EP_RDM;
    // Only shm guarantees a peer on this host, whose process can be watched.
    same_host_ = rdm_ && std::strcmp(info_->fabric_attr->prov_name, "shm") == 0;
    cq_wakes_ = !same_host_;
    peer_ = rdm_ ? "?" : sockaddr_name(info_->dest_addr);
    imm_consumes_recv_ = (info_->mode & FI_RX_CQ_DATA) || (info_->rx_attr->mode & FI_RX_CQ_DATA);
    const uint64_t mr_mode = info_->domain_attr->mr_mode;
    virt_addr_ = (mr_mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC)) != 0;
    prov_key_ = (mr_mode & (FI_MR_PROV_KEY | FI_MR_BASIC)) != 0;
    max_msg_ = std::min<size_t>(info_->ep_attr->max_msg_size, write_chunk_from_environment());
    // A request a server may still refuse gets no domain, queues or endpoint until it is
    // accepted or memory is registered for it: a refusal costs nothing (issue 18.6).
    if (pep_ == nullptr) open_once();
  }

  ~OfiEndpoint() override {
    if (connected_ && !rdm_) fi_shutdown(ep_, 0);
    if (connected_ && rdm_ && !peer_left_) say_goodbye();
    if (peer_pidfd_ >= 0) ::close(peer_pidfd_);
    close();
  }

  void set_peer_label(std::string label) { peer_ = std::move(label); }

  // RDM, server side: the peer is the client whose request named `name`.
  void attach(const std::string &name, uint32_t pid) {
    peer_addr_ = insert_address(name);
    peer_name_ = name;
    peer_ = address_text(info_->addr_format, name);
    watch_process(pid);
  }

  void connect(Deadline deadline, const std::string &private_data) {
    if (rdm_) return connect_by_message(deadline, private_data);
    check(fi_connect(ep_, info_->dest_addr, private_data.empty() ? nullptr : private_data.data(),
                     private_data.size()),
          "fi_connect");
    wait_connected(deadline, "connection to " + peer_);
  }

  void accept(Deadline deadline, const std::string &private_data) override {
    if (rdm_) {
      send_control(peer_addr_, control::Type::Accept, private_data);
      connected_ = true;
      return;
    }
    open_once();
    check(fi_accept(ep_, private_data.empty() ? nullptr : private_data.data(), private_data.size()),
          "fi_accept");
    wait_connected(deadline, "accepting " + peer_);
  }

  void reject(const char *reason) override {
    if (rdm_) {
      try {
        send_control(peer_addr_, control::Type::Reject,
                     reason != nullptr ? std::string(reason, strlen(reason) + 1) : std::string());
        flush_control(Deadline::after(kControlFlush));
      } catch (const Error &e) {
        NAA_LOG_INFO("rejecting %s: %s", peer_.c_str(), e.what());
      }
      return;
    }
    if (pep_ != nullptr)
      fi_reject(pep_, info_->handle, reason, reason != nullptr ? strlen(reason) + 1 : 0);
  }

  std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                bool remote_write) override {
    open_once();
    auto region = std::make_unique<OfiMemoryRegion>();
    uint64_t access = FI_SEND | FI_RECV | FI_WRITE | (remote_write ? FI_REMOTE_WRITE : 0);
    region->mr = register_raw(addr, length, access);
    uint64_t granted = fi_mr_key(region->mr);
    if (granted > UINT32_MAX)
      throw Error(NAA_ERR_UNSUPPORTED, "provider " + std::string(info_->fabric_attr->prov_name) +
                                           " hands out memory keys wider than MRSP's 32 bits");
    region->addr = addr;
    region->length = length;
    region->rkey = static_cast<uint32_t>(granted);
    region->remote_addr = virt_addr_ ? reinterpret_cast<uint64_t>(addr) : 0;
    region->desc = fi_mr_desc(region->mr);
    return region;
  }

  void post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override {
    void *desc = static_cast<const OfiMemoryRegion &>(mr).desc;
    retry_post("fi_recv", [&] {
      return fi_recv(ep_, buf, length, desc, FI_ADDR_UNSPEC, reinterpret_cast<void *>(context));
    });
  }

  // libfabric has no solicited-event bit; the peer wakes on any completion.
  void post_send(const void *buf, size_t length, const MemoryRegion &mr,
                 uint64_t context) override {
    iovec iov{const_cast<void *>(buf), length};
    void *desc = static_cast<const OfiMemoryRegion &>(mr).desc;
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = peer_addr_;
    msg.context = reinterpret_cast<void *>(context);
    retry_post("fi_sendmsg", [&] { return fi_sendmsg(ep_, &msg, FI_COMPLETION); });
  }

  bool immediate_consumes_recv() const override { return imm_consumes_recv_; }

  std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                             uint64_t context) override {
    auto chain = std::make_unique<OfiWriteChain>();
    split_writes(segments, max_msg_, [&](const WriteSegment &s, size_t offset, size_t length) {
      OfiWriteChain::Op op{};
      op.iov = {static_cast<char *>(s.local->addr) + s.offset + offset, length};
      op.desc = static_cast<const OfiMemoryRegion *>(s.local)->desc;
      op.rma = {s.remote_addr + offset, length, s.rkey};
      chain->ops.push_back(op);
    });
    // Pointers into the vector are taken only now that it no longer grows.
    for (auto &op : chain->ops) {
      op.msg.msg_iov = &op.iov;
      op.msg.desc = &op.desc;
      op.msg.iov_count = 1;
      op.msg.addr = peer_addr_;
      op.msg.rma_iov = &op.rma;
      op.msg.rma_iov_count = 1;
      // On RDM the data writes complete on their own (see post_writes).
      op.msg.context = rdm_ ? &fence_context_ : reinterpret_cast<void *>(context);
    }
    chain->ops.back().msg.context = reinterpret_cast<void *>(context);
    return chain;
  }

  // MSG: only the last write asks for a completion: the provider completes a MSG endpoint's
  // operations in order (comp_order strict), so it stands for the whole chain. RDM providers
  // promise neither write-after-write order (shm: msg_order SAS only) nor completion order, so
  // the final write, whose immediate tells the peer the data is there, waits until the data
  // writes have completed. A chain of one write (one region) waits for nothing.
  void post_writes(WriteChain &chain, uint32_t imm,
                   Deadline::Clock::time_point final_not_before) override {
    auto &ops = static_cast<OfiWriteChain &>(chain).ops;
    const size_t last = ops.size() - 1;
    const uint64_t flags = rdm_ ? FI_COMPLETION : 0;
    for (size_t i = 0; i < last; ++i) {
      retry_post("fi_writemsg", [&] { return fi_writemsg(ep_, &ops[i].msg, flags); });
      if (rdm_) ++fence_pending_;
    }
    if (rdm_) wait_fence();
    if (final_not_before != Deadline::Clock::time_point{}) pace_until(final_not_before);
    ops[last].msg.data = imm;
    retry_post("fi_writemsg", [&] {
      return fi_writemsg(ep_, &ops[last].msg, FI_REMOTE_CQ_DATA | FI_COMPLETION);
    });
  }

  size_t poll(Completion *out, size_t max) override {
    size_t n = 0;
    while (n < max && !stash_.empty()) {
      out[n++] = stash_.front();
      stash_.pop_front();
    }
    if (n < max) n += read_cq(out + n, max - n);
    if (n == 0 && (peer_left_ || event_checks_.due())) check_events();
    if (n > 0) nap_ = kNapMin;
    return n;
  }

  size_t wait(Completion *out, size_t max, Deadline deadline) override {
    for (;;) {
      if (size_t n = poll(out, max)) return n;
      if (deadline.expired()) return 0;
      if (size_t n = sleep_on_cq(out, std::min<size_t>(max, 8), deadline)) return n;
      check_events();  // a slice slept through: the peer may be gone
    }
  }

  int wait_fd() const override { return wait_fd_; }

  bool arm_wait() override {
    check_events();
    if (wait_fd_ < 0) return true;  // nothing to arm: the caller naps instead (shm)
    fid_t cq = &cq_->fid;
    return fi_trywait(fabric_->fabric, &cq, 1) == FI_SUCCESS;
  }

  const std::string &peer() const override { return peer_; }
  const std::string &peer_data() const override { return peer_data_; }

  // RDM: the next control message of type `type` (the others are dropped with a log line), or
  // nothing when the deadline passes.
  std::optional<control::Message> next_control(control::Type type, Deadline deadline) {
    for (;;) {
      while (!control_in_.empty()) {
        control::Message m = std::move(control_in_.front());
        control_in_.pop_front();
        if (m.type == type || (type == control::Type::Accept && m.type == control::Type::Reject))
          return m;
        NAA_LOG_WARN("%s: unexpected %s ignored", peer_.c_str(), control::type_name(m.type));
      }
      if (deadline.expired()) return std::nullopt;
      Completion c[8];
      size_t n = sleep_on_cq(c, 8, deadline);
      stash_.insert(stash_.end(), c, c + n);
    }
  }

  // The longest nap of sleep_on_cq (where the CQ cannot wake us): kNapMax unless set.
  void set_nap_limit(std::chrono::microseconds limit) { nap_limit_ = limit; }

  // This endpoint's own address, as a peer inserts it into its address vector.
  std::string own_name() const {
    char buf[control::kMaxName];
    size_t len = sizeof buf;
    check(fi_getname(&ep_->fid, buf, &len), "fi_getname");
    return std::string(buf, std::min(len, sizeof buf));
  }

 private:
  static constexpr size_t kControlSlots = 4;  // receives posted for control messages
  static constexpr std::chrono::microseconds kNapMin{20}, kNapMax{1000};
  // How long a reject or goodbye may take to leave before the endpoint closes.
  static constexpr auto kControlFlush = std::chrono::milliseconds(200);

  fid_mr *register_raw(void *addr, size_t length, uint64_t access) {
    fid_mr *mr = nullptr;
    uint64_t key = prov_key_ ? 0 : next_key_++;
    int rc = fi_mr_reg(domain_, addr, length, access, 0, key, 0, &mr, nullptr);
    if (rc < 0)
      fail(NAA_ERR_NO_RESOURCES, "registering " + std::to_string(length) + " bytes failed", rc);
    if (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) {
      int bind = fi_mr_bind(mr, &ep_->fid, 0);
      if (bind == 0) bind = fi_mr_enable(mr);
      if (bind < 0) {
        close_fid(&mr->fid);
        fail(NAA_ERR_TRANSPORT, "binding a memory region to its endpoint", bind);
      }
    }
    return mr;
  }

  void open_once() {
    if (ep_ != nullptr) return;
    try {
      open();
    } catch (...) {
      close();
      throw;
    }
  }

  void open() {
    check(fi_domain(fabric_->fabric, info_.get(), &domain_, nullptr), "fi_domain");
    if (!rdm_) {
      fi_eq_attr eq_attr{};
      eq_attr.wait_obj = FI_WAIT_UNSPEC;
      check(fi_eq_open(fabric_->fabric, &eq_attr, &eq_, nullptr), "fi_eq_open");
    }
    // An fd wait object where the provider has one: the progress thread sleeps on many
    // endpoints' descriptors at once (FI_GETWAIT names it only for FI_WAIT_FD).
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.wait_obj = FI_WAIT_FD;
    if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) == 0) {
      if (!cq_wakes_ || fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
    } else {
      cq_attr.wait_obj = FI_WAIT_UNSPEC;
      check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    }
    check(fi_endpoint(domain_, info_.get(), &ep_, nullptr), "fi_endpoint");
    if (rdm_) {
      fi_av_attr av_attr{};
      av_attr.type = info_->domain_attr->av_type;
      check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
      check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
    } else {
      check(fi_ep_bind(ep_, &eq_->fid, 0), "fi_ep_bind(eq)");
    }
    // Selective completion for sends only (the chain signals just its last write); on the
    // receive side it would silence every receive posted without FI_COMPLETION.
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION), "fi_ep_bind(tx cq)");
    check(fi_ep_bind(ep_, &cq_->fid, FI_RECV), "fi_ep_bind(rx cq)");
    int rc = fi_enable(ep_);
    // shm names an endpoint PID:UID:INDEX and refuses (EBUSY) a name whose leftover region, of
    // a process that was killed, records a live pid: once pids wrap around that is this very
    // process, whose first endpoint then fails. libfabric 1.17 removes the leftover as it
    // refuses, so the second try creates the region afresh.
    if (rc == -FI_EBUSY && same_host_) {
      NAA_LOG_INFO("shm region of endpoint %s was a dead process's leftover; created afresh",
                   own_name().c_str());
      rc = fi_enable(ep_);
    }
    check(rc, "fi_enable");
    if (rdm_) open_control();
  }

  // Receives for the control messages, posted for the endpoint's whole life; sends use the
  // second half of the same registered buffer.
  void open_control() {
    control_buf_.resize(2 * kControlSlots * control::kMaxMessage);
    control_mr_ = register_raw(control_buf_.data(), control_buf_.size(), FI_SEND | FI_RECV);
    for (size_t i = 0; i < kControlSlots; ++i) post_control_recv(control_slot(i));
  }

  uint8_t *control_slot(size_t i) { return control_buf_.data() + i * control::kMaxMessage; }

  bool is_control(const void *context) const {
    auto *p = static_cast<const uint8_t *>(context);
    return !control_buf_.empty() && p >= control_buf_.data() &&
           p < control_buf_.data() + control_buf_.size();
  }

  void post_control_recv(uint8_t *slot) {
    retry_post("fi_trecv", [&] {
      return fi_trecv(ep_, slot, control::kMaxMessage, fi_mr_desc(control_mr_), FI_ADDR_UNSPEC,
                      control::kControlTag, 0, slot);
    });
  }

  void send_control(fi_addr_t to, control::Type type, const std::string &data,
                    const Deadline *deadline = nullptr) {
    control::Message m;
    m.type = type;
    m.pid = static_cast<uint32_t>(getpid());
    if (type == control::Type::Request || type == control::Type::Accept) m.name = own_name();
    m.data = data;
    uint8_t *slot = control_slot(kControlSlots + control_send_next_++ % kControlSlots);
    size_t len = control::encode(m, slot, control::kMaxMessage);
    if (len == 0) throw Error(NAA_ERR_INTERNAL, "control message too long");
    retry_post("fi_tsend", [&] {
      return fi_tsend(ep_, slot, len, fi_mr_desc(control_mr_), to, control::kControlTag, slot);
    }, deadline);
    ++control_sends_pending_;
  }

  void flush_control(Deadline deadline) {
    while (control_sends_pending_ > 0 && !deadline.expired()) {
      Completion c[8];
      size_t n = read_cq(c, 8);
      stash_.insert(stash_.end(), c, c + n);
    }
  }

  // Best effort: the peer learns at once that we are gone; if this fails, its liveness check or
  // deadline tells it later.
  void say_goodbye() noexcept {
    try {
      send_control(peer_addr_, control::Type::Goodbye, {});
      flush_control(Deadline::after(kControlFlush));
    } catch (const std::exception &e) {
      NAA_LOG_DEBUG("goodbye to %s not sent: %s", peer_.c_str(), e.what());
    }
  }

  void on_control(uint8_t *slot, size_t len) {
    control::Message m;
    std::string why;
    if (!control::decode(slot, std::min(len, control::kMaxMessage), &m, &why)) {
      NAA_LOG_WARN("%s: malformed control message ignored: %s", peer_.c_str(), why.c_str());
    } else if (m.type == control::Type::Goodbye) {
      // A listener has no peer; a goodbye there is a stray one.
      if (connected_) peer_left_ = true;
    } else if (control_in_.size() < 64) {  // a flood of requests must not grow it without end
      control_in_.push_back(std::move(m));
    }
    post_control_recv(slot);
  }

  fi_addr_t insert_address(const std::string &name) {
    fi_addr_t addr = FI_ADDR_UNSPEC;
    // FI_ADDR_STR names are NUL-terminated strings; c_str() adds the NUL to either kind.
    int rc = fi_av_insert(av_, name.c_str(), 1, &addr, 0, nullptr);
    if (rc != 1)
      throw Error(NAA_ERR_CONNECTION, "cannot address " + address_text(info_->addr_format, name) +
                                          ": " + fi_error_text(rc < 0 ? rc : -FI_EADDRNOTAVAIL));
    return addr;
  }

  // A same-host peer that dies without a goodbye (killed) is noticed through its process: a
  // pidfd becomes readable when it exits, which needs no cooperation from the peer and no
  // traffic. Peers elsewhere are bounded by the deadlines of whatever waits for them.
  void watch_process(uint32_t pid) {
    if (!same_host_ || pid == 0) return;
    peer_pid_ = static_cast<pid_t>(pid);
#ifdef SYS_pidfd_open
    peer_pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, peer_pid_, 0));
    if (peer_pidfd_ < 0 && errno == ESRCH) peer_left_ = true;
#endif
  }

  // shm unlinks an endpoint's region when the endpoint closes; a killed process leaves it in
  // /dev/shm. The peer that saw it die removes it: the object is named after the endpoint's
  // address without its "fi_shm://" prefix (fi_shm(7)), and its owner is gone for good.
  void remove_dead_peer_region() {
    const std::string prefix = "fi_shm://";
    std::string name(peer_name_.c_str());
    if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > prefix.size() &&
        shm_unlink(("/" + name.substr(prefix.size())).c_str()) == 0)
      NAA_LOG_INFO("removed the shm region %s of peer process %d, which is gone",
                   name.c_str() + prefix.size(), static_cast<int>(peer_pid_));
  }

  bool peer_process_gone() const {
    if (peer_pid_ == 0) return false;
    if (peer_pidfd_ >= 0) {
      pollfd p{peer_pidfd_, POLLIN, 0};
      return ::poll(&p, 1, 0) == 1;
    }
    return kill(peer_pid_, 0) != 0 && errno == ESRCH;
  }

  void connect_by_message(Deadline deadline, const std::string &private_data) {
    const std::string what = "connection to " + peer_;
    std::string server(static_cast<const char *>(info_->dest_addr), info_->dest_addrlen);
    fi_addr_t listener = insert_address(server);
    try {
      send_control(listener, control::Type::Request, private_data, &deadline);
    } catch (const Error &e) {
      // Over PROVIDER;ofi_rxm nothing listening shows as a send queue that never drains.
      throw Error(NAA_ERR_CONNECTION, what + ": nothing takes connection requests there (" +
                                          e.what() + ")");
    }
    std::optional<control::Message> answer = next_control(control::Type::Accept, deadline);
    if (!answer)
      throw Error(NAA_ERR_TIMEOUT, what + " timed out: no answer from " +
                                       address_text(info_->addr_format, server) +
                                       " (is an naa-server listening there with this transport?)");
    if (answer->type == control::Type::Reject) {
      std::string reason = private_data_text(answer->data.data(), answer->data.size());
      throw Error(NAA_ERR_CONNECTION, what + ": refused by the NAA" +
                                          (reason.empty() ? "" : " (\"" + reason + "\")"));
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
    peer_name_ = name;
    peer_data_ = answer->data;
    watch_process(answer->pid);
    connected_ = true;
  }

  void close() {
    if (ep_ != nullptr) close_fid(&ep_->fid);
    if (control_mr_ != nullptr) close_fid(&control_mr_->fid);
    if (av_ != nullptr) close_fid(&av_->fid);
    if (cq_ != nullptr) close_fid(&cq_->fid);
    if (eq_ != nullptr) close_fid(&eq_->fid);
    if (domain_ != nullptr) close_fid(&domain_->fid);
    ep_ = nullptr;
    control_mr_ = nullptr;
    av_ = nullptr;
    cq_ = nullptr;
    eq_ = nullptr;
    domain_ = nullptr;
  }

  void wait_connected(Deadline deadline, const std::string &what) {
    for (;;) {
      uint32_t event = 0;
      // The peer's accept data (naa-server's identity) follows the entry.
      alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
      int timeout = deadline.remaining_ms(kWaitSliceMs);
      ssize_t rc = fi_eq_sread(eq_, &event, buf, sizeof buf, timeout, 0);
      // libfabric 1.17's tcp provider reports a rejected request as EINPROGRESS, without the
      // peer's reason: on the client side, name the likely causes.
      if (rc == -FI_EAVAIL)
        raise_eq_error(pep_ != nullptr ? what : what + ": refused or dropped by the NAA (wrong or "
                                                       "missing NAA_AUTH_KEY? too many clients?)");
      if (rc >= 0 && event == FI_CONNECTED) {
        if (pep_ == nullptr && static_cast<size_t>(rc) > sizeof(fi_eq_cm_entry))
          peer_data_.assign(buf + sizeof(fi_eq_cm_entry), static_cast<size_t>(rc) - sizeof(fi_eq_cm_entry));
        connected_ = true;
        return;
      }
      if (rc >= 0 && event == FI_SHUTDOWN)
        throw Error(NAA_ERR_CONNECTION, what + ": peer shut down during connection setup");
      if (rc < 0 && rc != -FI_EAGAIN && rc != -FI_ETIMEDOUT && rc != -FI_EINTR)
        fail(NAA_ERR_CONNECTION, what, static_cast<int>(rc));
      if (deadline.expired()) throw Error(NAA_ERR_TIMEOUT, what + " timed out");
    }
  }

  // A refused connection may carry the peer's reason (naa-server's reject text) as error data.
  [[noreturn]] void raise_eq_error(const std::string &what) {
    fi_eq_err_entry err{};
    fi_eq_readerr(eq_, &err, 0);
    std::string reason = private_data_text(err.err_data, err.err_data_size);
    if (!reason.empty()) reason = " (\"" + reason + "\")";
    throw Error(NAA_ERR_CONNECTION, what + ": " + fi_error_text(err.err) + reason);
  }

  // Throws for a failed operation of ours; a failed control message (a goodbye to a peer that
  // is gone already) is only counted.
  void on_cq_error() {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    if (is_control(err.op_context)) {
      if (!(err.flags & FI_RECV) && control_sends_pending_ > 0) --control_sends_pending_;
      NAA_LOG_DEBUG("control message to %s failed: %s", peer_.c_str(), fi_error_text(err.err).c_str());
      return;
    }
    if (err.op_context == &fence_context_ && fence_pending_ > 0) --fence_pending_;
    // A failed operation on a connection the peer dropped is a connection error, not ours.
    check_events();
    throw Error(NAA_ERR_TRANSPORT, "operation to " + peer_ + " failed: " + fi_error_text(err.err) +
                                       " (" + fi_cq_strerror(cq_, err.prov_errno, err.err_data,
                                                             nullptr, 0) + ")");
  }

  void check_events() {
    if (rdm_) {
      if (peer_left_) throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected");
      if (connected_ && peer_process_gone()) {
        peer_left_ = true;
        remove_dead_peer_region();
        throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " (process " +
                                            std::to_string(peer_pid_) + ") is gone");
      }
      return;
    }
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    ssize_t rc = fi_eq_read(eq_, &event, &entry, sizeof entry, 0);
    if (rc == -FI_EAVAIL) raise_eq_error("connection to " + peer_);
    if (rc >= 0 && event == FI_SHUTDOWN) {
      connected_ = false;
      throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected");
    }
  }

  // One slice of sleep on the CQ (at most kWaitSliceMs, never past `deadline`). shm's peers
  // write into our region without waking the CQ's wait object (fi_cq_sread sleeps its whole
  // timeout through a message), so there the slices are naps that grow from kNapMin to kNapMax
  // while nothing comes (to nap_limit_): a message after a pause waits at most that long.
  size_t sleep_on_cq(Completion *out, size_t max, Deadline deadline) {
    if (!cq_wakes_) {
      // To the microsecond: a millisecond count would be 0 in a deadline's last millisecond
      // and turn the nap into a spin.
      const auto left = std::min<Deadline::Clock::duration>(deadline.remaining(),
                                                            std::chrono::milliseconds(kWaitSliceMs));
      std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(nap_, left));
      nap_ = std::min(nap_ * 2, nap_limit_);
      return read_cq(out, max);
    }
    fi_cq_data_entry entries[8];
    ssize_t rc = fi_cq_sread(cq_, entries, std::min<size_t>(max, 8), nullptr,
                             deadline.remaining_ms(kWaitSliceMs));
    if (rc > 0) return translate(entries, static_cast<size_t>(rc), out);
    if (rc == -FI_EAVAIL) on_cq_error();
    else if (rc != -FI_EAGAIN && rc != -FI_ETIMEDOUT && rc != -FI_EINTR)
      check(static_cast<int>(rc), "fi_cq_sread");
    return 0;
  }

  size_t read_cq(Completion *out, size_t max) {
    fi_cq_data_entry entries[8];
    ssize_t rc = fi_cq_read(cq_, entries, std::min<size_t>(max, 8));
    if (rc > 0) return translate(entries, static_cast<size_t>(rc), out);
    if (rc == -FI_EAVAIL) on_cq_error();
    else if (rc != -FI_EAGAIN) check(static_cast<int>(rc), "fi_cq_read");
    return 0;
  }

  // Completions of the transport's own operations (control messages, RDM's data writes) are
  // consumed here; the rest are handed on.
  size_t translate(const fi_cq_data_entry *entries, size_t n, Completion *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      const fi_cq_data_entry &e = entries[i];
      if (is_control(e.op_context)) {
        if (e.flags & FI_RECV) on_control(static_cast<uint8_t *>(e.op_context), e.len);
        else if (control_sends_pending_ > 0) --control_sends_pending_;
        continue;
      }
      if (e.op_context == &fence_context_ && !(e.flags & FI_REMOTE_CQ_DATA)) {
        if (fence_pending_ > 0) --fence_pending_;
        continue;
      }
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

  void wait_fence() {
    auto give_up = Deadline::after(kPostRetryLimit);
    while (fence_pending_ > 0) {
      Completion c[8];
      size_t n = read_cq(c, 8);
      stash_.insert(stash_.end(), c, c + n);
      check_events();
      if (give_up.expired())
        throw Error(NAA_ERR_TRANSPORT, "writes to " + peer_ + " did not complete");
    }
  }

  // Posting fails with -FI_EAGAIN while a queue is full; completions read meanwhile are
  // stashed for the next poll, never dropped. Between tries it naps (growing to kNapMax)
  // while nothing completes: a queue that a stopped or dead peer never drains (shm) must not
  // cost a core. It gives up after kPostRetryLimit, or at `deadline` when that comes first.
  template <class Post>
  void retry_post(const char *what, Post post, const Deadline *deadline = nullptr) {
    ssize_t rc = post();
    if (rc == 0) return;  // the usual case reads no clock
    auto give_up = Deadline::after(kPostRetryLimit);
    auto nap = kNapMin;
    for (;; rc = post()) {
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) {
        check_events();
        fail(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_, static_cast<int>(rc));
      }
      if (give_up.expired() || (deadline != nullptr && deadline->expired()))
        throw Error(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_ + ": queue stayed full");
      Completion c[8];
      size_t n = read_cq(c, 8);
      stash_.insert(stash_.end(), c, c + n);
      check_events();
      if (n > 0) {
        nap = kNapMin;
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, kNapMax);
      }
    }
  }

  std::shared_ptr<OfiFabric> fabric_;
  InfoPtr info_;
  fid_pep *pep_;  // server side: the listener that received the request (for fi_reject)
  std::string peer_data_;
  std::string peer_;
  bool rdm_ = false;
  bool same_host_ = false;
  bool cq_wakes_ = true;  // whether a peer's message wakes a thread asleep on the CQ
  std::chrono::microseconds nap_ = kNapMin;
  std::chrono::microseconds nap_limit_ = kNapMax;
  bool imm_consumes_recv_ = false;
  bool virt_addr_ = false;
  bool prov_key_ = false;
  size_t max_msg_ = SIZE_MAX;
  uint64_t next_key_ = 1;
  EventCheckPacer event_checks_;
  int wait_fd_ = -1;
  bool connected_ = false;
  fid_domain *domain_ = nullptr;
  fid_eq *eq_ = nullptr;  // MSG: connection events
  fid_cq *cq_ = nullptr;
  fid_ep *ep_ = nullptr;
  std::deque<Completion> stash_;
  // RDM only.
  fid_av *av_ = nullptr;
  fi_addr_t peer_addr_ = FI_ADDR_UNSPEC;
  std::vector<uint8_t> control_buf_;
  fid_mr *control_mr_ = nullptr;
  unsigned control_send_next_ = 0;
  size_t control_sends_pending_ = 0;
  std::deque<control::Message> control_in_;
  bool peer_left_ = false;
  pid_t peer_pid_ = 0;
  std::string peer_name_;  // the peer's endpoint name (RDM)
  int peer_pidfd_ = -1;
  char fence_context_ = 0;  // its address marks the data writes of an RDM chain
  size_t fence_pending_ = 0;
};

std::string provider_phrase(const std::string &provider) {
  return provider.empty() ? "" : " '" + provider + "'";
}

class OfiListener : public Listener {
 public:
  OfiListener(const std::string &provider, const std::string &host, uint16_t port) {
    InfoPtr hints = make_hints(provider);
    fi_info *info = nullptr;
    std::string service = std::to_string(port);
    int rc = fi_getinfo(kApiVersion, host.empty() ? nullptr : host.c_str(), service.c_str(),
                        FI_SOURCE, hints.get(), &info);
    if (rc < 0)
      fail(NAA_ERR_UNSUPPORTED, "no libfabric provider" + provider_phrase(provider) +
                                    " can listen on " + host + ":" + service, rc);
    info_.reset(info);
    fabric_ = std::make_shared<OfiFabric>(info_.get());
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    fid_eq *eq = nullptr;
    check(fi_eq_open(fabric_->fabric, &eq_attr, &eq, nullptr), "fi_eq_open");
    eq_.reset(eq);
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

  uint16_t port() const override { return port_; }

  std::unique_ptr<Endpoint> next_request(Deadline deadline) override {
    for (;;) {
      uint32_t event = 0;
      // The connection request's private data follows the entry.
      alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
      fi_eq_cm_entry &entry = *reinterpret_cast<fi_eq_cm_entry *>(buf);
      ssize_t rc = fi_eq_sread(eq_.get(), &event, buf, sizeof buf, deadline.remaining_ms(kWaitSliceMs), 0);
      if (rc >= 0 && event == FI_CONNREQ) {
        size_t data_len = static_cast<size_t>(rc) > sizeof entry ? static_cast<size_t>(rc) - sizeof entry : 0;
        return std::make_unique<OfiEndpoint>(fabric_, InfoPtr(entry.info), pep_.get(),
                                             std::string(buf + sizeof entry, data_len));
      }
      if (rc >= 0 && entry.info != nullptr) fi_freeinfo(entry.info);
      if (rc == -FI_EAVAIL) {
        fi_eq_err_entry err{};
        fi_eq_readerr(eq_.get(), &err, 0);
        NAA_LOG_WARN("listener: %s", fi_error_text(err.err).c_str());
      }
      if (deadline.expired()) return nullptr;
    }
  }

 private:
  InfoPtr info_;
  std::shared_ptr<OfiFabric> fabric_;
  FidPtr<fid_eq> eq_;
  FidPtr<fid_pep> pep_;  // closed before eq_, which it is bound to
  uint16_t port_ = 0;
};

// fi_getinfo with our hints for `type`; nullptr when no provider matches.
InfoPtr find_info(const std::string &provider, bool auto_progress, fi_ep_type type,
                  const char *node, const char *service, uint64_t flags, int *rc_out = nullptr) {
  InfoPtr hints = make_hints(provider, auto_progress, type);
  fi_info *info = nullptr;
  int rc = fi_getinfo(kApiVersion, node, service, flags, hints.get(), &info);
  if (rc_out != nullptr) *rc_out = rc;
  if (rc < 0) return nullptr;
  InfoPtr owned(info);
  return InfoPtr(fi_dupinfo(owned.get()));  // only the first (preferred) match is used
}

// shm names endpoints, not hosts and ports: "HOST:PORT" of a same-host NAA maps to the name of
// the listener that serves PORT. A TCP port number is unique on a host (the server holds it
// with its tcp listener, or reserves it when it serves shm alone), so the port names one server;
// the uid is part of the name because shm's regions and its process_vm_writev copies work only
// between processes of one user, so a client of another user finds no such name (and auto
// reaches that server over TCP instead).
std::string shm_service(uint16_t port) {
  return "naa-" + std::to_string(getuid()) + "-" + std::to_string(port);
}

// shm keeps an endpoint's region as the POSIX shared-memory object of the endpoint's name
// (fi_shm(7)). A listener holds an flock on its object while it lives: that tells a live server
// from the leftover of one that was killed (which would make a new listener's fi_enable fail
// with EBUSY), and lets a client see at once that no server is there.
enum class NameState { Free, Live, Stale };

NameState shm_name_state(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return NameState::Free;
  NameState state = flock(fd, LOCK_EX | LOCK_NB) == 0 ? NameState::Stale : NameState::Live;
  ::close(fd);
  return state;
}

int hold_shm_name(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) NAA_LOG_WARN("cannot lock shm region %s: clients may take it for a dead server's", name.c_str());
  return fd;
}

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

// A reliable-datagram listener: an RDM endpoint at a well-known address that receives
// connection requests; each one gets a fresh endpoint of its own (see the top of this file).
class OfiRdmListener : public Listener {
 public:
  OfiRdmListener(const std::string &provider, const std::string &host, uint16_t port) {
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
    // milliseconds. shm makes each endpoint's name unique itself (pid, uid, endpoint index).
    fresh_info_ = find_info(prov_name_, false, FI_EP_RDM, named_ || host.empty() ? nullptr : host.c_str(),
                            named_ ? nullptr : "0", named_ ? 0 : FI_SOURCE, &rc);
    if (!fresh_info_) fail(NAA_ERR_UNSUPPORTED, "no endpoint for connection requests", rc);
    if (!named_) {
      std::string name = ep_->own_name();
      if (name.size() >= sizeof(sockaddr_in))
        port_ = ntohs(reinterpret_cast<const sockaddr_in *>(name.data())->sin_port);
    }
  }

  ~OfiRdmListener() override {
    ep_.reset();
    if (name_fd_ >= 0) ::close(name_fd_);
    release_port();
  }

  uint16_t port() const override { return port_; }

  std::unique_ptr<Endpoint> next_request(Deadline deadline) override {
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
    auto ep = std::make_unique<OfiEndpoint>(fabric_, std::move(info), nullptr, request->data);
    ep->attach(request->name, request->pid);
    return ep;
  }

 private:
  void claim_name(const std::string &name) {
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

  void release_port() {
    if (reserved_fd_ >= 0) ::close(reserved_fd_);
    reserved_fd_ = -1;
  }

  // What a request's fresh endpoint and the mapping of its peer take, with room to spare.
  static constexpr size_t kSpareDescriptors = 16;
  static constexpr int kDescriptorCheckMs = 10;
  static constexpr std::chrono::microseconds kListenerNapLimit{8000};

  bool named_ = false;
  std::string prov_name_;
  int reserved_fd_ = -1;
  int name_fd_ = -1;
  std::shared_ptr<OfiFabric> fabric_;
  std::unique_ptr<OfiEndpoint> ep_;
  InfoPtr fresh_info_;
  uint16_t port_ = 0;
};

class OfiTransport : public Transport {
 public:
  OfiTransport(std::string provider, bool auto_progress)
      : provider_(std::move(provider)), auto_progress_(auto_progress),
        name_(provider_.empty() ? "ofi" : "ofi+" + provider_) {}

  const char *name() const override { return name_.c_str(); }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data) override {
    const fi_ep_type type = endpoint_type();
    const bool named = rdm_probe_ && rdm_probe_->addr_format == FI_ADDR_STR;
    if (named && !is_local_host(host))
      throw Error(NAA_ERR_UNSUPPORTED, name_ + " reaches only NAAs on this host, and " + host +
                                           " is not one of its addresses");
    if (named && shm_name_state(shm_service(port)) != NameState::Live)
      throw Error(NAA_ERR_CONNECTION, "no naa-server of this user listens with " + name_ +
                                          " for port " + std::to_string(port) + " on this host");
    InfoPtr hints = make_hints(provider_, auto_progress_, type);
    sockaddr_in *src = nullptr;
    if (!local_ip.empty() && !named) {
      src = static_cast<sockaddr_in *>(calloc(1, sizeof(sockaddr_in)));
      if (src == nullptr) throw Error(NAA_ERR_NO_RESOURCES, "out of memory");
      src->sin_family = AF_INET;
      hints->src_addr = src;  // owned by hints from here on
      hints->src_addrlen = sizeof *src;
      hints->addr_format = FI_SOCKADDR_IN;
      src->sin_addr = local_ipv4(local_ip);
    }
    require_resolvable(host);
    InfoPtr chosen = named ? named_destination(port) : nullptr;
    if (!named) {
      fi_info *info = nullptr;
      std::string service = std::to_string(port);
      int rc = fi_getinfo(kApiVersion, host.c_str(), service.c_str(), 0, hints.get(), &info);
      if (rc < 0)
        fail(rc == -FI_ENODATA ? NAA_ERR_UNSUPPORTED : NAA_ERR_CONNECTION,
             "no libfabric provider" + provider_phrase(provider_) +
                 (auto_progress_ ? " with FI_PROGRESS_AUTO (NAA_PROGRESS=provider)" : "") +
                 " reaches " + host + ":" + service,
             rc);
      InfoPtr owned(info);
      chosen.reset(fi_dupinfo(owned.get()));  // only the first (preferred) match is used
    }
    if (!chosen) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
    NAA_LOG_INFO("connecting to %s:%u with provider %s (%s, fabric %s, domain %s, %s data progress)",
                 host.c_str(), static_cast<unsigned>(port), chosen->fabric_attr->prov_name,
                 type == FI_EP_RDM ? "FI_EP_RDM" : "FI_EP_MSG", chosen->fabric_attr->name,
                 chosen->domain_attr->name,
                 chosen->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual");
    auto fabric = std::make_shared<OfiFabric>(chosen.get());
    auto ep = std::make_unique<OfiEndpoint>(std::move(fabric), std::move(chosen), nullptr);
    if (type == FI_EP_RDM) ep->set_peer_label(host + ":" + std::to_string(port));
    ep->connect(deadline, private_data);
    return ep;
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    if (endpoint_type() == FI_EP_RDM) return std::make_unique<OfiRdmListener>(provider_, host, port);
    return std::make_unique<OfiListener>(provider_, host, port);
  }

 private:
  // Connected endpoints where the provider has them (tcp, verbs), reliable datagrams where it
  // has only those (shm, PROVIDER;ofi_rxm, lnx). "ofi" without a provider keeps to MSG.
  fi_ep_type endpoint_type() {
    if (!type_) {
      type_ = FI_EP_MSG;
      if (!provider_.empty() && !find_info(provider_, auto_progress_, FI_EP_MSG, nullptr, nullptr, 0))
        rdm_probe_ = find_info(provider_, auto_progress_, FI_EP_RDM, nullptr, nullptr, 0);
      if (rdm_probe_) type_ = FI_EP_RDM;
    }
    return *type_;
  }

  // The probe's endpoint (shm names it itself) aimed at the listener's name for `port`.
  InfoPtr named_destination(uint16_t port) {
    InfoPtr info(fi_dupinfo(rdm_probe_.get()));
    if (!info) return nullptr;
    std::string dest = "fi_ns://" + shm_service(port);
    free(info->dest_addr);
    info->dest_addr = strdup(dest.c_str());
    info->dest_addrlen = info->dest_addr != nullptr ? dest.size() + 1 : 0;
    return info->dest_addr != nullptr ? std::move(info) : nullptr;
  }

  std::string provider_;
  const bool auto_progress_;
  std::string name_;
  std::optional<fi_ep_type> type_;
  InfoPtr rdm_probe_;  // what the provider offers for RDM, when it offers no MSG
};

}  // namespace

std::unique_ptr<Transport> open_ofi_transport(const std::string &provider, bool auto_progress) {
  return std::make_unique<OfiTransport>(provider, auto_progress);
}

std::vector<std::string> list_ofi_providers() {
  std::vector<std::string> lines;
  for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
    InfoPtr hints = make_hints("", false, type);
    fi_info *list = nullptr;
    if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) < 0) continue;
    InfoPtr owned(list);
    for (fi_info *i = list; i != nullptr; i = i->next)
      lines.push_back(std::string(i->fabric_attr->prov_name) + "  " +
                      (type == FI_EP_MSG ? "msg" : "rdm") + "  fabric " + i->fabric_attr->name +
                      "  domain " + i->domain_attr->name);
  }
  return lines;
}

bool ofi_shm_server_at(uint16_t port) {
  return shm_name_state(shm_service(port)) == NameState::Live;
}

bool ofi_provider_available(const std::string &provider) {
  return find_info(provider, false, FI_EP_MSG, nullptr, nullptr, 0) ||
         find_info(provider, false, FI_EP_RDM, nullptr, nullptr, 0);
}

bool ofi_tcp_crashable_by_peers() {
  uint32_t v = fi_version();
  return FI_MAJOR(v) == 1 && FI_MINOR(v) == 17;
}

std::string ofi_runtime_version() {
  uint32_t v = fi_version();
  return std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

}  // namespace naa::transport
