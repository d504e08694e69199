// SPDX-License-Identifier: BSD-3-Clause
// The --raw pattern: what naa_invoke + naa_wait do on the wire, driven directly on the transport
// interface (transport.hpp) with no libnaa session code in between, against a raw peer that
// answers each write-with-immediate by writing the output region back, as naa-server's noop
// kernel does. The peer is naa-bench itself (--raw-peer), or naa-server (--raw-via-server): then
// the one-time exchange is MRSP, and libnaa and raw meet the very same responder code.
//
// Control exchange with a raw peer (once per connection, SEND/RECV, naa-bench to naa-bench only):
// each side sends {address, rkey, size} of the region the other writes into, big-endian, 16 bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "buffer.hpp"
#include "protocol/mrsp.hpp"
#include "config/options.hpp"  // libnaa's config::Progress (NAA_PROGRESS)
#include "progress/spin_budget.hpp"
#include "wait_plan.hpp"
#include "transport/transport.hpp"

namespace naa::bench {

class RawClient {
 public:
  enum class Peer { Raw, Server };
  // Connects and exchanges regions of `size` bytes (a naa-server is asked for function code
  // `function_code`, one input and one output). Throws naa::Error.
  RawClient(transport::Transport &transport, Peer peer, const std::string &host, uint16_t port,
            size_t size, uint8_t function_code, config::Progress progress,
            std::chrono::milliseconds timeout, const std::string &local_ip);
  ~RawClient();

  // n-1 writes + write-with-immediate out, then waits for the peer's write-with-immediate and
  // the local completion, under the same NAA_PROGRESS policy naa_wait follows.
  void round_trip();

 private:
  // Returns the peer's region: the single remote target of our writes.
  void exchange_with_raw_peer(size_t size, uint64_t *addr, uint32_t *rkey, Deadline deadline);
  void exchange_with_server(size_t size, uint64_t *addr, uint32_t *rkey, Deadline deadline);
  void wait_done();
  void absorb(const transport::Completion &c);

  const config::Progress progress_;
  const std::chrono::milliseconds timeout_;
  naa::Expected round_trip_;          // as a Session learns its round trips, for the wait plan
  progress::SpinBudget spin_budget_;  // as a Session learns whether polling pays
  Buffer input_, output_;
  std::unique_ptr<transport::Endpoint> ep_;  // before everything registered with it
  const uint32_t request_imm_;
  alignas(64) uint8_t ctrl_[2 * protocol::mrsp::kBufferSize] = {};  // [receive | send]
  std::unique_ptr<transport::MemoryRegion> ctrl_mr_, input_mr_, output_mr_;
  std::unique_ptr<transport::WriteChain> chain_;
  bool writes_pending_ = false, reply_pending_ = false;
};

// Serves raw clients one after another on host:port (0: any free port) until SIGTERM/SIGINT,
// or until `idle` passes without a client (0: never). Prints "port N" on stdout once listening.
int run_raw_peer(const std::string &host, uint16_t port, std::chrono::seconds idle);

}  // namespace naa::bench
