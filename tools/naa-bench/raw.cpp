// SPDX-License-Identifier: BSD-3-Clause
#include "raw.hpp"

#include <endian.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "config/auth.hpp"
#include "error.hpp"
#include "protocol/immediate.hpp"
#include "diag/log.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "progress/progress_until.hpp"

namespace naa::bench {
namespace {

enum Context : uint64_t { kCtrlRecv = 1, kCtrlSend = 2, kWrites = 3, kImmRecv = 4 };
constexpr size_t kCtrlSize = 16;
constexpr auto kSetupTimeout = std::chrono::seconds(10);
constexpr auto kStopSlice = std::chrono::milliseconds(200);

void encode(uint8_t *out, uint64_t addr, uint32_t rkey, uint32_t size) {
  uint64_t a = htobe64(addr);
  uint32_t k = htobe32(rkey), s = htobe32(size);
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &k, 4);
  std::memcpy(out + 12, &s, 4);
}

void decode(const uint8_t *in, uint64_t *addr, uint32_t *rkey, uint32_t *size) {
  uint64_t a;
  uint32_t k, s;
  std::memcpy(&a, in, 8);
  std::memcpy(&k, in + 8, 4);
  std::memcpy(&s, in + 12, 4);
  *addr = be64toh(a);
  *rkey = be32toh(k);
  *size = be32toh(s);
}

// Waits for our control SEND to complete and the peer's control message to arrive; returns
// its length, which must be `expect` unless that is 0.
size_t finish_control_exchange(transport::Endpoint &ep, bool need_send, size_t expect,
                               Deadline deadline) {
  bool sent = !need_send, received = false;
  size_t length = 0;
  while (!sent || !received) {
    transport::Completion c[4];
    size_t n = ep.wait(c, 4, deadline);
    if (n == 0)
      throw Error(NAA_ERR_TIMEOUT, "raw peer " + ep.peer() + ": control exchange timed out");
    for (size_t i = 0; i < n; ++i) {
      if (c[i].kind == transport::CompletionKind::Send) sent = true;
      if (c[i].kind == transport::CompletionKind::Recv && c[i].context == kCtrlRecv) {
        if (expect != 0 && c[i].bytes != expect)
          throw Error(NAA_ERR_PROTOCOL, "raw peer " + ep.peer() + ": control message of " +
                                            std::to_string(c[i].bytes) + " bytes, expected " +
                                            std::to_string(expect));
        received = true;
        length = c[i].bytes;
      }
    }
  }
  return length;
}

std::atomic<bool> stop_peer{false};
void on_signal(int) {
  stop_peer.store(true);
}

// One raw client: the control exchange, then one reply per immediate until it disconnects.
void serve(std::unique_ptr<transport::Endpoint> ep) {
  uint8_t ctrl[2 * kCtrlSize] = {};
  auto ctrl_mr = ep->register_memory(ctrl, sizeof ctrl, false);
  ep->post_recv(ctrl, kCtrlSize, *ctrl_mr, kCtrlRecv);
  Deadline deadline = Deadline::after(kSetupTimeout);
  ep->accept(deadline);
  finish_control_exchange(*ep, false, kCtrlSize, deadline);
  uint64_t client_addr;
  uint32_t client_rkey, size;
  decode(ctrl, &client_addr, &client_rkey, &size);
  if (size == 0) throw Error(NAA_ERR_PROTOCOL, "raw client " + ep->peer() + " asked for 0 bytes");
  Buffer region(size);
  auto region_mr = ep->register_memory(region.data(), size, true);
  auto reply = ep->prepare_writes({{region_mr.get(), 0, size, client_addr, client_rkey}}, kWrites);
  if (ep->immediate_consumes_recv()) ep->post_recv(ctrl, kCtrlSize, *ctrl_mr, kImmRecv);
  encode(ctrl + kCtrlSize, region_mr->remote_addr, region_mr->rkey, size);
  ep->post_send(ctrl + kCtrlSize, kCtrlSize, *ctrl_mr, kCtrlSend);
  uint64_t answered = 0;
  try {
    while (!stop_peer.load()) {
      transport::Completion c[8];
      size_t n = ep->wait(c, 8, Deadline::after(kStopSlice));
      for (size_t i = 0; i < n; ++i) {
        if (c[i].kind != transport::CompletionKind::RemoteImm) continue;
        if (ep->immediate_consumes_recv()) ep->post_recv(ctrl, kCtrlSize, *ctrl_mr, kImmRecv);
        ep->post_writes(*reply, 0);
        ++answered;
      }
    }
  } catch (const Error &e) {
    if (e.code() != NAA_ERR_CONNECTION) throw;
  }
  NAA_LOG_INFO("raw client %s: %u bytes, %llu round trips", ep->peer().c_str(), size,
               static_cast<unsigned long long>(answered));
  // The reply chain and registrations go before the endpoint (declared after it).
}

}  // namespace

RawClient::RawClient(transport::Transport &transport, Peer peer, const std::string &host,
                     uint16_t port, size_t size, uint8_t function_code, config::Progress progress,
                     std::chrono::milliseconds timeout, const std::string &local_ip)
    : progress_(progress),
      timeout_(timeout),
      input_(size),
      output_(size),
      request_imm_(protocol::imm::host_request(function_code)) {
  Deadline deadline = Deadline::after(kSetupTimeout);
  // The libnaa identity: it takes its write's completion and the reply in either order, as
  // libnaa does, so that naa-server does not hold its replies (--reference-guard-us).
  ep_ = transport.connect(host, port, local_ip, deadline, config::auth::connect_data(""));
  ctrl_mr_ = ep_->register_memory(ctrl_, sizeof ctrl_, false);
  input_mr_ = ep_->register_memory(input_.data(), size, false);
  output_mr_ = ep_->register_memory(output_.data(), size, true);
  uint64_t addr;
  uint32_t rkey;
  if (peer == Peer::Server)
    exchange_with_server(size, &addr, &rkey, deadline);
  else
    exchange_with_raw_peer(size, &addr, &rkey, deadline);
  chain_ = ep_->prepare_writes({{input_mr_.get(), 0, size, addr, rkey}}, kWrites);
}

void RawClient::exchange_with_raw_peer(size_t size, uint64_t *addr, uint32_t *rkey,
                                       Deadline deadline) {
  uint8_t *send = ctrl_ + protocol::mrsp::kBufferSize;
  ep_->post_recv(ctrl_, kCtrlSize, *ctrl_mr_, kCtrlRecv);
  encode(send, output_mr_->remote_addr, output_mr_->rkey, static_cast<uint32_t>(size));
  ep_->post_send(send, kCtrlSize, *ctrl_mr_, kCtrlSend);
  finish_control_exchange(*ep_, true, kCtrlSize, deadline);
  uint32_t peer_size;
  decode(ctrl_, addr, rkey, &peer_size);
  if (peer_size != size)
    throw Error(NAA_ERR_PROTOCOL, "raw peer " + ep_->peer() + " offered " +
                                      std::to_string(peer_size) + " bytes for our " +
                                      std::to_string(size));
}

// MRSP as the spec lays it out, without libnaa's session: one input, one output.
void RawClient::exchange_with_server(size_t size, uint64_t *addr, uint32_t *rkey,
                                     Deadline deadline) {
  const uint32_t sizes[2] = {static_cast<uint32_t>(size), static_cast<uint32_t>(size)};
  uint64_t placeholders[2];
  protocol::mrsp::placeholder_addresses(sizes, 2, 0, placeholders);
  const protocol::mrsp::RequestEntry request[2] = {
      {protocol::mrsp::kInput, placeholders[0], input_mr_->remote_addr, input_mr_->rkey, sizes[0]},
      {protocol::mrsp::kOutput, placeholders[1], output_mr_->remote_addr, output_mr_->rkey,
       sizes[1]}};
  uint8_t *send = ctrl_ + protocol::mrsp::kBufferSize;
  size_t len = protocol::mrsp::encode_request(request, 2, send, protocol::mrsp::kBufferSize);
  ep_->post_recv(ctrl_, protocol::mrsp::kBufferSize, *ctrl_mr_, kCtrlRecv);
  ep_->post_send(send, len, *ctrl_mr_, kCtrlSend);
  size_t received = finish_control_exchange(*ep_, true, 0, deadline);
  protocol::mrsp::Message reply;
  std::string why;
  if (protocol::mrsp::decode(ctrl_, received, reply, &why) != protocol::mrsp::DecodeError::None ||
      reply.type != protocol::mrsp::Type::Advertise || reply.advert.size() != 2)
    throw Error(NAA_ERR_PROTOCOL, "naa-server " + ep_->peer() + " did not advertise two regions" +
                                      (why.empty() ? "" : ": " + why));
  *addr = reply.advert[0].naa_address;
  *rkey = reply.advert[0].rkey;
}

RawClient::~RawClient() = default;

void RawClient::round_trip() {
  if (ep_->immediate_consumes_recv()) ep_->post_recv(ctrl_, kCtrlSize, *ctrl_mr_, kImmRecv);
  const auto start = naa::Clock::now();
  ep_->post_writes(*chain_, request_imm_);
  writes_pending_ = reply_pending_ = true;
  wait_done();
  round_trip_.observe(naa::Clock::now() - start);
}

void RawClient::absorb(const transport::Completion &c) {
  if (c.kind == transport::CompletionKind::Writes) writes_pending_ = false;
  if (c.kind == transport::CompletionKind::RemoteImm) reply_pending_ = false;
}

// The same loop as naa_wait's, so that the comparison isolates the session's own cost.
void RawClient::wait_done() {
  const progress::Policy policy{progress_.mode, progress_.spin, round_trip_.value(), false,
                                &spin_budget_};
  if (!progress::progress_until(
          *ep_, policy, Deadline::after(timeout_),
          [this] { return !writes_pending_ && !reply_pending_; },
          [this](const transport::Completion &c, bool) { absorb(c); }))
    throw Error(NAA_ERR_TIMEOUT, "raw peer " + ep_->peer() + " did not answer in time");
}

int run_raw_peer(const std::string &host, uint16_t port, std::chrono::seconds idle) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  try {
    const config::params::Values values = transport::read_parameters();
    auto transport =
        transport::open_transport(values.text("NAA_TRANSPORT"), transport::options_from(values));
    auto listener = transport->listen(host, port);
    std::printf("port %u\n", static_cast<unsigned>(listener->port()));
    std::fflush(stdout);
    auto idle_since = std::chrono::steady_clock::now();
    while (!stop_peer.load()) {
      if (idle.count() > 0 && std::chrono::steady_clock::now() - idle_since > idle) {
        std::fprintf(stderr, "naa-bench --raw-peer: no client for %lld s; exiting\n",
                     static_cast<long long>(idle.count()));
        return 0;
      }
      auto ep = listener->next_request(Deadline::after(kStopSlice));
      if (!ep) continue;
      try {
        serve(std::move(ep));
      } catch (const Error &e) {
        std::fprintf(stderr, "naa-bench --raw-peer: client dropped: %s\n", e.what());
      }
      idle_since = std::chrono::steady_clock::now();
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "naa-bench --raw-peer: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace naa::bench
