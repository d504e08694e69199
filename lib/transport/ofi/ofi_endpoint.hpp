// SPDX-License-Identifier: BSD-3-Clause
// A libfabric Endpoint, over a connected FI_EP_MSG endpoint or a reliable-datagram FI_EP_RDM one
// (see the top of ofi.cpp). Its definitions: ofi_endpoint.cpp (opening, sends and receives,
// completions), ofi_endpoint_rma.cpp (memory regions, write chains), ofi_endpoint_msg.cpp (the
// connection manager's connections), ofi_endpoint_rdm.cpp (connections made of control
// messages, the peer's liveness). Private to lib/transport.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "error.hpp"
#include "transport/event_check.hpp"
#include "transport/nap.hpp"
#include "transport/ofi/ofi_context.hpp"
#include "transport/ofi/ofi_control.hpp"
#include "transport/ofi/ofi_fabric.hpp"
#include "transport/ofi/shm/bell.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/ofi/shm/request.hpp"
#include "transport/transport.hpp"

namespace naa::transport::ofi {

// A post that keeps returning -FI_EAGAIN (queue full and no progress) is a dead fabric.
inline constexpr auto kPostRetryLimit = std::chrono::seconds(10);

class OfiMemoryRegion : public MemoryRegion {
 public:
  std::shared_ptr<OfiRegistration> registration;  // perhaps shared with other handles
  void *desc = nullptr;
};

class OfiEndpoint : public Endpoint {
 public:
  // A MSG endpoint on the server side comes from `pep` (for fi_reject). An RDM endpoint is a
  // listener's until attach() or connect() gives it its one peer.
  // `reuse` (shm, a client's or a listener's connection endpoint): it may be an idle one of
  // the Context's (ofi_endpoint_reuse.cpp), and goes back there when its connection ends well;
  // the Context keeps `idle_bound` of them (NAA_SHM_IDLE_ENDPOINTS; 0: none).
  enum class Reuse { No, Client, Server };
  OfiEndpoint(std::shared_ptr<OfiContext> context, InfoPtr info, fid_pep *pep,
              std::string request_data = {}, Reuse reuse = Reuse::No, size_t idle_bound = 0);
  ~OfiEndpoint() override;

  void set_peer_label(std::string label) { peer_ = std::move(label); }
  // Splits writes longer than `chunk` (NAA_OFI_WRITE_CHUNK; over ofi+tcp on loopback no split
  // size beat unsplit writes: doc/performance.md).
  void limit_writes(size_t chunk);
  // How the waits for the connection are spent (TransportOptions::setup_spin, setup_sleeps).
  void plan_setup_waits(const TransportOptions &options) {
    setup_spin_ = options.setup_spin;
    setup_sleeps_ = options.setup_sleeps;
  }

  // RDM, server side: the peer is the client whose request named `name`.
  void attach(const std::string &name, uint32_t pid);

  void connect(Deadline deadline, const std::string &private_data);
  // RDM, client side: connect() gave up before its connection request could be sent, so the
  // listener may not have read this endpoint's name yet.
  bool request_unsent() const { return request_unsent_; }
  void accept(Deadline deadline, const std::string &private_data) override;
  bool can_begin_accept() const override { return true; }
  void begin_accept(const std::string &private_data) override;
  void reject(const char *reason) override;

  std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                bool remote_write) override;
  void post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override;
  void post_send(const void *buf, size_t length, const MemoryRegion &mr, uint64_t context) override;
  bool immediate_consumes_recv() const override { return imm_consumes_recv_; }
  std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                             uint64_t context) override;
  void post_writes(WriteChain &chain, uint32_t imm) override;
  void post_data_writes(WriteChain &chain) override;
  void post_final_write(WriteChain &chain, uint32_t imm) override;

  size_t poll(Completion *out, size_t max) override;
  size_t wait(Completion *out, size_t max, Deadline deadline) override;
  bool wait_sleeps_through() const override;

  // shm with a peer that rings: our bell (shm/bell.hpp), which arm_wait() raises, so that
  // naa_waitany and the progress thread sleep on it as they do on tcp's CQ.
  int wait_fd() const override { return rings_bell() ? bell_->fd() : wait_fd_; }
  bool arm_wait() override;
  void check_connection() override { check_events(); }
  bool polls_memory() const override { return !cq_wakes_; }

  const std::string &peer() const override { return peer_; }
  pid_t peer_pid() const override { return shm::name_pid(peer_); }
  int peer_cpu() const override { return peer_bell_ ? peer_bell_->cpu() : -1; }
  bool peer_beside() const override;
  const std::string &peer_data() const override { return peer_data_; }
  size_t connect_data_room() override;

  // RDM: the next control message of type `type` (the others are dropped with a log line), or
  // nothing when the deadline passes.
  std::optional<control::Message> next_control(control::Type type, Deadline deadline);
  // The same from one read of the CQ, without sleeping.
  std::optional<control::Message> poll_control(control::Type type);

  // This endpoint's own address, as a peer inserts it into its address vector.
  std::string own_name() const;

  // A listener's spare: this endpoint, never connected, goes idle at once for its first
  // request (the 5-16 ms of opening it are spent before any client waits).
  void park_unused();

 private:
  static constexpr size_t kControlSlots = 4;  // receives posted for control messages
  static constexpr std::chrono::microseconds kPostNapLimit{1000};
  static constexpr std::chrono::microseconds kPostSpin{100};
  // How long a reject or goodbye may take to leave before the endpoint closes.
  static constexpr auto kControlFlush = std::chrono::milliseconds(200);
  // How long after a ring that delivered nothing the bell's sleeps are naps (sleep_on_bell).
  static constexpr auto kTransferWatch = std::chrono::seconds(1);
  // How long nothing must have come before an shm wait sleeps to its deadline on the bell.
  static constexpr auto kQuietBeforeSleep = std::chrono::seconds(3);

  // ofi_endpoint_reuse.cpp
  bool adopt_idle();
  void take_objects(IdleRdm &idle);
  bool settle_old_peer(const IdleRdm &idle);
  bool park(bool peer_left_first) noexcept;
  bool from_peer(fi_addr_t source) const;
  void drop_stale(const fi_cq_data_entry &e, fi_addr_t source);
  void forget_recv(uint64_t context);
  bool drain_unexpected();
  void forget_address(fi_addr_t addr);
  void forget_previous_peer();
  void count_opened();
  void count_address(bool kept);   // an entry made, or found kept (for tests)
  void count_listener(bool kept);  // a kept listener entry served again, or dropped (for tests)
  void count_pidfd(bool kept);     // a pidfd opened, or a kept one watching the next peer

  // ofi_endpoint.cpp
  void open_once();
  void open_queues();
  void open();
  void close();
  void on_cq_error();
  void check_events();
  size_t sleep_on_cq(Completion *out, size_t max, Deadline deadline, int interrupt = -1);
  size_t sleep_on_fds(Completion *out, size_t max, Deadline deadline, int interrupt);
  size_t sleep_on_bell(Completion *out, size_t max, Deadline deadline, int interrupt);
  bool rings_bell() const { return !cq_wakes_ && bell_ && peer_bell_ && peer_bell_->rings(); }
  bool arm_bell();
  void
  open_bell();  // shm: ours, made with the endpoint, and anew when a kept one without one is taken
  std::unique_ptr<shm::BellRope> rope_for(const std::string &peer_name);  // ofi_endpoint_reuse.cpp
  // After a post of `bytes` to the peer: rings its bell if it sleeps (shm, shm/bell.hpp).
  void wake_peer(size_t bytes) noexcept {
    if (bytes > inject_size_) awaiting_peer_ = true;
    if (peer_bell_) peer_bell_->pull();
  }
  size_t read_cq(Completion *out, size_t max);
  size_t translate(const fi_cq_data_entry *entries, const fi_addr_t *sources, size_t n,
                   Completion *out);

  // ofi_endpoint_rma.cpp
  void wait_fence();

  // ofi_endpoint_msg.cpp
  void wait_connected(Deadline deadline, const std::string &what);
  bool read_connection_event(bool polling, Deadline deadline, const std::string &what);
  [[noreturn]] void raise_eq_error(const std::string &what, bool connecting);

  // ofi_endpoint_rdm.cpp
  void accept_by_message(const std::string &private_data, const Deadline *deadline = nullptr);
  void reject_by_message(const char *reason);
  void connect_by_message(Deadline deadline, const std::string &private_data);
  std::optional<control::Message> await_accept(Deadline deadline);
  void open_control();
  uint8_t *control_slot(size_t i) { return control_buf_.data() + i * control::kMaxMessage; }
  bool is_control(const void *context) const {
    auto *p = static_cast<const uint8_t *>(context);
    return !control_buf_.empty() && p >= control_buf_.data() &&
           p < control_buf_.data() + control_buf_.size();
  }
  void post_control_recv(uint8_t *slot);
  void send_control(fi_addr_t to, control::Type type, const std::string &data,
                    const Deadline *deadline = nullptr);
  void flush_control(Deadline deadline);
  void say_goodbye() noexcept;
  void ring_listener();
  void on_control(uint8_t *slot, size_t len, fi_addr_t source);
  std::optional<control::Message> take_control(control::Type type);
  fi_addr_t insert_address(const std::string &name);
  fi_addr_t address_listener(const std::string &server);
  void watch_process(uint32_t pid);
  void remove_dead_peer_region();
  bool peer_process_gone() const;

  // Posting fails with -FI_EAGAIN while a queue is full, and over shm at the first send to a
  // peer until the peer has taken our name (which a polling peer does within microseconds:
  // the MRSP request of every naa_create meets it, and a nap there costs more than the wait);
  // completions read meanwhile are stashed for the next poll, never dropped. Between tries
  // it polls for kPostSpin, then naps (growing to kPostNapLimit) while nothing completes: a
  // queue that a stopped or dead peer never drains (shm) must not cost a core. It gives up
  // after kPostRetryLimit, or at `deadline` when that comes first.
  template <class Post>
  void retry_post(const char *what, Post post, const Deadline *deadline = nullptr) {
    ssize_t rc = post();
    if (rc == 0) return;  // the usual case reads no clock
    auto give_up = Deadline::after(kPostRetryLimit);
    const Deadline spin_until = Deadline::after(kPostSpin);
    Nap nap(kPostNapLimit);
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
      if (n > 0)
        nap.reset();
      else if (!spin_until.expired())
        sched_yield();  // the peer may need this core
      else
        nap.take();
    }
  }

  std::shared_ptr<OfiContext> context_;
  InfoPtr info_;
  Reuse reuse_ = Reuse::No;
  size_t idle_bound_ = 0;
  // Whether completions name their source (FI_SOURCE, asked of shm): then what a peer other
  // than this connection's sends or writes is dropped (an old peer of a reused endpoint).
  bool sources_ = false;
  bool failed_ = false;        // a completion failed: the endpoint is closed, never reused
  bool parking_ = false;       // park() cancels the receives still posted
  bool peer_goodbye_ = false;  // the peer ended the connection with a goodbye
  bool settling_ = false;      // a reused client endpoint waits for its old peer's goodbye
  size_t tx_pending_ = 0;      // our sends and final writes not yet completed
  size_t imms_sent_ = 0, imms_received_ = 0;  // a client with a reply due is not reused
  struct PostedRecv {
    uint64_t context;
    void *buf;
    size_t length;
    void *desc;
  };
  std::vector<PostedRecv> posted_recvs_;       // shm: to cancel at park, to post again after a drop
  std::map<std::string, fi_addr_t> av_names_;  // RDM: what the address vector holds
  // shm, a kept endpoint: the peer of its last connection, whose entry stays until the next
  // peer's is in (ofi_endpoint_reuse.cpp: fresh slots), and how many entries it ever made.
  fi_addr_t previous_peer_ = FI_ADDR_UNSPEC;
  // shm, a client: the listener it asks, and the object behind its name before its entry was
  // made (kept at park while known; address_listener).
  std::string listener_;
  std::optional<shm::Object> listener_object_;
  unsigned av_inserted_ = 0;
  unsigned long stale_dropped_ = 0;
  char sink_context_ = 0;  // its address marks drain_unexpected's receive
  bool sink_done_ = false, sink_cancelled_ = false;
  std::chrono::steady_clock::time_point stale_logged_{};
  fid_pep *pep_;  // server side: the listener that received the request (for fi_reject)
  std::string peer_data_;
  std::string peer_;
  bool rdm_ = false;
  bool same_host_ = false;
  bool cq_wakes_ = true;      // whether a peer's message wakes a thread asleep on the CQ
  Nap nap_;                   // sleep_on_cq's, where the CQ does not wake
  bool interrupted_ = false;  // the last sleep_on_cq ended on its interrupt descriptor
  Deadline::Clock::time_point transfer_watch_until_{};  // sleep_on_bell naps until then
  bool imm_consumes_recv_ = false;
  bool virt_addr_ = false;
  size_t max_msg_ = SIZE_MAX;
  EventCheckPacer event_checks_;
  int wait_fd_ = -1;
  std::shared_ptr<OfiCqWait> cq_wait_;  // MSG: what wait_fd_ belongs to
  int eq_fd_ = -1;                      // MSG: the EQ's wait descriptor, where it has one
  bool connected_ = false;
  bool accept_begun_ = false;
  Deadline::Clock::time_point connecting_since_{};  // fi_connect or fi_accept returned
  std::chrono::microseconds setup_spin_{0};
  bool setup_sleeps_ = true;
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
  bool request_unsent_ = false;
  pid_t peer_pid_ = 0;
  std::string peer_name_;  // the peer's endpoint name (RDM)
  int peer_pidfd_ = -1;
  // shm, a kept client endpoint: its last peer's pidfd, for a next peer in the same process
  // (watch_process).
  int kept_pidfd_ = -1;
  pid_t kept_pidfd_pid_ = 0;
  std::unique_ptr<shm::Bell> bell_;           // shm: ours, rung by a peer that posts while we sleep
  std::unique_ptr<shm::BellRope> peer_bell_;  // shm: the peer's
  // shm, a kept endpoint: its last peer's rope, until the next peer is known (rope_for).
  std::unique_ptr<shm::BellRope> kept_peer_bell_;
  // shm: a transfer larger than the provider's inject size may be under way between us and the
  // peer: we posted one and nothing came from the peer since (awaiting_peer_), or the peer rang
  // us and nothing came with the ring (peer_transfer_, as the transfer watch of sleep_on_bell).
  // Such a transfer moves only while both sides make progress where shm cannot copy across
  // processes (no process_vm_writev: ptrace restricted), in segments that are no posts: a side
  // that went to sleep in between would sleep through them (a large invocation after a pause
  // would take seconds), so meanwhile every empty read of our CQ rings the peer again if it
  // sleeps (a plain load of its word otherwise; every 64th read was too rare for a waiter that
  // naps between reads). Both end with the next message from the peer. A smaller post is
  // whole in the peer's queue when its ring goes: after one, ringing a peer that went to sleep
  // woke it for nothing, and into a second of naps (doc/performance.md).
  bool awaiting_peer_ = false;
  bool peer_transfer_ = false;
  size_t inject_size_ = 0;  // the provider's (tx_attr)
  // Whether the provider keeps a chain's writes in order and completes them in order (MSG
  // asks for it); where not, the final write waits for the data writes (post_writes).
  bool ordered_writes_ = false;
  char fence_context_ = 0;  // its address marks the data writes of a fenced chain
  size_t fence_pending_ = 0;
};

}  // namespace naa::transport::ofi
