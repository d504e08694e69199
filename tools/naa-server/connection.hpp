// SPDX-License-Identifier: BSD-3-Clause
// One client of the software NAA: MRSP, then invocations until the client disconnects, the
// server stops, or the client misbehaves. Runs on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "client_cpu.hpp"
#include "handler.hpp"
#include "kernel_worker.hpp"
#include "kernels.hpp"
#include "memory_budget.hpp"
#include "protocol/energy_report.hpp"
#include "protocol/mrsp.hpp"
#include "progress/busy_node.hpp"
#include "progress/spin_budget.hpp"
#include "wait_plan.hpp"
#include "stop_signal.hpp"
#include "transport/transport.hpp"

namespace naa::server {

class Connection final : private progress::PeerBeside {
 public:
  // idle_timeout: the session ends when this long passes without an invocation (0: never).
  Connection(std::unique_ptr<transport::Endpoint> ep, const KernelRegistry &kernels,
             MemoryBudget &budget, const KernelPolicy &policy,
             std::chrono::milliseconds mrsp_timeout, std::chrono::milliseconds idle_timeout,
             std::chrono::microseconds spin, bool adaptive,
             std::chrono::microseconds reference_guard, const StopSignal &stop,
             RegionPool *regions = nullptr);
  ~Connection();

  // The MRSP receive posted and the acceptance begun, where the transport sends it without
  // waiting for the client (Endpoint::can_begin_accept): on the listening thread, before the
  // hand-over, so that the client goes on meanwhile. Never throws: run() reports a failure.
  void start();
  void run();  // never throws; returns when the session is over

 private:
  void post_mrsp_recv();
  bool serve_request_in_connection(std::string *accept_data);
  static bool descriptors_spare_for(size_t regions);
  bool exchange_memory_regions();
  size_t advertise(uint8_t *out);
  void take_asks(const uint8_t *request, size_t len);
  void take_energy_ask(const uint8_t *request, size_t len);
  void take_kernel_list_ask(const uint8_t *request, size_t len);
  void drop_answers();
  void advertised(const char *how);
  bool register_regions(std::string *why);
  void send_mrsp(const uint8_t *msg, size_t len);
  void acknowledged(const char *what);
  void invoke(uint32_t imm);
  size_t next_completions(transport::Completion *c, size_t max, Deadline idle_until);
  Deadline sleep_until(Deadline until, naa::Clock::duration idle) const;
  bool may_poll(naa::Clock::time_point now, naa::nanoseconds idle, naa::nanoseconds poll_for);
  void invocation_came();
  void place_before_sleep(naa::Clock::time_point now);
  bool peer_beside() const override { return ep_->peer_beside(); }
  void post_invocation_recv();
  naa::Clock::duration hold_reply() const;
  static constexpr size_t kBatch = 8;  // completions taken at a time
  static void order_acknowledgements_first(transport::Completion *c, size_t n);

  const std::chrono::milliseconds mrsp_timeout_;
  const std::chrono::milliseconds idle_timeout_;
  const std::chrono::microseconds spin_;  // the least it polls after each invocation (--spin-us)
  const bool adaptive_;                   // --wait adaptive
  // A client that is not libnaa (no identity in its connection request, config::auth::from_libnaa):
  // a reference client, which takes a reply polled before its own final write's completion
  // for a protocol error and drops the connection. Its replies are held (hold_reply()).
  const bool reference_client_;
  const std::chrono::microseconds reference_guard_;  // --reference-guard-us
  // How long our replies' writes took to complete, the slowest of them remembered
  // (hold_reply()).
  naa::Peak reply_acked_;
  // Whether polling for the next invocation paid lately (adaptive), and what this wait for it
  // did so far.
  progress::SpinBudget spin_budget_;
  enum class Spell { None, Polled, GaveUp, Skipped, Settled } spell_ = Spell::None;
  naa::nanoseconds polled_for_{0};  // GaveUp: the spell it polled, from spell_from_
  naa::Clock::time_point spell_from_{};
  naa::Expected next_invocation_;     // how long after a reply the next invocation comes
  naa::Clock::time_point replied_{};  // when the last reply was posted
  // When each of our posts whose completion has not come yet went out, oldest first: the
  // advertisement's send and the replies' writes, whose completions come in that order on an
  // RC queue pair (acknowledged()). A reference client's only; each post's completion comes,
  // so it stays as short as the send queue.
  std::deque<naa::Clock::time_point> unacknowledged_;
  naa::Clock::time_point last_news_ = naa::Clock::now();  // the last completion
  const StopSignal &stop_;
  Handler handler_;  // owns the regions: declared before the registrations of them
  bool started_ = false;
  bool regions_in_accept_ = false;  // the MRSP exchange rode in the connection's private data
  // Our identity, and the advertisement where it rides along: accept() sends it again where
  // begin_accept() could not (over shm, a client that did not take our name at once).
  std::string accept_data_;
  // Our answer to the client's ask for the kernels' energy (doc/protocol.md §3.5), where this
  // server measures them: set, each reply's immediate carries its kernel run's microjoules.
  std::string energy_answer_;
  // Our answer to the client's ask for our kernels (doc/protocol.md §3.6), after the energy's.
  std::string kernel_list_answer_;
  std::exception_ptr start_failed_;
  uint64_t invocations_ = 0;
  uint64_t stray_messages_ = 0;
  unsigned empty_polls_ = 0;  // while polling for the next invocation
  // Among naa::yielding_pollers() while polling for the next invocation: that poll yields
  // every few microseconds (next_completions()).
  naa::YieldingPoller polling_;
  ClientCpu client_cpu_;  // adaptive: this thread's CPU while the node is oversubscribed

  // Declared before everything registered with it (destroyed after them).
  std::unique_ptr<transport::Endpoint> ep_;
  std::vector<uint8_t> mrsp_buf_;  // [receive | send]
  std::unique_ptr<transport::MemoryRegion> mrsp_mr_;
  std::vector<std::unique_ptr<transport::MemoryRegion>> buffer_mrs_;
  std::unique_ptr<transport::WriteChain> reply_chain_;
};

}  // namespace naa::server
