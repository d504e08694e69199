// SPDX-License-Identifier: BSD-3-Clause
// A VerbsEndpoint's queue pair and its connection: opening it on the id's device, connecting and
// accepting, the rdma_cm events that say it broke, and its completions.
#include "transport/verbs/verbs_endpoint.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <climits>
#include <chrono>
#include <cstring>

#include "error.hpp"
#include "diag/log.hpp"

namespace naa::transport::verbs {
namespace {

constexpr uint32_t kRecvDepth = 4;  // MRSP receive + the receive for the peer's immediate
// Writes up to this size travel inline in the work request: no DMA read of the payload.
constexpr uint32_t kMaxInline = 256;

}  // namespace

VerbsEndpoint::VerbsEndpoint(std::unique_ptr<CmChannel> ch, CmId id, std::string request_data)
    : ch_(std::move(ch)), id_(std::move(id)), peer_data_(std::move(request_data)) {
  peer_ = addr_name(rdma_get_peer_addr(id_.get()));
  open();
}

// The queue pair goes with its share of the CQ (verbs_shared_cq.hpp); the members then release
// the Context (the PD and CQs, when this was its last user), id and event channel.
VerbsEndpoint::~VerbsEndpoint() {
  if (connected_ && !disconnected_) rdma_disconnect(id_.get());
  if (cq_) cq_->leave([this] { qp_.reset(); });
}

void VerbsEndpoint::open() {
  ibv_context *verbs = id_->verbs;
  if (verbs == nullptr) throw Error(NAA_ERR_UNSUPPORTED, "no RDMA device for " + peer_);
  ibv_device_attr dev{};
  if (ibv_query_device(verbs, &dev) != 0) fail_errno(NAA_ERR_TRANSPORT, "ibv_query_device");
  ibv_port_attr port{};
  if (ibv_query_port(verbs, id_->port_num, &port) != 0)
    fail_errno(NAA_ERR_TRANSPORT, "ibv_query_port");
  max_msg_ = port.max_msg_sz > 0 ? port.max_msg_sz : UINT32_MAX;
  send_depth_ = std::min<uint32_t>(kSendDepth, static_cast<uint32_t>(dev.max_qp_wr));
  // Every work request posted may come back as a completion (a queue pair in error flushes the
  // unsignalled ones too), so this many entries of the shared CQ are the queue pair's: a chain
  // is shorter than the send queue, and an MRSP send and the receives come on top (+ slack).
  const auto slots =
      std::min<uint32_t>(send_depth_ + kRecvDepth + 4, static_cast<uint32_t>(dev.max_cqe));

  context_ = VerbsContext::acquire(verbs);
  cq_ = context_->cqs.join(slots);

  ibv_qp_init_attr qa{};
  qa.send_cq = cq_->cq();
  qa.recv_cq = cq_->cq();
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 0;
  qa.cap.max_send_wr = send_depth_;
  qa.cap.max_recv_wr = kRecvDepth;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = kMaxInline;
  if (rdma_create_qp(id_.get(), context_->pd, &qa) != 0) {
    qa.cap.max_inline_data = 0;  // a device without inline sends still serves
    if (rdma_create_qp(id_.get(), context_->pd, &qa) != 0)
      fail_errno(NAA_ERR_NO_RESOURCES, "rdma_create_qp");
  }
  qp_.reset(id_.get());
  cq_->attach(id_->qp->qp_num);
  max_inline_ = qa.cap.max_inline_data;
}

void VerbsEndpoint::connect(Deadline deadline, const std::string &private_data) {
  rdma_conn_param param = spec_conn_param(private_data);
  if (rdma_connect(id_.get(), &param) != 0)
    fail_errno(NAA_ERR_CONNECTION, "rdma_connect to " + peer_);
  peer_data_ = expect_event(*ch_, RDMA_CM_EVENT_ESTABLISHED, deadline, "connection to " + peer_);
  connected_ = true;
  log_path();
}

void VerbsEndpoint::accept(Deadline deadline, const std::string &private_data) {
  rdma_conn_param param = spec_conn_param(private_data);
  if (rdma_accept(id_.get(), &param) != 0)
    fail_errno(NAA_ERR_CONNECTION, "rdma_accept of " + peer_);
  expect_event(*ch_, RDMA_CM_EVENT_ESTABLISHED, deadline, "accepting " + peer_);
  connected_ = true;
  log_path();
}

void VerbsEndpoint::reject(const char *reason) {
  uint8_t len =
      reason != nullptr ? static_cast<uint8_t>(std::min<size_t>(strlen(reason) + 1, 140)) : 0;
  rdma_reject(id_.get(), reason, len);
}

// What rdma_cm chose, so that a wrong device or GID is visible in the log (NAA_LOG_LEVEL=info).
void VerbsEndpoint::log_path() {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(id_->qp, &attr, IBV_QP_AV | IBV_QP_PATH_MTU, &init) != 0) return;
  ibv_gid gid{};
  ibv_query_gid(id_->verbs, id_->port_num, attr.ah_attr.grh.sgid_index, &gid);
  NAA_LOG_INFO(
      "verbs: %s <-> %s on %s port %u, GID index %u (%s), path MTU %d, max message %zu, inline %u",
      addr_name(rdma_get_local_addr(id_.get())).c_str(), peer_.c_str(),
      ibv_get_device_name(id_->verbs->device), static_cast<unsigned>(id_->port_num),
      static_cast<unsigned>(attr.ah_attr.grh.sgid_index), gid_text(gid).c_str(),
      128 << attr.path_mtu, max_msg_, max_inline_);
}

// Reading a disconnect's event also moves our queue pair to the error state (librdmacm does
// it), which flushes whatever was posted. The disconnect is noted, not thrown: what the peer
// sent before it disconnected may still be in the CQ (an NAA's MRSP error answer, sent just
// before it tears the connection down), and poll() hands that out first.
bool VerbsEndpoint::notice_disconnect() {
  while (!disconnected_) {
    CmEvent e(ch_->next(Deadline::after(std::chrono::milliseconds(0))));
    if (!e) break;
    switch (e->event) {
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
      case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        disconnected_ = true;
        disconnect_ = "peer " + peer_ + " disconnected (" + rdma_event_str(e->event) + ")";
        break;
      default:
        NAA_LOG_DEBUG("connection to %s: rdma_cm event %s", peer_.c_str(),
                      rdma_event_str(e->event));
    }
  }
  return disconnected_;
}

void VerbsEndpoint::check_connection() {
  if (notice_disconnect()) throw Error(NAA_ERR_CONNECTION, disconnect_);
}

// The completions come in the CQ's order up to the first failed one, which is thrown at the
// next call, so that those before it are not lost with it. After a disconnect, the CQ is
// polled once more before it is reported: a completion that came before the disconnect's event
// was read is in the CQ by then.
size_t VerbsEndpoint::poll(Completion *out, size_t max) {
  if (failed_) {
    const ibv_wc wc = *failed_;
    failed_.reset();
    completion_failed(wc);
  }
  ibv_wc wc[16];
  size_t n = cq_->poll(wc, std::min<size_t>(max, 16));
  if (n == 0) {
    if (!disconnected_ && !event_checks_.due()) return 0;
    if (!notice_disconnect()) return 0;
    n = cq_->poll(wc, std::min<size_t>(max, 16));
    if (n == 0) throw Error(NAA_ERR_CONNECTION, disconnect_);
  }
  for (size_t i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (i == 0) completion_failed(wc[i]);
      failed_ = wc[i];
      return i;
    }
    translate(wc[i], out[i]);
  }
  return n;
}

// Arm (which looks at the CQ once more: a completion between the last poll and the arming
// would raise no event), then sleep on the queue pair's bell and the CM channel together, and
// the interrupt descriptor: a completion, a disconnect's event and a stop each wake it, so it
// sleeps to the deadline without slices.
size_t VerbsEndpoint::wait(Completion *out, size_t max, Deadline deadline) {
  for (;;) {
    if (size_t n = poll(out, max)) return n;
    if (!arm_wait()) continue;
    if (deadline.expired()) return 0;
    pollfd fds[3] = {
        {cq_->wait_fd(), POLLIN, 0}, {ch_->fd(), POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    ::poll(fds, interrupt_fd_ >= 0 ? 3 : 2, deadline.remaining_ms(INT_MAX));
    if (interrupt_fd_ >= 0 && fds[2].revents != 0) return 0;
  }
}

// The bell rings when a completion for this queue pair is found by the Context's thread, which
// watches the shared CQs' completion channel while an endpoint is armed.
bool VerbsEndpoint::arm_wait() {
  if (notice_disconnect()) return false;  // poll() hands out what the CQ holds, then reports it
  context_->cqs.watch();
  return cq_->arm();
}

void VerbsEndpoint::translate(const ibv_wc &wc, Completion &c) {
  c.context = wc.wr_id;
  c.bytes = wc.byte_len;
  c.imm = 0;
  switch (wc.opcode) {
    case IBV_WC_SEND:
      c.kind = CompletionKind::Send;
      break;
    case IBV_WC_RDMA_WRITE:
      c.kind = CompletionKind::Writes;
      break;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      c.kind = CompletionKind::RemoteImm;
      c.context = 0;
      c.imm = ntohl(wc.imm_data);
      break;
    default:
      c.kind = CompletionKind::Recv;
      break;
  }
}

void VerbsEndpoint::completion_failed(const ibv_wc &wc) {
  const std::string status = ibv_wc_status_str(wc.status);
  switch (wc.status) {
    case IBV_WC_WR_FLUSH_ERR:
      check_connection();  // a disconnect is the usual reason: report that
      throw Error(NAA_ERR_CONNECTION, "connection to " + peer_ + " broke (" + status + ")");
    case IBV_WC_RETRY_EXC_ERR:
      throw Error(NAA_ERR_CONNECTION, "peer " + peer_ + " stopped answering (" + status + ")");
    case IBV_WC_RNR_RETRY_EXC_ERR:
      throw Error(NAA_ERR_CONNECTION,
                  "peer " + peer_ + " posted no receive in time (" + status + ")");
    case IBV_WC_REM_ACCESS_ERR:
      throw Error(NAA_ERR_PROTOCOL, "peer " + peer_ +
                                        " refused a write: address or key outside "
                                        "what it advertised (" +
                                        status + ")");
    default:
      throw Error(NAA_ERR_TRANSPORT, "operation to " + peer_ + " failed: " + status +
                                         " (vendor error " + std::to_string(wc.vendor_err) + ")");
  }
}

}  // namespace naa::transport::verbs
