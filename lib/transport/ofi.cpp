// SPDX-License-Identifier: BSD-3-Clause
// The libfabric transport: FI_EP_MSG endpoints (provider tcp here, verbs/others where present),
// fi_writemsg chains ending in a write with remote CQ data, MRSP over fi_sendmsg/fi_recv.
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

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "error.hpp"
#include "log.hpp"

namespace naa::transport {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 9);
// A post that keeps returning -FI_EAGAIN (queue full and no progress) is a dead fabric.
constexpr auto kPostRetryLimit = std::chrono::seconds(10);
// The longest a blocking read sleeps before re-checking the event queue for a disconnect.
constexpr int kWaitSliceMs = 100;
// Room for a CM event's private data (the auth key and naa-server's identity are far smaller).
constexpr size_t kMaxPrivateData = 256;
// A non-blocking poll reads the CQ only; the event queue (where a disconnect shows) is read on
// every this-many empty polls, so that naa_test and a spinning naa_wait cost one CQ read each.
// The profile (callgrind, 64-byte round trips) had the EQ read at 20 % of an empty poll.
constexpr unsigned kEventCheckInterval = 64;
// Segments larger than this are split into writes of this size. Over ofi+tcp on loopback
// no split size beat unsplit writes (doc/performance.md; NAA_OFI_WRITE_CHUNK to measure).
constexpr size_t kDefaultWriteChunk = SIZE_MAX;

size_t write_chunk_from_environment() {
  const char *text = std::getenv("NAA_OFI_WRITE_CHUNK");
  if (text == nullptr || *text == '\0') return kDefaultWriteChunk;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (!std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || v < 4096)
    throw Error(NAA_ERR_CONFIG, std::string("NAA_OFI_WRITE_CHUNK '") + text +
                                    "' is not a number of bytes >= 4096");
  return static_cast<size_t>(v);
}

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
InfoPtr make_hints(const std::string &provider, bool auto_progress = false) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw Error(NAA_ERR_NO_RESOURCES, "fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
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
  ~OfiMemoryRegion() override { close_fid(&mr->fid); }
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

class OfiEndpoint : public Endpoint {
 public:
  OfiEndpoint(std::shared_ptr<OfiFabric> fabric, InfoPtr info, fid_pep *pep,
              std::string request_data = {})
      : fabric_(std::move(fabric)), info_(std::move(info)), pep_(pep),
        peer_data_(std::move(request_data)) {
    peer_ = sockaddr_name(info_->dest_addr);
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
    if (connected_) fi_shutdown(ep_, 0);
    close();
  }

  void connect(Deadline deadline, const std::string &private_data) {
    check(fi_connect(ep_, info_->dest_addr, private_data.empty() ? nullptr : private_data.data(),
                     private_data.size()),
          "fi_connect");
    wait_connected(deadline, "connection to " + peer_);
  }

  void accept(Deadline deadline, const std::string &private_data) override {
    open_once();
    check(fi_accept(ep_, private_data.empty() ? nullptr : private_data.data(), private_data.size()),
          "fi_accept");
    wait_connected(deadline, "accepting " + peer_);
  }

  void reject(const char *reason) override {
    if (pep_ != nullptr)
      fi_reject(pep_, info_->handle, reason, reason != nullptr ? strlen(reason) + 1 : 0);
  }

  std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                bool remote_write) override {
    open_once();
    auto region = std::make_unique<OfiMemoryRegion>();
    uint64_t access = FI_SEND | FI_RECV | FI_WRITE | (remote_write ? FI_REMOTE_WRITE : 0);
    uint64_t key = prov_key_ ? 0 : next_key_++;
    int rc = fi_mr_reg(domain_, addr, length, access, 0, key, 0, &region->mr, nullptr);
    if (rc < 0)
      fail(NAA_ERR_NO_RESOURCES, "registering " + std::to_string(length) + " bytes failed", rc);
    if (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) {
      check(fi_mr_bind(region->mr, &ep_->fid, 0), "fi_mr_bind");
      check(fi_mr_enable(region->mr), "fi_mr_enable");
    }
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
    msg.addr = FI_ADDR_UNSPEC;
    msg.context = reinterpret_cast<void *>(context);
    retry_post("fi_sendmsg", [&] { return fi_sendmsg(ep_, &msg, FI_COMPLETION); });
  }

  bool immediate_consumes_recv() const override { return imm_consumes_recv_; }

  std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                             uint64_t context) override {
    if (segments.empty()) throw Error(NAA_ERR_INTERNAL, "empty write chain");
    auto chain = std::make_unique<OfiWriteChain>();
    for (const WriteSegment &s : segments) {
      auto *base = static_cast<char *>(s.local->addr) + s.offset;
      void *desc = static_cast<const OfiMemoryRegion *>(s.local)->desc;
      size_t done = 0;
      do {  // at least one op, so that a zero-length segment is still a write
        size_t len = std::min(s.length - done, max_msg_);
        OfiWriteChain::Op op{};
        op.iov = {base + done, len};
        op.desc = desc;
        op.rma = {s.remote_addr + done, len, s.rkey};
        chain->ops.push_back(op);
        done += len;
      } while (done < s.length);
    }
    // Pointers into the vector are taken only now that it no longer grows.
    for (auto &op : chain->ops) {
      op.msg.msg_iov = &op.iov;
      op.msg.desc = &op.desc;
      op.msg.iov_count = 1;
      op.msg.addr = FI_ADDR_UNSPEC;
      op.msg.rma_iov = &op.rma;
      op.msg.rma_iov_count = 1;
      op.msg.context = reinterpret_cast<void *>(context);
    }
    return chain;
  }

  // Only the last write asks for a completion: the provider completes a MSG endpoint's
  // operations in order (comp_order strict), so it stands for the whole chain.
  void post_writes(WriteChain &chain, uint32_t imm,
                   Deadline::Clock::time_point final_not_before) override {
    auto &ops = static_cast<OfiWriteChain &>(chain).ops;
    const size_t last = ops.size() - 1;
    for (size_t i = 0; i < last; ++i)
      retry_post("fi_writemsg", [&] { return fi_writemsg(ep_, &ops[i].msg, 0); });
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
    if (n == 0 && ++empty_polls_ % kEventCheckInterval == 0) check_events();
    return n;
  }

  size_t wait(Completion *out, size_t max, Deadline deadline) override {
    for (;;) {
      if (size_t n = poll(out, max)) return n;
      if (deadline.expired()) return 0;
      fi_cq_data_entry entries[8];
      ssize_t rc = fi_cq_sread(cq_, entries, std::min<size_t>(max, 8), nullptr,
                               deadline.remaining_ms(kWaitSliceMs));
      if (rc > 0) return translate(entries, static_cast<size_t>(rc), out);
      if (rc == -FI_EAVAIL) raise_cq_error();
      if (rc != -FI_EAGAIN && rc != -FI_ETIMEDOUT && rc != -FI_EINTR) check(static_cast<int>(rc), "fi_cq_sread");
      check_events();  // a slice slept through: the peer may be gone
    }
  }

  int wait_fd() const override { return wait_fd_; }

  bool arm_wait() override {
    check_events();
    fid_t cq = &cq_->fid;
    return fi_trywait(fabric_->fabric, &cq, 1) == FI_SUCCESS;
  }

  const std::string &peer() const override { return peer_; }
  const std::string &peer_data() const override { return peer_data_; }

 private:
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
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    check(fi_eq_open(fabric_->fabric, &eq_attr, &eq_, nullptr), "fi_eq_open");
    // An fd wait object where the provider has one: the progress thread sleeps on many
    // endpoints' descriptors at once (FI_GETWAIT names it only for FI_WAIT_FD).
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.wait_obj = FI_WAIT_FD;
    if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) == 0) {
      if (fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
    } else {
      cq_attr.wait_obj = FI_WAIT_UNSPEC;
      check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    }
    check(fi_endpoint(domain_, info_.get(), &ep_, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep_, &eq_->fid, 0), "fi_ep_bind(eq)");
    // Selective completion for sends only (the chain signals just its last write); on the
    // receive side it would silence every receive posted without FI_COMPLETION.
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION), "fi_ep_bind(tx cq)");
    check(fi_ep_bind(ep_, &cq_->fid, FI_RECV), "fi_ep_bind(rx cq)");
    check(fi_enable(ep_), "fi_enable");
  }

  void close() {
    if (ep_ != nullptr) close_fid(&ep_->fid);
    if (cq_ != nullptr) close_fid(&cq_->fid);
    if (eq_ != nullptr) close_fid(&eq_->fid);
    if (domain_ != nullptr) close_fid(&domain_->fid);
    ep_ = nullptr;
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

  [[noreturn]] void raise_cq_error() {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    // A failed operation on a connection the peer dropped is a connection error, not ours.
    check_events();
    throw Error(NAA_ERR_TRANSPORT, "operation to " + peer_ + " failed: " + fi_error_text(err.err) +
                                       " (" + fi_cq_strerror(cq_, err.prov_errno, err.err_data,
                                                             nullptr, 0) + ")");
  }

  void check_events() {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    ssize_t rc = fi_eq_read(eq_, &event, &entry, sizeof entry, 0);
    if (rc == -FI_EAVAIL) raise_eq_error("connection to " + peer_);
    if (rc >= 0 && event == FI_SHUTDOWN) {
      connected_ = false;
      throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected");
    }
  }

  size_t read_cq(Completion *out, size_t max) {
    fi_cq_data_entry entries[8];
    ssize_t rc = fi_cq_read(cq_, entries, std::min<size_t>(max, 8));
    if (rc > 0) return translate(entries, static_cast<size_t>(rc), out);
    if (rc == -FI_EAVAIL) raise_cq_error();
    if (rc != -FI_EAGAIN) check(static_cast<int>(rc), "fi_cq_read");
    return 0;
  }

  static size_t translate(const fi_cq_data_entry *entries, size_t n, Completion *out) {
    for (size_t i = 0; i < n; ++i) {
      const fi_cq_data_entry &e = entries[i];
      Completion &c = out[i];
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
    return n;
  }

  // Posting fails with -FI_EAGAIN while a queue is full; completions read meanwhile are
  // stashed for the next poll, never dropped.
  template <class Post>
  void retry_post(const char *what, Post post) {
    ssize_t rc = post();
    if (rc == 0) return;  // the usual case reads no clock
    auto give_up = Deadline::after(kPostRetryLimit);
    for (;; rc = post()) {
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) {
        check_events();
        fail(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_, static_cast<int>(rc));
      }
      if (give_up.expired())
        throw Error(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_ + ": queue stayed full");
      Completion c[8];
      size_t n = read_cq(c, 8);
      stash_.insert(stash_.end(), c, c + n);
      check_events();
    }
  }

  std::shared_ptr<OfiFabric> fabric_;
  InfoPtr info_;
  fid_pep *pep_;  // server side: the listener that received the request (for fi_reject)
  std::string peer_data_;
  std::string peer_;
  bool imm_consumes_recv_ = false;
  bool virt_addr_ = false;
  bool prov_key_ = false;
  size_t max_msg_ = SIZE_MAX;
  uint64_t next_key_ = 1;
  unsigned empty_polls_ = 0;
  int wait_fd_ = -1;
  bool connected_ = false;
  fid_domain *domain_ = nullptr;
  fid_eq *eq_ = nullptr;
  fid_cq *cq_ = nullptr;
  fid_ep *ep_ = nullptr;
  std::deque<Completion> stash_;
};

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
    check(fi_eq_open(fabric_->fabric, &eq_attr, &eq_, nullptr), "fi_eq_open");
    check(fi_passive_ep(fabric_->fabric, info_.get(), &pep_, nullptr), "fi_passive_ep");
    check(fi_pep_bind(pep_, &eq_->fid, 0), "fi_pep_bind");
    rc = fi_listen(pep_);
    if (rc < 0) fail(NAA_ERR_CONNECTION, "cannot listen on " + host + ":" + service, rc);
    sockaddr_storage addr{};
    size_t len = sizeof addr;
    check(fi_getname(&pep_->fid, &addr, &len), "fi_getname");
    port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 &>(addr).sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in &>(addr).sin_port);
  }

  ~OfiListener() override {
    close_fid(pep_ != nullptr ? &pep_->fid : nullptr);
    close_fid(eq_ != nullptr ? &eq_->fid : nullptr);
  }

  uint16_t port() const override { return port_; }

  std::unique_ptr<Endpoint> next_request(Deadline deadline) override {
    for (;;) {
      uint32_t event = 0;
      // The connection request's private data follows the entry.
      alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
      fi_eq_cm_entry &entry = *reinterpret_cast<fi_eq_cm_entry *>(buf);
      ssize_t rc = fi_eq_sread(eq_, &event, buf, sizeof buf, deadline.remaining_ms(kWaitSliceMs), 0);
      if (rc >= 0 && event == FI_CONNREQ) {
        size_t data_len = static_cast<size_t>(rc) > sizeof entry ? static_cast<size_t>(rc) - sizeof entry : 0;
        return std::make_unique<OfiEndpoint>(fabric_, InfoPtr(entry.info), pep_,
                                             std::string(buf + sizeof entry, data_len));
      }
      if (rc >= 0 && entry.info != nullptr) fi_freeinfo(entry.info);
      if (rc == -FI_EAVAIL) {
        fi_eq_err_entry err{};
        fi_eq_readerr(eq_, &err, 0);
        NAA_LOG_WARN("listener: %s", fi_error_text(err.err).c_str());
      }
      if (deadline.expired()) return nullptr;
    }
  }

  static std::string provider_phrase(const std::string &provider) {
    return provider.empty() ? "" : " '" + provider + "'";
  }

 private:
  InfoPtr info_;
  std::shared_ptr<OfiFabric> fabric_;
  fid_eq *eq_ = nullptr;
  fid_pep *pep_ = nullptr;
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
    InfoPtr hints = make_hints(provider_, auto_progress_);
    sockaddr_in *src = nullptr;
    if (!local_ip.empty()) {
      src = static_cast<sockaddr_in *>(calloc(1, sizeof(sockaddr_in)));
      if (src == nullptr) throw Error(NAA_ERR_NO_RESOURCES, "out of memory");
      src->sin_family = AF_INET;
      hints->src_addr = src;  // owned by hints from here on
      hints->src_addrlen = sizeof *src;
      hints->addr_format = FI_SOCKADDR_IN;
      if (inet_pton(AF_INET, local_ip.c_str(), &src->sin_addr) != 1)
        throw Error(NAA_ERR_CONFIG, "NAA_LOCAL_IP '" + local_ip + "' is not an IPv4 address");
    }
    // Resolved here first so that a misspelt host is reported as such: libfabric answers an
    // unresolvable name with the same -FI_ENODATA as "no provider".
    addrinfo want{}, *found = nullptr;
    want.ai_socktype = SOCK_STREAM;
    if (int gai = getaddrinfo(host.c_str(), nullptr, &want, &found); gai != 0)
      throw Error(NAA_ERR_CONNECTION, "cannot resolve NAA host '" + host + "': " + gai_strerror(gai));
    freeaddrinfo(found);
    fi_info *info = nullptr;
    std::string service = std::to_string(port);
    int rc = fi_getinfo(kApiVersion, host.c_str(), service.c_str(), 0, hints.get(), &info);
    if (rc < 0)
      fail(rc == -FI_ENODATA ? NAA_ERR_UNSUPPORTED : NAA_ERR_CONNECTION,
           "no libfabric provider" + OfiListener::provider_phrase(provider_) +
               (auto_progress_ ? " with FI_PROGRESS_AUTO (NAA_PROGRESS=provider)" : "") +
               " reaches " + host + ":" + service,
           rc);
    InfoPtr owned(info);
    InfoPtr chosen(fi_dupinfo(owned.get()));  // only the first (preferred) match is used
    if (!chosen) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
    NAA_LOG_INFO("connecting to %s:%s with provider %s (fabric %s, domain %s, %s data progress)",
                 host.c_str(), service.c_str(), chosen->fabric_attr->prov_name,
                 chosen->fabric_attr->name, chosen->domain_attr->name,
                 chosen->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual");
    auto fabric = std::make_shared<OfiFabric>(chosen.get());
    auto ep = std::make_unique<OfiEndpoint>(std::move(fabric), std::move(chosen), nullptr);
    ep->connect(deadline, private_data);
    return ep;
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    return std::make_unique<OfiListener>(provider_, host, port);
  }

 private:
  std::string provider_;
  const bool auto_progress_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Transport> open_ofi_transport(const std::string &provider, bool auto_progress) {
  return std::make_unique<OfiTransport>(provider, auto_progress);
}

std::vector<std::string> list_ofi_providers() {
  InfoPtr hints = make_hints("");
  fi_info *list = nullptr;
  std::vector<std::string> lines;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) < 0) return lines;
  InfoPtr owned(list);
  for (fi_info *i = list; i != nullptr; i = i->next)
    lines.push_back(std::string(i->fabric_attr->prov_name) + "  fabric " + i->fabric_attr->name +
                    "  domain " + i->domain_attr->name);
  return lines;
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
