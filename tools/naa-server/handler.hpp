// SPDX-License-Identifier: BSD-3-Clause
// What one client's bytes make the software NAA do, without any transport: decode and check its
// MRSP request, allocate the regions within the memory budget, and turn each invocation
// immediate into a reply. Connection feeds it from the network; the fuzz target feeds it raw
// bytes, so both exercise the same code.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel_worker.hpp"
#include "kernels.hpp"
#include "memory_budget.hpp"
#include "protocol/mrsp.hpp"
#include "region_pool.hpp"
#include "naa_kernel.h"

namespace naa::server {

class Handler {
 public:
  // `stop` (may be null) is the server's stop flag: a running isolated kernel is abandoned.
  // `peer_host` is whose share of the budget the regions count against. `pool` (may be null):
  // where the regions come from when it holds their sizes, and go back to.
  Handler(const KernelRegistry &kernels, MemoryBudget &budget, const KernelPolicy &policy,
          const std::atomic<bool> *stop, std::string peer_host = {}, RegionPool *pool = nullptr);
  ~Handler();
  Handler(const Handler &) = delete;
  Handler &operator=(const Handler &) = delete;

  // Handles the client's MRSP message (len bytes as received). Returns 0 when the regions are
  // allocated, else the MRSP error code to answer with; *why names the cause for the log.
  // `may_wait`: a server out of descriptors waits a while for them (not on the listening thread).
  uint8_t on_mrsp(const uint8_t *msg, size_t len, std::string *why, bool may_wait = true);
  // Undoes on_mrsp, refused or not: the regions go back, the budget is released, and the next
  // on_mrsp starts afresh.
  void withdraw();

  // After a successful on_mrsp: every requested region in request order (internal ones too).
  const std::vector<SharedRegion> &regions() const { return regions_; }
  const std::vector<protocol::mrsp::RequestEntry> &request() const { return request_; }
  // The non-internal ones, which the advertisement lists.
  const std::vector<naa_kernel_region> &parameters() const { return parameters_; }
  uint64_t reserved() const { return reserved_; }
  const KernelRegistry &kernels() const { return kernels_; }
  // After on_mrsp refused the regions for the memory budget: what was asked and what was left.
  const std::optional<protocol::mrsp::MemoryLimit> &memory_refusal() const {
    return memory_refusal_;
  }

  // The return code to answer the immediate V with, or nothing for V = 0 (the host's "no
  // invocation" signal, which must not run a kernel and gets no reply).
  std::optional<uint8_t> on_immediate(uint32_t v, const std::string &peer);
  // The microjoules the node's counters advanced over the last on_immediate's kernel run;
  // nothing where no kernel ran or the energy is unknown (NAA_ENERGY, kernel_energy.hpp).
  const std::optional<uint64_t> &last_kernel_uj() const { return last_kernel_uj_; }

 private:
  int new_region(size_t size, SharedRegion *r, std::string *why, bool may_wait);

  const KernelRegistry &kernels_;
  MemoryBudget &budget_;
  const std::string peer_host_;
  RegionPool *const pool_;
  KernelRunner runner_;
  uint64_t reserved_ = 0;
  std::optional<protocol::mrsp::MemoryLimit> memory_refusal_;
  std::vector<protocol::mrsp::RequestEntry> request_;
  std::vector<SharedRegion> regions_;
  std::vector<naa_kernel_region> parameters_;  // the non-internal regions, for the kernels
  std::optional<uint64_t> last_kernel_uj_;
};

}  // namespace naa::server
