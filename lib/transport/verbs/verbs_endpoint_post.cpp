// SPDX-License-Identifier: BSD-3-Clause
// What a VerbsEndpoint posts: memory registrations, MRSP sends and receives, and each
// invocation's pre-built chain of RDMA WRITEs ending in a WRITE WITH IMM, all posted by a single
// ibv_post_send.
#include "transport/verbs/verbs_endpoint.hpp"

#include <arpa/inet.h>
#include <sys/resource.h>

#include <cerrno>

#include "error.hpp"
#include "transport/split_writes.hpp"

namespace naa::transport::verbs {
namespace {

class VerbsWriteChain : public WriteChain {
 public:
  std::vector<ibv_sge> sges;
  std::vector<ibv_send_wr> wrs;  // linked in order; the last one is the write-with-immediate
};

// Registration pins pages against RLIMIT_MEMLOCK; when that is what failed, say so.
[[noreturn]] void registration_failed(size_t length, int err) {
  std::string why =
      "registering " + std::to_string(length) + " bytes for RDMA failed: " + errno_text(err);
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

}  // namespace

std::unique_ptr<MemoryRegion> VerbsEndpoint::register_memory(void *addr, size_t length,
                                                             bool remote_write) {
  auto region = std::make_unique<VerbsMemoryRegion>();
  region->addr = addr;
  region->length = length;
  region->remote_addr = reinterpret_cast<uint64_t>(addr);
  if (length == 0) return region;  // a zero-length write names no memory
  int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
  region->registration = context_->register_memory(addr, length, access);
  if (!region->registration) registration_failed(length, errno);
  region->rkey = region->registration->mr->rkey;
  region->lkey = region->registration->mr->lkey;
  return region;
}

void VerbsEndpoint::post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) {
  ibv_sge sge = sge_of(buf, length, mr);
  auto wr = single_sge<ibv_recv_wr>(sge, context);
  ibv_recv_wr *bad = nullptr;
  if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) post_failed("ibv_post_recv", rc);
}

// MRSP sends carry the solicited-event bit: reference peers arm their CQs solicited-only.
void VerbsEndpoint::post_send(const void *buf, size_t length, const MemoryRegion &mr,
                              uint64_t context) {
  ibv_sge sge = sge_of(buf, length, mr);
  auto wr = single_sge<ibv_send_wr>(sge, context);
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
  ibv_send_wr *bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) post_failed("ibv_post_send", rc);
}

std::unique_ptr<WriteChain> VerbsEndpoint::prepare_writes(const std::vector<WriteSegment> &segments,
                                                          uint64_t context) {
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

// One ibv_post_send for the whole chain.
void VerbsEndpoint::post_writes(WriteChain &chain, uint32_t imm) {
  auto &wrs = static_cast<VerbsWriteChain &>(chain).wrs;
  wrs.back().imm_data = htonl(imm);  // the spec's immediate is big-endian on the wire
  ibv_send_wr *bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, wrs.data(), &bad); rc != 0) post_failed("ibv_post_send", rc);
}

// Paced: the data writes leave now (the list cut before the write-with-immediate)...
void VerbsEndpoint::post_data_writes(WriteChain &chain) {
  auto &wrs = static_cast<VerbsWriteChain &>(chain).wrs;
  if (wrs.size() < 2) return;
  ibv_send_wr &last_data = wrs[wrs.size() - 2];
  last_data.next = nullptr;
  ibv_send_wr *bad = nullptr;
  int rc = ibv_post_send(id_->qp, wrs.data(), &bad);
  last_data.next = &wrs.back();
  if (rc != 0) post_failed("ibv_post_send", rc);
}

// ...and the write-with-immediate when the guard has passed.
void VerbsEndpoint::post_final_write(WriteChain &chain, uint32_t imm) {
  auto &wrs = static_cast<VerbsWriteChain &>(chain).wrs;
  wrs.back().imm_data = htonl(imm);
  ibv_send_wr *bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wrs.back(), &bad); rc != 0) post_failed("ibv_post_send", rc);
}

void VerbsEndpoint::post_failed(const char *what, int rc) {
  check_connection();
  throw Error(NAA_ERR_TRANSPORT, std::string(what) + " to " + peer_ + " failed: " + errno_text(rc));
}

}  // namespace naa::transport::verbs
