// One client of the software NAA: MRSP, then invocations until the client disconnects, the
// server stops, or the client misbehaves. Runs on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "kernels.hpp"
#include "memory_budget.hpp"
#include "mrsp.hpp"
#include "naa_kernel.h"
#include "transport/transport.hpp"

namespace naa::server {

class Connection {
 public:
  Connection(std::unique_ptr<transport::Endpoint> ep, const KernelRegistry &kernels,
             MemoryBudget &budget, std::chrono::milliseconds mrsp_timeout,
             const std::atomic<bool> &stop);
  ~Connection();

  void run();  // never throws; returns when the session is over

 private:
  struct Buffer {  // one NAA-side region, page-aligned and zero-filled by mmap
    void *addr = nullptr;
    size_t size = 0;
    uint8_t flags = 0;
  };

  bool exchange_memory_regions();
  bool allocate(const std::vector<mrsp::RequestEntry> &request, uint8_t *error_code);
  void send_mrsp(const uint8_t *msg, size_t len);
  void invoke(uint32_t imm);
  void post_invocation_recv();

  const KernelRegistry &kernels_;
  MemoryBudget &budget_;
  const std::chrono::milliseconds mrsp_timeout_;
  const std::atomic<bool> &stop_;
  uint64_t reserved_ = 0;
  std::vector<Buffer> buffers_;                // every requested region, internal ones too
  std::vector<naa_kernel_region> parameters_;  // the non-internal ones, for the kernels
  uint64_t invocations_ = 0;

  // Declared before everything registered with it (destroyed after them).
  std::unique_ptr<transport::Endpoint> ep_;
  std::vector<uint8_t> mrsp_buf_;  // [receive | send]
  std::unique_ptr<transport::MemoryRegion> mrsp_mr_;
  std::vector<std::unique_ptr<transport::MemoryRegion>> buffer_mrs_;
  std::unique_ptr<transport::WriteChain> reply_chain_;
};

}  // namespace naa::server
