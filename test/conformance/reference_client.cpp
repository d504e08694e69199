// SPDX-License-Identifier: BSD-3-Clause
// conformance-client: a host that behaves like the NAAICE reference AP2 client rather than like
// libnaa, so that naa-server is tested against the clients sites keep (doc/protocol.md §4.4):
//  - no private data in its connection request (no key, no libnaa identity), MRSP by messages;
//  - in-place regions, invoked with add1 (function code 1) back to back: the next request is
//    written as soon as the previous reply was taken, into the buffers the reply just filled;
//  - its completions taken one at a time, in a state machine: after posting its writes it is
//    in NAAICE_DATA_SENDING and takes only its own write's completion; the NAA's reply polled
//    there is a protocol error that ends the client ("Work completion opcode (wc opcode):
//    IBV_WC_RECV_RDMA_WITH_IMM, not handled for state: NAAICE_DATA_SENDING", exit status 1).
// Its own write completes when the NAA's acknowledgement comes back, which on a real link
// (Soft-RoCE, a busy NIC) can be after a fast NAA's reply. --ack-us N models that link: the
// write counts as complete N microseconds after it was posted at the earliest (libfabric here
// completes it at once). A reply seen before then certainly arrived before the write completed
// and ends the client; one seen later, however late the client looked, never does: the verdict
// does not depend on this process's scheduling. An NAA that holds its replies to such a client
// for at least N microseconds after the request (naa-server --reference-guard-us) serves it.
//
// Usage: conformance-client --port PORT [--address ADDR] [--transport NAME] [--invocations N]
//                           [--regions N] [--size BYTES] [--ack-us N]
// (defaults 127.0.0.1, $NAA_TRANSPORT or ofi+tcp, 100 invocations, 4 regions of 4096 bytes,
// ack 0). Prints "conformance-client: N of M invocations" and exits 0 when all completed right.
#include <getopt.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/count.hpp"
#include "deadline.hpp"
#include "error.hpp"
#include "protocol/immediate.hpp"
#include "protocol/mrsp.hpp"
#include "transport/transport.hpp"

namespace {

using Clock = naa::Deadline::Clock;
using naa::transport::Completion;
using naa::transport::CompletionKind;

enum : uint64_t { kRecv = 1, kSend = 2, kWrites = 3 };
constexpr uint8_t kAdd1 = 1;

struct Options {
  std::string transport = "ofi+tcp", address = "127.0.0.1";
  uint16_t port = 0;
  uint64_t invocations = 100, regions = 4, size = 4096;
  std::chrono::microseconds ack{0};
};

// One completion, waiting for it by `deadline`.
Completion next(naa::transport::Endpoint &ep, naa::Deadline deadline) {
  Completion c{};
  while (ep.poll(&c, 1) == 0)
    if (deadline.expired()) throw naa::Error(NAA_ERR_TIMEOUT, "the NAA went silent");
  return c;
}

int run(const Options &o) {
  auto transport = naa::transport::open_transport(o.transport);
  const naa::Deadline connect_by = naa::Deadline::after(std::chrono::seconds(30));
  auto ep = transport->connect(o.address, o.port, "", connect_by);
  std::vector<uint8_t> mrsp_buf(2 * naa::protocol::mrsp::kBufferSize);
  auto mrsp_mr = ep->register_memory(mrsp_buf.data(), mrsp_buf.size(), false);
  std::vector<std::vector<uint8_t>> regions(o.regions, std::vector<uint8_t>(o.size, 0));
  std::vector<std::unique_ptr<naa::transport::MemoryRegion>> mrs;
  std::vector<uint32_t> sizes;
  for (auto &r : regions) {
    mrs.push_back(ep->register_memory(r.data(), r.size(), true));
    sizes.push_back(static_cast<uint32_t>(r.size()));
  }
  std::vector<uint64_t> naa_addresses(regions.size());
  naa::protocol::mrsp::placeholder_addresses(sizes.data(), sizes.size(), 0, naa_addresses.data());
  std::vector<naa::protocol::mrsp::RequestEntry> request;
  for (size_t k = 0; k < regions.size(); ++k)
    request.push_back(
        {static_cast<uint8_t>(naa::protocol::mrsp::kInput | naa::protocol::mrsp::kOutput),
         naa_addresses[k], mrs[k]->remote_addr, mrs[k]->rkey, sizes[k]});
  uint8_t *send_buf = mrsp_buf.data() + naa::protocol::mrsp::kBufferSize;
  const size_t len = naa::protocol::mrsp::encode_request(request.data(), request.size(), send_buf,
                                                         naa::protocol::mrsp::kBufferSize);
  ep->post_recv(mrsp_buf.data(), naa::protocol::mrsp::kBufferSize, *mrsp_mr, kRecv);
  ep->post_send(send_buf, len, *mrsp_mr, kSend);
  size_t received = 0;
  for (bool sent = false, got = false; !sent || !got;) {
    const Completion c = next(*ep, connect_by);
    sent = sent || c.kind == CompletionKind::Send;
    if (c.kind == CompletionKind::Recv) got = true, received = c.bytes;
  }
  naa::protocol::mrsp::Message advert;
  std::string why;
  if (naa::protocol::mrsp::decode(mrsp_buf.data(), received, advert, &why) !=
          naa::protocol::mrsp::DecodeError::None ||
      advert.type != naa::protocol::mrsp::Type::Advertise ||
      advert.advert.size() != regions.size()) {
    std::fprintf(stderr, "conformance-client: no advertisement from the NAA (%s)\n", why.c_str());
    return 1;
  }
  std::vector<naa::transport::WriteSegment> writes;
  for (size_t k = 0; k < regions.size(); ++k)
    writes.push_back(
        {mrs[k].get(), 0, regions[k].size(), advert.advert[k].naa_address, advert.advert[k].rkey});
  auto chain = ep->prepare_writes(writes, kWrites);

  uint64_t done = 0;
  for (; done < o.invocations; ++done) {
    // The reply of the last round just filled the buffers: the next request goes from them.
    if (ep->immediate_consumes_recv())
      ep->post_recv(mrsp_buf.data(), naa::protocol::mrsp::kBufferSize, *mrsp_mr, kRecv);
    ep->post_writes(*chain, naa::protocol::imm::host_request(kAdd1));
    const Clock::time_point acked = Clock::now() + o.ack;
    const naa::Deadline deadline = naa::Deadline::after(std::chrono::seconds(30));
    bool written = false;
    for (;;) {  // NAAICE_DATA_SENDING: its own write's completion, nothing else
      const Completion c = next(*ep, deadline);
      if (c.kind == CompletionKind::Writes) written = true;
      if (c.kind == CompletionKind::RemoteImm && (!written || Clock::now() < acked)) {
        std::fprintf(stderr,
                     "conformance-client: invocation %llu: Work completion opcode (wc "
                     "opcode): IBV_WC_RECV_RDMA_WITH_IMM, not handled for state: "
                     "NAAICE_DATA_SENDING (the NAA's reply came before our write completed)\n",
                     static_cast<unsigned long long>(done + 1));
        std::fprintf(stderr, "conformance-client: %llu of %llu invocations\n",
                     static_cast<unsigned long long>(done),
                     static_cast<unsigned long long>(o.invocations));
        return 1;
      }
      if (c.kind == CompletionKind::RemoteImm) {
        if (naa::protocol::imm::return_code(c.imm) != 0)
          throw naa::Error(NAA_ERR_NAA, "the NAA answered an error");
        break;
      }
    }
    const auto want = static_cast<uint8_t>(done + 1);
    for (const auto &r : regions)
      for (const uint8_t b : r)
        if (b != want) throw naa::Error(NAA_ERR_PROTOCOL, "a region holds a wrong result");
  }
  std::fprintf(stderr, "conformance-client: %llu of %llu invocations\n",
               static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(o.invocations));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  if (const char *t = std::getenv("NAA_TRANSPORT");
      t != nullptr && *t != '\0' && std::strcmp(t, "auto") != 0)
    o.transport = t;
  static const option long_options[] = {{"transport", required_argument, nullptr, 't'},
                                        {"address", required_argument, nullptr, 'a'},
                                        {"port", required_argument, nullptr, 'p'},
                                        {"invocations", required_argument, nullptr, 'n'},
                                        {"regions", required_argument, nullptr, 'r'},
                                        {"size", required_argument, nullptr, 's'},
                                        {"ack-us", required_argument, nullptr, 'k'},
                                        {nullptr, 0, nullptr, 0}};
  int opt;
  uint64_t n = 0;
  while ((opt = getopt_long(argc, argv, "t:a:p:n:r:s:k:", long_options, nullptr)) != -1) {
    bool ok = true;
    switch (opt) {
      case 't':
        o.transport = optarg;
        break;
      case 'a':
        o.address = optarg;
        break;
      case 'p':
        ok = naa::config::parse_count(optarg, 65535, &n);
        o.port = static_cast<uint16_t>(n);
        break;
      case 'n':
        ok = naa::config::parse_count(optarg, 100000000, &o.invocations);
        break;
      case 'r':
        ok = naa::config::parse_count(optarg, 31, &o.regions) && o.regions > 0;
        break;
      case 's':
        ok = naa::config::parse_count(optarg, 1 << 30, &o.size) && o.size > 0;
        break;
      case 'k':
        ok = naa::config::parse_count(optarg, 10000000, &n);
        o.ack = std::chrono::microseconds(n);
        break;
      default:
        ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: conformance-client --port PORT [--address ADDR] [--transport NAME] "
                   "[--invocations N] [--regions N] [--size BYTES] [--ack-us N]\n");
      return 2;
    }
  }
  try {
    return run(o);
  } catch (const naa::Error &e) {
    std::fprintf(stderr, "conformance-client: %s\n", e.what());
    return 1;
  }
}
