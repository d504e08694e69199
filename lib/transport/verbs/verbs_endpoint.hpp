// SPDX-License-Identifier: BSD-3-Clause
// A verbs Endpoint: one RC queue pair on the device rdma_cm chose for its id. Its definitions:
// verbs_endpoint.cpp (opening, connecting, the connection's rdma_cm events, completions),
// verbs_endpoint_post.cpp (memory regions, sends and receives, write chains). Private to
// lib/transport.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/event_check.hpp"
#include "transport/transport.hpp"
#include "transport/verbs/verbs_cm.hpp"
#include "transport/verbs/verbs_context.hpp"

namespace naa::transport::verbs {

// Send queue depth: one chain in flight per connection, so this bounds the writes per chain.
inline constexpr uint32_t kSendDepth = 1024;

class VerbsMemoryRegion : public MemoryRegion {
 public:
  std::shared_ptr<VerbsRegistration> registration;  // perhaps shared with other handles
  uint32_t lkey = 0;
};

class VerbsEndpoint : public Endpoint {
 public:
  // verbs_endpoint.cpp
  // Takes `id` (already resolved, or a connection request migrated to `ch`) and builds the
  // RC queue pair on its device, on a completion queue of the device's Context.
  VerbsEndpoint(std::unique_ptr<CmChannel> ch, CmId id, std::string request_data = {});
  ~VerbsEndpoint() override;

  void connect(Deadline deadline, const std::string &private_data);
  void accept(Deadline deadline, const std::string &private_data) override;
  void reject(const char *reason) override;

  size_t poll(Completion *out, size_t max) override;
  size_t wait(Completion *out, size_t max, Deadline deadline) override;
  bool wait_sleeps_through() const override { return true; }
  int wait_fd() const override { return cq_->wait_fd(); }
  bool arm_wait() override;
  void check_connection() override;

  const std::string &peer() const override { return peer_; }
  const std::string &peer_data() const override { return peer_data_; }

  // verbs_endpoint_post.cpp
  std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                bool remote_write) override;
  void post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override;
  void post_send(const void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override;
  bool immediate_consumes_recv() const override { return true; }
  std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                             uint64_t context) override;
  void post_writes(WriteChain &chain, uint32_t imm) override;
  void post_data_writes(WriteChain &chain) override;
  void post_final_write(WriteChain &chain, uint32_t imm) override;

 private:
  // verbs_endpoint.cpp
  void open();
  void log_path();
  // Reads the rdma_cm events that came: whether the peer is gone (disconnect_ says how).
  bool notice_disconnect();
  // A successful work completion as a Completion.
  void translate(const ibv_wc &wc, Completion &c);
  [[noreturn]] void completion_failed(const ibv_wc &wc);

  // verbs_endpoint_post.cpp
  [[noreturn]] void post_failed(const char *what, int rc);

  std::unique_ptr<CmChannel> ch_;
  CmId id_;
  std::string peer_data_;
  std::string peer_;
  std::shared_ptr<VerbsContext> context_;  // the protection domain and the shared CQs
  std::unique_ptr<CqMember> cq_;           // this queue pair's share of one of them
  // The id again, not owned: what it destroys is the queue pair rdma_create_qp made on it.
  Owned<rdma_cm_id, rdma_destroy_qp> qp_;
  size_t max_msg_ = UINT32_MAX;
  uint32_t send_depth_ = kSendDepth;
  uint32_t max_inline_ = 0;
  EventCheckPacer event_checks_;
  bool connected_ = false;
  bool disconnected_ = false;
  std::string disconnect_;        // why, once disconnected_
  std::optional<ibv_wc> failed_;  // a failed completion polled after good ones, for next poll()
};

}  // namespace naa::transport::verbs
