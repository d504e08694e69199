// SPDX-License-Identifier: BSD-3-Clause
// A raw client of naa-server built on libnaa's transport interface: it puts exactly the bytes
// a test wants on the wire (MRSP, invocations, stray messages) and reads the answers. For
// the cmocka tests of the server (test_server_faults, test_hostile); include after cmocka.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include "server.h"
}

#include "error.hpp"
#include "protocol/immediate.hpp"
#include "protocol/mrsp.hpp"
#include "transport/transport.hpp"

namespace naa::test {

enum RawContext : uint64_t { kRecv = 1, kSend = 2, kWrites = 3, kReplyRecv = 4 };

class RawClient {
 public:
  // How long connecting and each answer may take: 10 s, stretched for sanitizer builds (a
  // TSan client and server on a loaded machine missed it while connecting).
  const std::chrono::milliseconds patience_{static_cast<long long>(10000 * test_time_scale())};

  // `local_ip` (may be empty) is the source address: another loopback address (127.0.0.2)
  // makes the client another peer host for the server's per-peer limits.
  // `private_data` travels with the connection request (an encoded key, see lib/config/auth.hpp).
  explicit RawClient(int port, const std::string &local_ip = "",
                     const std::string &private_data = "")
      : transport_(transport::open_transport(transport::transport_from_environment())) {
    ep_ = transport_->connect(test_host(), static_cast<uint16_t>(port), local_ip,
                              Deadline::after(patience_), private_data);
    mr_ = ep_->register_memory(buf_.data(), buf_.size(), false);
    ep_->post_recv(buf_.data(), protocol::mrsp::kBufferSize, *mr_, kRecv);
  }

  void send(const uint8_t *bytes, size_t len) {
    std::memcpy(buf_.data() + protocol::mrsp::kBufferSize, bytes, len);
    ep_->post_send(buf_.data() + protocol::mrsp::kBufferSize, len, *mr_, kSend);
  }

  // Waits (up to 10 s) until the last send left, so that closing next cannot drop it.
  void flush_send() {
    Deadline deadline = Deadline::after(patience_);
    while (!deadline.expired()) {
      transport::Completion c[4];
      size_t n = ep_->wait(c, 4, deadline);
      for (size_t i = 0; i < n; ++i)
        if (c[i].kind == transport::CompletionKind::Send) return;
    }
    fail_msg("a send did not complete within 10 s");
  }

  // The server's MRSP answer; fails the test when none arrives within 10 s.
  protocol::mrsp::Message answer() {
    Deadline deadline = Deadline::after(patience_);
    while (!deadline.expired()) {
      transport::Completion c[4];
      size_t n = ep_->wait(c, 4, deadline);
      for (size_t i = 0; i < n; ++i)
        if (c[i].kind == transport::CompletionKind::Recv && c[i].context == kRecv) {
          protocol::mrsp::Message m;
          std::string why;
          if (protocol::mrsp::decode(buf_.data(), c[i].bytes, m, &why) !=
              protocol::mrsp::DecodeError::None)
            fail_msg("bad MRSP answer: %s", why.c_str());
          return m;
        }
    }
    fail_msg("no MRSP answer within 10 s");
    return {};
  }

  // True when the server ends the connection before the deadline.
  bool dropped_within(Deadline deadline) {
    try {
      while (!deadline.expired()) {
        transport::Completion c[4];
        ep_->wait(c, 4, deadline);
      }
    } catch (const Error &e) {
      return e.code() == NAA_ERR_CONNECTION || e.code() == NAA_ERR_TRANSPORT;
    }
    return false;
  }

  // A well-formed MRSP exchange for one region of `size` bytes (in place unless `flags` say
  // otherwise), optionally after an internal scratch region as the reference host orders them.
  void setup(size_t size, uint8_t flags = protocol::mrsp::kInput | protocol::mrsp::kOutput,
             bool internal_first = false) {
    region_.assign(size, 0);
    region_mr_ = ep_->register_memory(region_.data(), size, true);
    std::vector<protocol::mrsp::RequestEntry> e;
    if (internal_first) e.push_back({protocol::mrsp::kInternal, 0, 0, 0, 128});
    e.push_back({flags, e.empty() ? 0 : protocol::mrsp::kPlaceholderAlignment,
                 region_mr_->remote_addr, region_mr_->rkey, static_cast<uint32_t>(size)});
    uint8_t msg[protocol::mrsp::kBufferSize];
    size_t len = protocol::mrsp::encode_request(e.data(), e.size(), msg, sizeof msg);
    send(msg, len);
    protocol::mrsp::Message m = answer();
    assert_int_equal(static_cast<int>(m.type), static_cast<int>(protocol::mrsp::Type::Advertise));
    assert_int_equal(m.advert.size(), 1);
    chain_ = ep_->prepare_writes(
        {{region_mr_.get(), 0, size, m.advert[0].naa_address, m.advert[0].rkey}}, kWrites);
  }

  // Posts one invocation with immediate V; returns the server's return code, or -1 when no
  // reply arrives within `patience`.
  int invoke(uint32_t v, std::chrono::milliseconds patience) {
    if (ep_->immediate_consumes_recv() && !reply_recv_posted_) {
      ep_->post_recv(buf_.data(), protocol::mrsp::kBufferSize, *mr_, kReplyRecv);
      reply_recv_posted_ = true;
    }
    ep_->post_writes(*chain_, v);
    Deadline deadline = Deadline::after(patience);
    while (!deadline.expired()) {
      transport::Completion c[4];
      size_t n = ep_->wait(c, 4, deadline);
      for (size_t i = 0; i < n; ++i)
        if (c[i].kind == transport::CompletionKind::RemoteImm) {
          reply_recv_posted_ = false;
          return protocol::imm::return_code(c[i].imm);
        }
    }
    return -1;
  }

  std::vector<uint8_t> region_;

 private:
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<transport::Endpoint> ep_;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(2 * protocol::mrsp::kBufferSize);
  std::unique_ptr<transport::MemoryRegion> mr_, region_mr_;
  std::unique_ptr<transport::WriteChain> chain_;
  bool reply_recv_posted_ = false;
};

}  // namespace naa::test
