// SPDX-License-Identifier: BSD-3-Clause
// A fake transport for unit tests of Session, the progress driver, pacing and the completion
// calls without a fabric: an Endpoint whose peer is a scripted NAA in this process. It answers
// MRSP at once, completes every posted write chain at once and answers an invocation when the
// test says so (or at once, `auto_reply`). Its wait descriptor is an eventfd written for every
// completion queued (or none, as ofi+shm has none), and it counts what the driver does with it.
#pragma once

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "progress/progress_engine.hpp"
#include "protocol/immediate.hpp"
#include "protocol/mrsp.hpp"
#include "transport/transport.hpp"

namespace naa::fake {

using Clock = std::chrono::steady_clock;

// What a test sets before connecting and reads afterwards; shared with the endpoint.
struct Peer {
  bool libnaa_server = true;  // names itself in its accept: no pacing
  bool descriptor = true;     // a wait descriptor (false: as ofi+shm, polling only)
  std::atomic<bool> auto_reply{true};
  // With auto_reply: the kernel's time, from the final write to the reply (delivered by the
  // first poll after it; a waiter that sleeps on the descriptor is not woken).
  Clock::duration kernel{0};
  // How long the poster of the MRSP request is held inside post_send after the NAA answered,
  // as a thread descheduled right after its post while the NAA handles the request.
  Clock::duration send_stall{0};
  // Counted by the endpoint; caller_polls: those not on the progress thread (also in polls).
  std::atomic<unsigned> polls{0}, arms{0}, invocations{0}, early_finals{0}, caller_polls{0};
  std::atomic<Clock::rep> data_posted_at{0}, final_posted_at{0};
};

class Endpoint final : public transport::Endpoint {
 public:
  explicit Endpoint(std::shared_ptr<Peer> peer)
      : peer_(std::move(peer)),
        fd_(peer_->descriptor ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1) {
    if (peer_->libnaa_server) peer_data_ = transport::kServerIdentity;
  }
  ~Endpoint() override {
    if (fd_ >= 0) close(fd_);
  }

  // The NAA answers the invocation in flight (from any thread).
  void reply(uint8_t rc = 0) {
    push({transport::CompletionKind::RemoteImm, 0, 0, protocol::imm::naa_reply(rc)});
  }
  // The connection goes: every later poll throws, as a transport does (from any thread).
  void lose() {
    lost_ = true;
    const uint64_t one = 1;
    if (fd_ >= 0) (void)!write(fd_, &one, sizeof one);
  }

  void accept(Deadline, const std::string &) override {}
  void reject(const char *) override {}
  std::unique_ptr<transport::MemoryRegion> register_memory(void *addr, size_t length,
                                                           bool) override {
    auto mr = std::make_unique<transport::MemoryRegion>();
    mr->addr = addr;
    mr->length = length;
    mr->rkey = 1;
    mr->remote_addr = reinterpret_cast<uint64_t>(addr);
    return mr;
  }
  void post_recv(void *buf, size_t, const transport::MemoryRegion &, uint64_t context) override {
    recv_buf_ = static_cast<uint8_t *>(buf);
    recv_context_ = context;
  }
  // The MRSP request: advertises one NAA region per requested one.
  void post_send(const void *buf, size_t length, const transport::MemoryRegion &,
                 uint64_t context) override {
    protocol::mrsp::Message request;
    if (protocol::mrsp::decode(static_cast<const uint8_t *>(buf), length, request, nullptr) !=
        protocol::mrsp::DecodeError::None)
      throw Error(NAA_ERR_TRANSPORT, "fake NAA: malformed MRSP request");
    std::vector<protocol::mrsp::AdvertEntry> advert;
    for (const auto &e : request.request) advert.push_back({e.naa_address, 7, e.size});
    const size_t n = protocol::mrsp::encode_advert(advert.data(), advert.size(), recv_buf_,
                                                   protocol::mrsp::kBufferSize);
    push({transport::CompletionKind::Send, context, length, 0});
    push({transport::CompletionKind::Recv, recv_context_, n, 0});
    if (peer_->send_stall.count() > 0) std::this_thread::sleep_for(peer_->send_stall);
  }
  bool immediate_consumes_recv() const override { return false; }
  std::unique_ptr<transport::WriteChain> prepare_writes(
      const std::vector<transport::WriteSegment> &, uint64_t context) override {
    return std::make_unique<Chain>(context);
  }
  void post_writes(transport::WriteChain &chain, uint32_t) override {
    post_data_writes(chain);
    post_final_write(chain, 0);
  }
  void post_data_writes(transport::WriteChain &) override {
    peer_->data_posted_at = Clock::now().time_since_epoch().count();
  }
  void post_final_write(transport::WriteChain &chain, uint32_t) override {
    peer_->final_posted_at = Clock::now().time_since_epoch().count();
    peer_->invocations++;
    push({transport::CompletionKind::Writes, static_cast<Chain &>(chain).context, 0, 0});
    if (!peer_->auto_reply) return;
    if (peer_->kernel.count() == 0)
      reply();
    else
      reply_due_ = Clock::now() + peer_->kernel;
  }
  size_t poll(transport::Completion *out, size_t max) override {
    peer_->polls++;
    if (!on_progress_thread()) peer_->caller_polls++;
    if (lost_) throw Error(NAA_ERR_CONNECTION, "fake NAA: connection lost");
    if (reply_due_ != Clock::time_point{} && Clock::now() >= reply_due_) {
      reply_due_ = {};
      reply();
    }
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (; n < max && !queue_.empty(); ++n) {
      out[n] = queue_.front();
      queue_.pop_front();
    }
    return n;
  }
  size_t wait(transport::Completion *out, size_t max, Deadline deadline) override {
    for (;;) {
      if (size_t n = poll(out, max)) return n;
      if (deadline.expired()) return 0;
      usleep(100);
    }
  }
  int wait_fd() const override { return fd_; }
  // Drains the eventfd, then looks: a completion queued after the look writes it again.
  bool arm_wait() override {
    peer_->arms++;
    uint64_t count;
    if (fd_ >= 0) (void)!read(fd_, &count, sizeof count);
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.empty();
  }
  const std::string &peer() const override { return name_; }
  const std::string &peer_data() const override { return peer_data_; }

 private:
  // The engine names its thread before the first handle can submit to it.
  static bool on_progress_thread() {
    thread_local const bool is = [] {
      char name[16] = "";
      pthread_getname_np(pthread_self(), name, sizeof name);
      return std::strcmp(name, progress::ProgressEngine::kThreadName) == 0;
    }();
    return is;
  }
  struct Chain final : transport::WriteChain {
    explicit Chain(uint64_t c) : context(c) {}
    uint64_t context;
  };
  void push(const transport::Completion &c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(c);
    }
    const uint64_t one = 1;
    if (fd_ >= 0) (void)!write(fd_, &one, sizeof one);
  }

  std::shared_ptr<Peer> peer_;
  const int fd_;
  std::atomic<bool> lost_{false};
  std::mutex mu_;
  Clock::time_point reply_due_{};  // Peer::kernel's reply, on the polling thread
  std::deque<transport::Completion> queue_;
  uint8_t *recv_buf_ = nullptr;
  uint64_t recv_context_ = 0;
  std::string name_ = "fake:1", peer_data_;
};

// Hands out endpoints to one Peer; the last one connected is `last`.
class Transport final : public transport::Transport {
 public:
  explicit Transport(std::shared_ptr<Peer> peer) : peer_(std::move(peer)) {}
  const char *name() const override { return "fake"; }
  std::unique_ptr<transport::Endpoint> connect(const std::string &, uint16_t, const std::string &,
                                               Deadline, const std::string &,
                                               const transport::BeforeConnect &) override {
    auto ep = std::make_unique<Endpoint>(peer_);
    last = ep.get();
    ++connects;
    return ep;
  }
  std::unique_ptr<transport::Listener> listen(const std::string &, uint16_t) override {
    throw Error(NAA_ERR_UNSUPPORTED, "fake transport: no listener");
  }
  Endpoint *last = nullptr;
  unsigned connects = 0;

 private:
  std::shared_ptr<Peer> peer_;
};

}  // namespace naa::fake
