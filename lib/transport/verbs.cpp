// SPDX-License-Identifier: BSD-3-Clause
// The verbs transport (doc/protocol.md §1): librdmacm connection management in RDMA_PS_TCP,
// one RC queue pair per connection, MRSP over SEND/RECV, each invocation one pre-built chain of
// RDMA WRITEs ending in a WRITE WITH IMM, all posted by a single ibv_post_send.
#include "transport/verbs.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "error.hpp"
#include "log.hpp"
#include "transport/event_check.hpp"
#include "transport/host.hpp"
#include "transport/split_writes.hpp"

namespace naa::transport {
namespace {

// The spec's connection parameters (reference values; READ and atomics are never used).
constexpr uint8_t kInitiatorDepth = 1;
constexpr uint8_t kResponderResources = 1;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryCount = 6;
constexpr int kBacklog = 64;
// Address and route resolution each get at most this long (the reference's 100/500 ms are too
// short for software RoCE under load); the caller's deadline still bounds the whole connect.
constexpr int kResolveCapMs = 5000;
// Send queue depth: one chain in flight per connection, so this bounds the writes per chain.
constexpr uint32_t kSendDepth = 1024;
constexpr uint32_t kRecvDepth = 4;  // MRSP receive + the receive for the peer's immediate
// Writes up to this size travel inline in the work request: no DMA read of the payload.
constexpr uint32_t kMaxInline = 256;
constexpr int kWaitSliceMs = 1000;

std::string errno_text(int err) { return std::strerror(err); }

// Every rdma_cm and verbs object is held by one of these, so that whatever throws half way
// through building a connection or a listener releases what was built (in reverse order).
template <auto Destroy>
struct Destroyer {
  template <typename T>
  void operator()(T *p) const { Destroy(p); }
};
template <typename T, auto Destroy>
using Owned = std::unique_ptr<T, Destroyer<Destroy>>;
using CmId = Owned<rdma_cm_id, rdma_destroy_id>;
// Acking an event is what rdma_destroy_id waits for.
using CmEvent = Owned<rdma_cm_event, rdma_ack_cm_event>;

[[noreturn]] void fail_errno(naa_error_t code, const std::string &what) {
  throw Error(code, what + ": " + errno_text(errno));
}

void set_nonblocking(int fd, const char *what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    fail_errno(NAA_ERR_TRANSPORT, std::string("making the ") + what + " non-blocking");
}

std::string addr_name(const sockaddr *sa) {
  if (sa == nullptr || sa->sa_family != AF_INET) return "?";
  auto *in = reinterpret_cast<const sockaddr_in *>(sa);
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
}

std::string gid_text(const ibv_gid &gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

// NAA_RDMA_DEVICE names the device to connect from. rdma_cm picks the device from the source
// address, so the device is pinned through its IPv4 RoCEv2 GID (::ffff:a.b.c.d).
std::string device_ipv4(const std::string &device) {
  const std::string base = "/sys/class/infiniband/" + device + "/ports/1/";
  for (int i = 0; i < 256; ++i) {
    std::ifstream type(base + "gid_attrs/types/" + std::to_string(i));
    std::string t;
    if (!std::getline(type, t)) break;
    if (t != "RoCE v2") continue;
    std::ifstream gid(base + "gids/" + std::to_string(i));
    std::string g;
    const std::string v4mapped = "0000:0000:0000:0000:0000:ffff:";
    if (!std::getline(gid, g) || g.compare(0, v4mapped.size(), v4mapped) != 0) continue;
    unsigned hi = std::strtoul(g.substr(30, 4).c_str(), nullptr, 16);
    unsigned lo = std::strtoul(g.substr(35, 4).c_str(), nullptr, 16);
    return std::to_string(hi >> 8) + "." + std::to_string(hi & 0xff) + "." +
           std::to_string(lo >> 8) + "." + std::to_string(lo & 0xff);
  }
  throw Error(NAA_ERR_CONFIG, "NAA_RDMA_DEVICE=" + device +
                                  ": no such RDMA device, or it has no IPv4 RoCEv2 GID");
}

std::string source_address(const std::string &local_ip, const std::string &device) {
  if (!local_ip.empty()) return local_ip;
  return device.empty() ? std::string() : device_ipv4(device);
}

bool have_rdma_devices() {
  int n = 0;
  ibv_device **list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  return n > 0;
}

void require_rdma_devices(const std::string &what) {
  if (!have_rdma_devices())
    throw Error(NAA_ERR_UNSUPPORTED, what + ": this machine has no RDMA device (ibv_get_device_list "
                                     "found none; NAA_TRANSPORT=auto would use ofi+tcp)");
}

// An rdma_cm event channel whose events are read with a deadline.
class CmChannel {
 public:
  CmChannel() : ch_(rdma_create_event_channel()) {
    if (!ch_) fail_errno(NAA_ERR_UNSUPPORTED, "rdma_create_event_channel (is rdma_ucm loaded?)");
    set_nonblocking(ch_->fd, "rdma_cm event channel");
  }

  rdma_event_channel *get() const { return ch_.get(); }
  int fd() const { return ch_->fd; }

  // The next event, or nullptr when none arrives before the deadline (never, if `deadline`
  // has passed: then only an event already queued is returned).
  rdma_cm_event *next(Deadline deadline) {
    for (;;) {
      rdma_cm_event *event = nullptr;
      if (rdma_get_cm_event(ch_.get(), &event) == 0) return event;
      if (errno != EAGAIN && errno != EINTR) fail_errno(NAA_ERR_TRANSPORT, "rdma_get_cm_event");
      if (deadline.expired()) return nullptr;
      pollfd p{ch_->fd, POLLIN, 0};
      ::poll(&p, 1, deadline.remaining_ms(kWaitSliceMs));
    }
  }

 private:
  Owned<rdma_event_channel, rdma_destroy_event_channel> ch_;
};

// IB CM reject reasons that say more than "rejected".
std::string reject_text(const rdma_cm_event &e) {
  std::string text = "rejected";
  if (e.status == 8) text = "no NAA listens on that port (connection rejected: invalid service ID)";
  std::string reason = private_data_text(e.param.conn.private_data, e.param.conn.private_data_len);
  if (!reason.empty()) text = "rejected by the NAA: \"" + reason + "\"";
  return text;
}

// Waits for `want` on `id`; any other outcome is an error naming `what`.
// Returns the event's private data (the peer's accept data, for ESTABLISHED on the client).
std::string expect_event(CmChannel &ch, rdma_cm_event_type want, Deadline deadline,
                         const std::string &what) {
  for (;;) {
    CmEvent e(ch.next(deadline));
    if (!e) throw Error(NAA_ERR_TIMEOUT, what + " timed out (NAA_TIMEOUT)");
    if (e->event == want)
      return e->param.conn.private_data == nullptr
                 ? std::string()
                 : std::string(static_cast<const char *>(e->param.conn.private_data),
                               e->param.conn.private_data_len);
    switch (e->event) {
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
        throw Error(NAA_ERR_UNSUPPORTED, what + ": no RDMA device routes there (" +
                                             std::string(rdma_event_str(e->event)) + ", " +
                                             errno_text(-e->status) + ")");
      case RDMA_CM_EVENT_REJECTED:
        throw Error(NAA_ERR_CONNECTION, what + ": " + reject_text(*e.operator->()));
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        throw Error(NAA_ERR_CONNECTION, what + ": " + rdma_event_str(e->event));
      default:
        NAA_LOG_DEBUG("%s: ignoring rdma_cm event %s", what.c_str(), rdma_event_str(e->event));
    }
  }
}

void resolve(rdma_cm_id *id, CmChannel &ch, const sockaddr_in *src, const sockaddr_in &dst,
             Deadline deadline, const std::string &what) {
  auto *s = reinterpret_cast<sockaddr *>(const_cast<sockaddr_in *>(src));
  auto *d = reinterpret_cast<sockaddr *>(const_cast<sockaddr_in *>(&dst));
  if (rdma_resolve_addr(id, s, d, deadline.remaining_ms(kResolveCapMs)) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, what + ": rdma_resolve_addr");
  expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, what + ": address resolution");
  if (rdma_resolve_route(id, deadline.remaining_ms(kResolveCapMs)) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, what + ": rdma_resolve_route");
  expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, what + ": route resolution");
}

rdma_conn_param spec_conn_param(const void *private_data = nullptr, uint8_t len = 0) {
  rdma_conn_param p{};
  p.initiator_depth = kInitiatorDepth;
  p.responder_resources = kResponderResources;
  p.retry_count = kRetryCount;
  p.rnr_retry_count = kRnrRetryCount;
  p.private_data = private_data;
  p.private_data_len = len;
  return p;
}

class VerbsMemoryRegion : public MemoryRegion {
 public:
  ~VerbsMemoryRegion() override {
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
  ibv_mr *mr = nullptr;
  uint32_t lkey = 0;
};

class VerbsWriteChain : public WriteChain {
 public:
  std::vector<ibv_sge> sges;
  std::vector<ibv_send_wr> wrs;  // linked in order; the last one is the write-with-immediate
};

// Registration pins pages against RLIMIT_MEMLOCK; when that is what failed, say so.
[[noreturn]] void registration_failed(size_t length, int err) {
  std::string why = "registering " + std::to_string(length) + " bytes for RDMA failed: " + errno_text(err);
  rlimit lim{};
  if ((err == ENOMEM || err == EPERM || err == EAGAIN) && getrlimit(RLIMIT_MEMLOCK, &lim) == 0 &&
      lim.rlim_cur != RLIM_INFINITY)
    why += "; the locked-memory limit is " + std::to_string(lim.rlim_cur / 1024) +
           " KiB: raise it with `ulimit -l unlimited` (limits.conf memlock, or the batch "
           "system's resource-limit propagation)";
  throw Error(NAA_ERR_NO_RESOURCES, why);
}

ibv_sge sge_of(const void *buf, size_t length, const MemoryRegion &mr) {
  return {reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(length),
          static_cast<const VerbsMemoryRegion &>(mr).lkey};
}

// A receive or send work request of one scatter-gather entry (none when it is empty).
template <typename WorkRequest>
WorkRequest single_sge(ibv_sge &sge, uint64_t context) {
  WorkRequest wr{};
  wr.wr_id = context;
  wr.sg_list = &sge;
  wr.num_sge = sge.length > 0 ? 1 : 0;
  return wr;
}

class VerbsEndpoint : public Endpoint {
 public:
  // Takes `id` (already resolved, or a connection request migrated to `ch`) and builds the
  // protection domain, completion queue and RC queue pair on its device.
  VerbsEndpoint(std::unique_ptr<CmChannel> ch, CmId id, std::string request_data = {})
      : ch_(std::move(ch)), id_(std::move(id)), peer_data_(std::move(request_data)) {
    peer_ = addr_name(rdma_get_peer_addr(id_.get()));
    open();
  }

  // The members then release the queue pair, CQ, channel, PD, id and event channel, in that order.
  ~VerbsEndpoint() override {
    if (connected_ && !disconnected_) rdma_disconnect(id_.get());
  }

  void connect(Deadline deadline, const std::string &private_data) {
    if (private_data.size() > 56)
      throw Error(NAA_ERR_INTERNAL, "connection private data longer than rdma_cm's 56 bytes");
    rdma_conn_param param =
        spec_conn_param(private_data.data(), static_cast<uint8_t>(private_data.size()));
    if (rdma_connect(id_.get(), &param) != 0) fail_errno(NAA_ERR_CONNECTION, "rdma_connect to " + peer_);
    peer_data_ = expect_event(*ch_, RDMA_CM_EVENT_ESTABLISHED, deadline, "connection to " + peer_);
    connected_ = true;
    log_path();
  }

  void accept(Deadline deadline, const std::string &private_data) override {
    if (private_data.size() > 56)
      throw Error(NAA_ERR_INTERNAL, "accept private data longer than 56 bytes");
    rdma_conn_param param =
        spec_conn_param(private_data.data(), static_cast<uint8_t>(private_data.size()));
    if (rdma_accept(id_.get(), &param) != 0) fail_errno(NAA_ERR_CONNECTION, "rdma_accept of " + peer_);
    expect_event(*ch_, RDMA_CM_EVENT_ESTABLISHED, deadline, "accepting " + peer_);
    connected_ = true;
    log_path();
  }

  void reject(const char *reason) override {
    uint8_t len = reason != nullptr ? static_cast<uint8_t>(std::min<size_t>(strlen(reason) + 1, 140)) : 0;
    rdma_reject(id_.get(), reason, len);
  }

  std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                bool remote_write) override {
    auto region = std::make_unique<VerbsMemoryRegion>();
    region->addr = addr;
    region->length = length;
    region->remote_addr = reinterpret_cast<uint64_t>(addr);
    if (length == 0) return region;  // a zero-length write names no memory
    int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
    region->mr = ibv_reg_mr(pd_.get(), addr, length, access);
    if (region->mr == nullptr) registration_failed(length, errno);
    region->rkey = region->mr->rkey;
    region->lkey = region->mr->lkey;
    return region;
  }

  void post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override {
    ibv_sge sge = sge_of(buf, length, mr);
    auto wr = single_sge<ibv_recv_wr>(sge, context);
    ibv_recv_wr *bad = nullptr;
    if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) post_failed("ibv_post_recv", rc);
  }

  // MRSP sends carry the solicited-event bit: reference peers arm their CQs solicited-only.
  void post_send(const void *buf, size_t length, const MemoryRegion &mr,
                 uint64_t context) override {
    ibv_sge sge = sge_of(buf, length, mr);
    auto wr = single_sge<ibv_send_wr>(sge, context);
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    ibv_send_wr *bad = nullptr;
    if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) post_failed("ibv_post_send", rc);
  }

  bool immediate_consumes_recv() const override { return true; }

  std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                             uint64_t context) override {
    auto chain = std::make_unique<VerbsWriteChain>();
    split_writes(segments, max_msg_, [&](const WriteSegment &s, size_t offset, size_t length) {
      auto *local = static_cast<const VerbsMemoryRegion *>(s.local);
      chain->sges.push_back({reinterpret_cast<uint64_t>(local->addr) + s.offset + offset,
                             static_cast<uint32_t>(length), local->lkey});
      ibv_send_wr wr{};
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.num_sge = length > 0 ? 1 : 0;
      wr.send_flags = length > 0 && length <= max_inline_ ? IBV_SEND_INLINE : 0;
      wr.wr.rdma.remote_addr = s.remote_addr + offset;
      wr.wr.rdma.rkey = s.rkey;
      chain->wrs.push_back(wr);
    });
    if (chain->wrs.size() >= send_depth_)
      throw Error(NAA_ERR_UNSUPPORTED, "a transfer of " + std::to_string(chain->wrs.size()) +
                                           " writes exceeds the send queue (" +
                                           std::to_string(send_depth_) + " work requests)");
    // Only the last write is signalled: RC completes a queue pair's sends in order, so its
    // completion retires the whole chain. It carries the immediate and the solicited bit.
    for (size_t i = 0; i < chain->wrs.size(); ++i) {
      chain->wrs[i].sg_list = &chain->sges[i];
      chain->wrs[i].next = i + 1 < chain->wrs.size() ? &chain->wrs[i + 1] : nullptr;
    }
    ibv_send_wr &last = chain->wrs.back();
    last.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    last.send_flags |= IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    last.wr_id = context;
    return chain;
  }

  void post_writes(WriteChain &chain, uint32_t imm,
                   Deadline::Clock::time_point final_not_before) override {
    auto &wrs = static_cast<VerbsWriteChain &>(chain).wrs;
    wrs.back().imm_data = htonl(imm);  // the spec's immediate is big-endian on the wire
    ibv_send_wr *first = wrs.data();
    ibv_send_wr *bad = nullptr;
    if (final_not_before != Deadline::Clock::time_point{} && wrs.size() > 1) {
      // Paced: the data writes leave now, the write-with-immediate when the guard has passed.
      ibv_send_wr &last_data = wrs[wrs.size() - 2];
      last_data.next = nullptr;
      int rc = ibv_post_send(id_->qp, first, &bad);
      last_data.next = &wrs.back();
      if (rc != 0) post_failed("ibv_post_send", rc);
      first = &wrs.back();
    }
    if (final_not_before != Deadline::Clock::time_point{}) pace_until(final_not_before);
    if (int rc = ibv_post_send(id_->qp, first, &bad); rc != 0) post_failed("ibv_post_send", rc);
  }

  size_t poll(Completion *out, size_t max) override {
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq_.get(), static_cast<int>(std::min<size_t>(max, 16)), wc);
    if (n < 0) throw Error(NAA_ERR_TRANSPORT, "ibv_poll_cq failed on the connection to " + peer_);
    if (n == 0) {
      // Reading a disconnect's event is also what flushes our queue pair (librdmacm does it).
      if (event_checks_.due()) check_cm_events();
      return 0;
    }
    for (int i = 0; i < n; ++i) translate(wc[i], out[i]);
    return static_cast<size_t>(n);
  }

  // Arm, poll once more (a completion between the last poll and the arming would raise no
  // event), then sleep on the completion channel and the CM channel together.
  size_t wait(Completion *out, size_t max, Deadline deadline) override {
    for (;;) {
      if (size_t n = poll(out, max)) return n;
      arm_wait();
      if (size_t n = poll(out, max)) return n;
      if (deadline.expired()) return 0;
      pollfd fds[2] = {{comp_ch_->fd, POLLIN, 0}, {ch_->fd(), POLLIN, 0}};
      ::poll(fds, 2, deadline.remaining_ms(kWaitSliceMs));
    }
  }

  int wait_fd() const override { return comp_ch_->fd; }

  // Consumes the events already signalled (the descriptor stays readable until they are
  // read), then asks for one on the next completion.
  bool arm_wait() override {
    ibv_cq *cq = nullptr;
    void *ctx = nullptr;
    while (ibv_get_cq_event(comp_ch_.get(), &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
    check_cm_events();
    if (ibv_req_notify_cq(cq_.get(), 0) != 0)
      throw Error(NAA_ERR_TRANSPORT, "ibv_req_notify_cq failed on the connection to " + peer_);
    return true;
  }

  const std::string &peer() const override { return peer_; }
  const std::string &peer_data() const override { return peer_data_; }

 private:
  void open() {
    ibv_context *verbs = id_->verbs;
    if (verbs == nullptr) throw Error(NAA_ERR_UNSUPPORTED, "no RDMA device for " + peer_);
    ibv_device_attr dev{};
    if (ibv_query_device(verbs, &dev) != 0) fail_errno(NAA_ERR_TRANSPORT, "ibv_query_device");
    ibv_port_attr port{};
    if (ibv_query_port(verbs, id_->port_num, &port) != 0) fail_errno(NAA_ERR_TRANSPORT, "ibv_query_port");
    max_msg_ = port.max_msg_sz > 0 ? port.max_msg_sz : UINT32_MAX;
    send_depth_ = std::min<uint32_t>(kSendDepth, static_cast<uint32_t>(dev.max_qp_wr));
    int cqe = std::min<int>(static_cast<int>(send_depth_ + kRecvDepth + 4), dev.max_cqe);

    pd_.reset(ibv_alloc_pd(verbs));
    if (!pd_) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_alloc_pd");
    comp_ch_.reset(ibv_create_comp_channel(verbs));
    if (!comp_ch_) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_create_comp_channel");
    set_nonblocking(comp_ch_->fd, "completion channel");
    cq_.reset(ibv_create_cq(verbs, cqe, nullptr, comp_ch_.get(), 0));
    if (!cq_) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_create_cq");

    ibv_qp_init_attr qa{};
    qa.send_cq = cq_.get();
    qa.recv_cq = cq_.get();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = send_depth_;
    qa.cap.max_recv_wr = kRecvDepth;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = kMaxInline;
    if (rdma_create_qp(id_.get(), pd_.get(), &qa) != 0) {
      qa.cap.max_inline_data = 0;  // a device without inline sends still serves
      if (rdma_create_qp(id_.get(), pd_.get(), &qa) != 0) fail_errno(NAA_ERR_NO_RESOURCES, "rdma_create_qp");
    }
    qp_.reset(id_.get());
    max_inline_ = qa.cap.max_inline_data;
  }

  // What rdma_cm chose, so that a wrong device or GID is visible in the log (NAA_LOG_LEVEL=info).
  void log_path() {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(id_->qp, &attr, IBV_QP_AV | IBV_QP_PATH_MTU, &init) != 0) return;
    ibv_gid gid{};
    ibv_query_gid(id_->verbs, id_->port_num, attr.ah_attr.grh.sgid_index, &gid);
    NAA_LOG_INFO("verbs: %s <-> %s on %s port %u, GID index %u (%s), path MTU %d, max message %zu, inline %u",
                 addr_name(rdma_get_local_addr(id_.get())).c_str(), peer_.c_str(),
                 ibv_get_device_name(id_->verbs->device), static_cast<unsigned>(id_->port_num),
                 static_cast<unsigned>(attr.ah_attr.grh.sgid_index), gid_text(gid).c_str(),
                 128 << attr.path_mtu, max_msg_, max_inline_);
  }

  [[noreturn]] void post_failed(const char *what, int rc) {
    check_cm_events();
    throw Error(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_ + " failed: " + errno_text(rc));
  }

  // A disconnect is noticed here; reading the event also moves our queue pair to the error
  // state (librdmacm does it), which flushes whatever was posted.
  void check_cm_events() {
    for (;;) {
      CmEvent e(ch_->next(Deadline::after(std::chrono::milliseconds(0))));
      if (!e) return;
      switch (e->event) {
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
          disconnected_ = true;
          throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " disconnected (" +
                                              rdma_event_str(e->event) + ")");
        default:
          NAA_LOG_DEBUG("connection to %s: rdma_cm event %s", peer_.c_str(), rdma_event_str(e->event));
      }
    }
  }

  void translate(const ibv_wc &wc, Completion &c) {
    if (wc.status != IBV_WC_SUCCESS) completion_failed(wc);
    c.context = wc.wr_id;
    c.bytes = wc.byte_len;
    c.imm = 0;
    switch (wc.opcode) {
      case IBV_WC_SEND: c.kind = CompletionKind::Send; break;
      case IBV_WC_RDMA_WRITE: c.kind = CompletionKind::Writes; break;
      case IBV_WC_RECV_RDMA_WITH_IMM:
        c.kind = CompletionKind::RemoteImm;
        c.context = 0;
        c.imm = ntohl(wc.imm_data);
        break;
      default: c.kind = CompletionKind::Recv; break;
    }
  }

  [[noreturn]] void completion_failed(const ibv_wc &wc) {
    const std::string status = ibv_wc_status_str(wc.status);
    switch (wc.status) {
      case IBV_WC_WR_FLUSH_ERR:
        check_cm_events();  // a disconnect is the usual reason: report that
        throw Error(NAA_ERR_CONNECTION, "connection to " + peer_ + " broke (" + status + ")");
      case IBV_WC_RETRY_EXC_ERR:
        throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " stopped answering (" + status + ")");
      case IBV_WC_RNR_RETRY_EXC_ERR:
        throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " posted no receive in time (" + status + ")");
      case IBV_WC_REM_ACCESS_ERR:
        throw Error(NAA_ERR_PROTOCOL, "peer " + peer_ + " refused a write: address or key outside "
                                      "what it advertised (" + status + ")");
      default:
        throw Error(NAA_ERR_TRANSPORT, "operation to " + peer_ + " failed: " + status +
                                           " (vendor error " + std::to_string(wc.vendor_err) + ")");
    }
  }

  std::unique_ptr<CmChannel> ch_;
  CmId id_;
  std::string peer_data_;
  std::string peer_;
  Owned<ibv_pd, ibv_dealloc_pd> pd_;
  Owned<ibv_comp_channel, ibv_destroy_comp_channel> comp_ch_;
  Owned<ibv_cq, ibv_destroy_cq> cq_;
  // The id again, not owned: what it destroys is the queue pair rdma_create_qp made on it.
  Owned<rdma_cm_id, rdma_destroy_qp> qp_;
  size_t max_msg_ = UINT32_MAX;
  uint32_t send_depth_ = kSendDepth;
  uint32_t max_inline_ = 0;
  EventCheckPacer event_checks_;
  bool connected_ = false;
  bool disconnected_ = false;
};

CmId create_id(CmChannel &ch) {
  rdma_cm_id *id = nullptr;
  if (rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, "rdma_create_id");
  return CmId(id);
}

// An id on `ch` with its address and route to `host`:`port` resolved, from NAA_LOCAL_IP's address
// or NAA_RDMA_DEVICE's (neither: rdma_cm's choice).
CmId resolved_id(CmChannel &ch, const std::string &host, uint16_t port, const std::string &local_ip,
                 const std::string &device, Deadline deadline, const std::string &what) {
  sockaddr_in dst = resolve_ipv4(host, port, NAA_ERR_CONNECTION);
  std::string source = source_address(local_ip, device);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (!source.empty()) src.sin_addr = local_ipv4(source);
  CmId id = create_id(ch);
  resolve(id.get(), ch, source.empty() ? nullptr : &src, dst, deadline, what);
  return id;
}

class VerbsListener : public Listener {
 public:
  VerbsListener(const std::string &host, uint16_t port) : id_(create_id(ch_)) {
    sockaddr_in sa = resolve_ipv4(host, port, NAA_ERR_CONFIG);
    if (rdma_bind_addr(id_.get(), reinterpret_cast<sockaddr *>(&sa)) != 0)
      fail_errno(NAA_ERR_CONNECTION, "cannot bind rdma_cm to " + addr_name(reinterpret_cast<sockaddr *>(&sa)));
    if (rdma_listen(id_.get(), kBacklog) != 0) fail_errno(NAA_ERR_CONNECTION, "rdma_listen");
    port_ = ntohs(rdma_get_src_port(id_.get()));
    if (id_->verbs != nullptr)
      NAA_LOG_INFO("verbs: listening on %s:%u, device %s", host.c_str(), port_,
                   ibv_get_device_name(id_->verbs->device));
  }

  uint16_t port() const override { return port_; }

  std::unique_ptr<Endpoint> next_request(Deadline deadline) override {
    for (;;) {
      CmEvent e(ch_.next(deadline));
      if (!e) return nullptr;
      if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        NAA_LOG_WARN("verbs listener: rdma_cm event %s", rdma_event_str(e->event));
        continue;
      }
      std::string data;
      if (e->param.conn.private_data != nullptr)
        data.assign(static_cast<const char *>(e->param.conn.private_data), e->param.conn.private_data_len);
      CmId id(e->id);  // a request's id is ours once its event is acked
      e.reset();
      // Each connection gets its own event channel, so that its thread sees only its events.
      auto ch = std::make_unique<CmChannel>();
      if (rdma_migrate_id(id.get(), ch->get()) != 0) fail_errno(NAA_ERR_TRANSPORT, "rdma_migrate_id");
      return std::make_unique<VerbsEndpoint>(std::move(ch), std::move(id), std::move(data));
    }
  }

 private:
  CmChannel ch_;
  CmId id_;  // after ch_: destroyed before it
  uint16_t port_ = 0;
};

class VerbsTransport : public Transport {
 public:
  explicit VerbsTransport(std::string device) : device_(std::move(device)) {}
  const char *name() const override { return "verbs"; }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data) override {
    const std::string what = "NAA " + host + ":" + std::to_string(port);
    require_rdma_devices(what);
    auto ch = std::make_unique<CmChannel>();
    CmId id = resolved_id(*ch, host, port, local_ip, device_, deadline, what);
    auto ep = std::make_unique<VerbsEndpoint>(std::move(ch), std::move(id));
    ep->connect(deadline, private_data);
    return ep;
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    require_rdma_devices("listening on " + host);
    return std::make_unique<VerbsListener>(host, port);
  }

 private:
  const std::string device_;
};

}  // namespace

std::unique_ptr<Transport> open_verbs_transport(const std::string &device) {
  return std::make_unique<VerbsTransport>(device);
}

bool verbs_routes_to(const std::string &host, const std::string &local_ip,
                     const std::string &device, Deadline deadline) {
  if (!have_rdma_devices()) return false;
  try {
    CmChannel ch;
    return resolved_id(ch, host, 0, local_ip, device, deadline, host)->verbs != nullptr;
  } catch (const Error &e) {
    NAA_LOG_DEBUG("verbs does not reach %s: %s", host.c_str(), e.what());
    return false;
  }
}

bool verbs_can_listen_on(const std::string &host) {
  if (!have_rdma_devices()) return false;
  try {
    CmChannel ch;
    CmId id = create_id(ch);
    sockaddr_in sa = resolve_ipv4(host, 0, NAA_ERR_CONFIG);
    // The wildcard binds to no device, and listens on all of them.
    return rdma_bind_addr(id.get(), reinterpret_cast<sockaddr *>(&sa)) == 0 &&
           (id.get()->verbs != nullptr || sa.sin_addr.s_addr == htonl(INADDR_ANY));
  } catch (const Error &) {
    return false;
  }
}

}  // namespace naa::transport
