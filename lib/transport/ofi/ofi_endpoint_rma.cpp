// SPDX-License-Identifier: BSD-3-Clause
// An OfiEndpoint's memory regions and its chains of RMA writes (fi_writemsg), the last of which
// carries the immediate.
#include "transport/ofi/ofi_endpoint.hpp"

#include <rdma/fi_rma.h>

#include <algorithm>

#include "transport/split_writes.hpp"

namespace naa::transport::ofi {
namespace {

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

}  // namespace

std::unique_ptr<MemoryRegion> OfiEndpoint::register_memory(void *addr, size_t length,
                                                           bool remote_write) {
  open_once();
  auto region = std::make_unique<OfiMemoryRegion>();
  uint64_t access = FI_SEND | FI_RECV | FI_WRITE | (remote_write ? FI_REMOTE_WRITE : 0);
  region->registration = context_->register_memory(addr, length, access, ep_);
  fid_mr *mr = region->registration->mr;
  uint64_t granted = fi_mr_key(mr);
  if (granted > UINT32_MAX)
    throw Error(NAA_ERR_UNSUPPORTED, "provider " + std::string(info_->fabric_attr->prov_name) +
                                         " hands out memory keys wider than MRSP's 32 bits");
  region->addr = addr;
  region->length = length;
  region->rkey = static_cast<uint32_t>(granted);
  region->remote_addr = virt_addr_ ? reinterpret_cast<uint64_t>(addr) : 0;
  region->desc = fi_mr_desc(mr);
  return region;
}

std::unique_ptr<WriteChain> OfiEndpoint::prepare_writes(const std::vector<WriteSegment> &segments,
                                                        uint64_t context) {
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
    // In a fenced chain the data writes complete on their own (see post_writes).
    op.msg.context = !ordered_writes_ ? &fence_context_ : reinterpret_cast<void *>(context);
  }
  chain->ops.back().msg.context = reinterpret_cast<void *>(context);
  return chain;
}

// Where the provider keeps writes in order and completes them in order (every MSG endpoint: we
// ask for FI_ORDER_WAW and FI_ORDER_STRICT), only the last write asks for a completion, which
// stands for the whole chain. Where it promises neither (shm: msg_order SAS only, comp_order
// none) the final write, whose immediate tells the peer the data is there, waits until the
// data writes have completed: a fence. A chain of one write (one region) waits for nothing.
void OfiEndpoint::post_writes(WriteChain &chain, uint32_t imm) {
  post_data_writes(chain);
  post_final_write(chain, imm);
}

void OfiEndpoint::post_data_writes(WriteChain &chain) {
  auto &ops = static_cast<OfiWriteChain &>(chain).ops;
  const uint64_t flags = ordered_writes_ ? 0 : FI_COMPLETION;
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    retry_post("fi_writemsg", [&] { return fi_writemsg(ep_, &ops[i].msg, flags); });
    if (!ordered_writes_) ++fence_pending_;
  }
  size_t largest = 0;
  for (size_t i = 0; i + 1 < ops.size(); ++i) largest = std::max(largest, ops[i].iov.iov_len);
  if (ops.size() > 1) wake_peer(largest);  // shm: its progress moves segmented writes
}

void OfiEndpoint::post_final_write(WriteChain &chain, uint32_t imm) {
  auto &ops = static_cast<OfiWriteChain &>(chain).ops;
  const size_t last = ops.size() - 1;
  if (!ordered_writes_) wait_fence();
  ops[last].msg.data = imm;
  retry_post("fi_writemsg",
             [&] { return fi_writemsg(ep_, &ops[last].msg, FI_REMOTE_CQ_DATA | FI_COMPLETION); });
  ++tx_pending_;
  ++imms_sent_;
  wake_peer(ops[last].iov.iov_len);
}

void OfiEndpoint::wait_fence() {
  if (fence_pending_ == 0) return;  // no clock read for the deadline of a wait not needed
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

}  // namespace naa::transport::ofi
