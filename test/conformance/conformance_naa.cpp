// SPDX-License-Identifier: BSD-3-Clause
// conformance-naa: a test peer that behaves like the NAAs in the field rather than like our own
// naa-server, so that libnaa is tested against what it will meet (doc/protocol.md §4.4):
//  - event-driven like the reference software NAA: after taking the completion of its own
//    reply it "re-arms without polling". A request that reached its completion queue by then
//    raises no event and is never answered (stranded). The window is widened on purpose
//    (--window-us) and measured from the moment the reply was posted, which is before the
//    host can see the reply: a host that paces by at least the window after polling the
//    reply is never stranded. Only a request seen before the window's end is stranded (the
//    NAA watches its queue through the window), so neither a slow host nor this process's
//    own lateness decides a verdict against the host: a request seen in the window certainly
//    arrived in it and is stranded, one that arrives after it is always served. A test that
//    must see an unpaced host stranded opens a window far wider than any scheduling delay
//    (--order window@N=US); the real window is far narrower (the
//    NAA's own re-arm, plus its wake-up under load): what the tests show is that pacing closes
//    the window it is sized for;
//  - one receive posted per invocation, after its own reply writes completed, plus one spare
//    from connection set-up (the MRSP receive is posted twice);
//  - MRSP error answers as the reference gives them (0x01 for any failure), after which it
//    tears the connection down;
//  - "Server overlad" (sic, 15 bytes with the NUL) as the reject reason when full;
//  - no private data on the accept: libnaa cannot recognise it as a libnaa server;
//  - function codes 1 (add 1 to every byte of every region), 2 (add 2), 3 (no-op); any other
//    code gets no reply at all, as in the reference.
//  - a slow mode (--slow-us N), an NAA on slower hardware or under emulation: every event is
//    handled N microseconds after it was taken, and the re-arm window grows by N/4 with it (an
//    NAA that runs k times slower re-arms k times slower), so a fixed guard sized for a fast NAA
//    strands and one that grows with the round trips it sees does not.
//  - the reference's event loop (--event-loop), as naaice_swnaa_poll_cq_nonblocking runs it:
//    on each completion-channel event it takes one work completion, and once the state changed
//    it stops draining and re-arms the queue without polling it again. Its own send's
//    completion is such an event, after its MRSP advertisement (MRSP_SENDING -> MRSP_DONE) as
//    after every reply (DATA_SENDING -> DATA_RECEIVING), so the window lasts the whole handling
//    of one event and follows the advertisement too: the first invocation can be stranded.
//    Here the window after each message it sends is the slow mode's delay in full plus
//    --window-us (instead of a quarter, and none after the advertisement). It is measured from
//    posting the message, as the other windows, so that a host's verdict never depends on this
//    process's lateness: the reference's starts later still, when it takes the completion. A
//    host guard at least one event's handling long (the memory-region exchange and every
//    reply hold one) is never caught; half of it always is.
//
// Orders (--order KIND@N[=VALUE], repeatable): explicit behaviour for the Nth invocation of
// every connection (N from 1; the invocations it answers or strands, not the unknown codes it
// ignores), so that a test provokes what it proves instead of waiting for timing to produce
// it. Known kinds:
//    window@N=US  the re-arm window after reply N is US microseconds (instead of --window-us
//                 plus the slow mode's quarter): with a window far beyond any scheduling delay,
//                 an unpaced host's next request is stranded for certain, and a host that paces
//                 by at least US is never.
// To add an order: a value of Order::Kind, its name in kOrderNames (with whether it takes a
// value), and its effect where Client looks it up with order(); document it above.
// Not reproduced: the reference arms its CQ solicited-only until its first event. The
// transport interface has no solicited-only wait; the SE bit on every MRSP send and final
// write is set by the transports themselves (lib/transport/verbs/verbs_endpoint_post.cpp).
// The mirror race of §4.4 (a request seen before the NAA's own write completion) makes the
// reference drop the connection; here such a request is stranded when seen within the window
// and served otherwise, as any other request.
//
// Usage: conformance-naa [--transport NAME] [--address ADDR] [--port PORT] [--ready-file PATH]
//                        [--window-us N] [--slow-us N] [--event-loop] [--order KIND@N[=VALUE]]...
//                        [--max-clients N] [--memory SIZE] [--verbose]
// (naa-server's names where they mean the same; defaults $NAA_TRANSPORT or ofi+tcp, 127.0.0.1, 0,
// window 1000 us, 8 clients, 1G per client.) On exit (SIGTERM) it prints "conformance-naa: N
// invocations served, S requests stranded".
#include <getopt.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/count.hpp"
#include "error.hpp"
#include "protocol/immediate.hpp"
#include "diag/log.hpp"
#include "protocol/mrsp.hpp"
#include "transport/transport.hpp"

namespace {

using Clock = naa::Deadline::Clock;
using naa::transport::Completion;
using naa::transport::CompletionKind;

std::atomic<bool> stop{false};
std::atomic<unsigned long> served{0}, stranded{0}, early{0};

struct Order {
  enum class Kind { Window };
  Kind kind;
  unsigned long n;     // the invocation it applies to, from 1
  uint64_t value = 0;  // its argument (microseconds for window)
};

struct OrderName {
  const char *name;
  Order::Kind kind;
  bool takes_value;
};
constexpr OrderName kOrderNames[] = {{"window", Order::Kind::Window, true}};

// "KIND@N" or "KIND@N=VALUE"; false (with a message) for anything else.
bool parse_order(const char *text, Order *out) {
  const char *at = std::strchr(text, '@');
  const OrderName *known = nullptr;
  for (const OrderName &o : kOrderNames)
    if (at != nullptr && std::strncmp(text, o.name, static_cast<size_t>(at - text)) == 0 &&
        o.name[at - text] == '\0')
      known = &o;
  if (known == nullptr) {
    std::fprintf(stderr, "conformance-naa: --order %s: unknown kind (KIND@N[=VALUE])\n", text);
    return false;
  }
  std::string n(at + 1), value;
  if (const size_t eq = n.find('='); eq != std::string::npos) {
    value = n.substr(eq + 1);
    n.resize(eq);
  }
  uint64_t count = 0;
  out->kind = known->kind;
  if (!naa::config::parse_count(n.c_str(), UINT32_MAX, &count) || count == 0 ||
      value.empty() == known->takes_value ||
      (known->takes_value && !naa::config::parse_count(value.c_str(), 100000000, &out->value))) {
    std::fprintf(stderr, "conformance-naa: --order %s: want %s@N%s with N from 1\n", text,
                 known->name, known->takes_value ? "=VALUE" : "");
    return false;
  }
  out->n = count;
  return true;
}

struct Options {
  std::string transport = "ofi+tcp", address = "127.0.0.1", ready_file;
  uint16_t port = 0;
  std::chrono::microseconds window{1000};
  std::chrono::microseconds slow{
      0};                   // --slow-us: each event's delay; the window grows by a quarter
  bool event_loop = false;  // --event-loop: the window lasts one event's handling, and follows
                            // the MRSP advertisement too
  unsigned max_clients = 8;
  uint64_t memory = uint64_t{1} << 30;  // per client: beyond it MRSP is answered with 0x01
  std::vector<Order> orders;

  const Order *order(Order::Kind kind, unsigned long n) const {
    for (const Order &o : orders)
      if (o.kind == kind && o.n == n) return &o;
    return nullptr;
  }
};

constexpr auto kSlice = std::chrono::milliseconds(200);
enum : uint64_t { kRecv = 1, kSend = 2, kReply = 3 };

class Client {
 public:
  Client(std::unique_ptr<naa::transport::Endpoint> ep, const Options &o)
      : ep_(std::move(ep)), o_(o) {}

  void run() {
    try {
      mrsp_mr_ = ep_->register_memory(buf_.data(), buf_.size(), false);
      // Twice, as the reference does: the host's MRSP send takes one, the other is the spare.
      ep_->post_recv(buf_.data(), naa::protocol::mrsp::kBufferSize, *mrsp_mr_, kRecv);
      ep_->post_recv(buf_.data(), naa::protocol::mrsp::kBufferSize, *mrsp_mr_, kRecv);
      ep_->accept(naa::Deadline::after(std::chrono::seconds(10)));
      if (!exchange()) return;
      serve();
    } catch (const naa::Error &e) {
      NAA_LOG_INFO("client %s: %s", ep_->peer().c_str(), e.what());
    }
  }

 private:
  Completion next(naa::Deadline deadline) {
    Completion c{};
    while (!stop.load())
      if (ep_->wait(&c, 1, naa::Deadline::after(kSlice)) == 1)
        return c;
      else if (deadline.expired())
        throw naa::Error(NAA_ERR_TIMEOUT, "client went silent");
    throw naa::Error(NAA_ERR_CONNECTION, "stopping");
  }

  bool exchange() {
    Completion c = next(naa::Deadline::after(std::chrono::seconds(10)));
    if (o_.slow.count() > 0) std::this_thread::sleep_for(o_.slow);  // an event as any other
    naa::protocol::mrsp::Message m;
    std::string why;
    uint64_t total = 0;
    bool ok = c.kind == CompletionKind::Recv &&
              naa::protocol::mrsp::decode(buf_.data(), c.bytes, m, &why) ==
                  naa::protocol::mrsp::DecodeError::None &&
              m.type == naa::protocol::mrsp::Type::AdvertiseRequest;
    for (const auto &e : m.request) total += e.size;
    if (!ok || total > o_.memory) {
      NAA_LOG_WARN("client %s: MRSP refused (%s)", ep_->peer().c_str(),
                   ok ? "not enough memory" : why.c_str());
      size_t len = naa::protocol::mrsp::encode_error(naa::protocol::mrsp::ErrorCode::NoMemory,
                                                     send_buf(), naa::protocol::mrsp::kBufferSize);
      ep_->post_send(send_buf(), len, *mrsp_mr_, kSend);
      next(naa::Deadline::after(std::chrono::seconds(1)));  // the send's completion
      return false;
    }
    std::vector<naa::protocol::mrsp::AdvertEntry> advert;
    std::vector<naa::transport::WriteSegment> outputs;
    for (const auto &e : m.request) {
      memory_.emplace_back(e.size, 0);
      mrs_.push_back(ep_->register_memory(memory_.back().data(), e.size, true));
      if (e.flags & naa::protocol::mrsp::kInternal) continue;
      advert.push_back({mrs_.back()->remote_addr, mrs_.back()->rkey, e.size});
      if (e.flags & naa::protocol::mrsp::kOutput)
        outputs.push_back({mrs_.back().get(), 0, e.size, e.host_address, e.host_rkey});
    }
    if (outputs.empty())
      outputs.push_back({mrs_[0].get(), 0, 0, m.request[0].host_address, m.request[0].host_rkey});
    reply_ = ep_->prepare_writes(outputs, kReply);
    size_t len = naa::protocol::mrsp::encode_advert(advert.data(), advert.size(), send_buf(),
                                                    naa::protocol::mrsp::kBufferSize);
    advertised_ = Clock::now();
    ep_->post_send(send_buf(), len, *mrsp_mr_, kSend);
    return true;
  }

  void post_invocation_recv() {
    if (ep_->immediate_consumes_recv())
      ep_->post_recv(buf_.data(), naa::protocol::mrsp::kBufferSize, *mrsp_mr_, kRecv);
  }

  void serve() {
    const naa::Deadline forever = naa::Deadline::after(std::chrono::hours(1));  // the reference's
    for (unsigned long n = 1;;) {
      Completion c = pending_ ? *pending_ : next(forever);
      pending_.reset();
      if (o_.event_loop && c.kind == CompletionKind::Send) {
        // The advertisement's completion, handled through the window: a request that reaches
        // the queue before the re-arm is lost.
        advertisement_taken_ = true;
        post_invocation_recv();
        if (lost_wake_up(advertised_ + window(0))) return park();
        continue;
      }
      if (o_.event_loop && !advertisement_taken_ && c.kind == CompletionKind::RemoteImm &&
          strands(advertised_ + window(0)))
        return park();  // before the advertisement's completion, within its window
      if (o_.slow.count() > 0) std::this_thread::sleep_for(o_.slow);
      if (c.kind == CompletionKind::Send) {
        post_invocation_recv();  // the reference posts it once its advertisement went out
        continue;
      }
      if (c.kind != CompletionKind::RemoteImm) continue;
      uint8_t fn = c.imm & 0x7f;
      if (c.imm == 0 || (c.imm & 0x80) == 0 || fn < 1 || fn > 3) {
        NAA_LOG_WARN("client %s: immediate 0x%08x: no kernel, no reply (as the reference)",
                     ep_->peer().c_str(), c.imm);
        continue;
      }
      for (auto &region : memory_)
        if (fn != 3)
          for (uint8_t &b : region) b = static_cast<uint8_t>(b + fn);
      const Clock::time_point end = Clock::now() + window(n);
      ep_->post_writes(*reply_, naa::protocol::imm::naa_reply(0));
      ++served;
      const bool lost = take_own_write_completion(end);
      post_invocation_recv();
      if (lost || (!pending_ && lost_wake_up(end))) return park();
      ++n;
    }
  }

  // Polls (one completion at a time, as the reference takes them) until the reply's writes
  // completed. A request that arrives first is stranded if seen before `end` (true), else
  // kept for the next round.
  bool take_own_write_completion(Clock::time_point end) {
    const naa::Deadline deadline = naa::Deadline::after(std::chrono::seconds(10));
    for (;;) {
      Completion c{};
      if (ep_->poll(&c, 1) == 0) {
        if (deadline.expired()) throw naa::Error(NAA_ERR_TIMEOUT, "our reply never completed");
        continue;
      }
      if (c.kind == CompletionKind::Writes) return false;
      if (c.kind == CompletionKind::RemoteImm) {
        ++early;
        NAA_LOG_INFO(
            "client %s: request before our write completion (the reference drops the "
            "connection here)",
            ep_->peer().c_str());
        if (strands(end)) return true;
        pending_ = c;
      }
    }
  }

  // Re-arming without polling at `end`: a request that reached the queue before then is
  // lost. The queue is watched until `end`, so a request is stranded only when it was seen
  // before `end` (it certainly arrived before); one seen later is served.
  bool lost_wake_up(Clock::time_point end) {
    Completion c{};
    while (Clock::now() < end)
      if (ep_->wait(&c, 1, naa::Deadline::at(end)) == 1) {
        if (c.kind == CompletionKind::RemoteImm && strands(end)) return true;
        pending_ = c;  // seen after `end`, or not a request: handled by the next round
        return false;
      }
    if (ep_->poll(&c, 1) == 1) pending_ = c;
    return false;
  }

  // Read after the completion was taken: true (and counted) when that was before `end`.
  bool strands(Clock::time_point end) {
    if (Clock::now() >= end) return false;
    ++stranded;
    NAA_LOG_WARN(
        "client %s: request stranded (it arrived within the window after our reply: "
        "lost wake-up, doc/protocol.md §4.4)",
        ep_->peer().c_str());
    return true;
  }

  // The re-arm window after reply n (0: after the advertisement): an order's, else --window-us
  // plus the slow mode's quarter, or its whole delay in the event-loop mode.
  std::chrono::microseconds window(unsigned long n) const {
    if (const Order *w = o_.order(Order::Kind::Window, n))
      return std::chrono::microseconds(w->value);
    return o_.window + (o_.event_loop ? o_.slow : o_.slow / 4);
  }

  // A stranded connection: nothing more is answered, until the host goes away.
  void park() {
    Completion c{};
    while (!stop.load()) ep_->wait(&c, 1, naa::Deadline::after(kSlice));
  }

  uint8_t *send_buf() { return buf_.data() + naa::protocol::mrsp::kBufferSize; }

  std::unique_ptr<naa::transport::Endpoint> ep_;
  const Options &o_;
  std::array<uint8_t, 2 * naa::protocol::mrsp::kBufferSize> buf_{};
  std::unique_ptr<naa::transport::MemoryRegion> mrsp_mr_;
  std::list<std::vector<uint8_t>> memory_;
  std::vector<std::unique_ptr<naa::transport::MemoryRegion>> mrs_;
  std::unique_ptr<naa::transport::WriteChain> reply_;
  std::optional<Completion> pending_;  // taken off the queue, not yet handled
  Clock::time_point advertised_{};     // when the MRSP advertisement was posted
  bool advertisement_taken_ = false;   // its send's completion was taken
};

void write_ready_file(const std::string &path, uint16_t port) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

struct Running {
  std::thread thread;
  std::atomic<bool> done{false};
};

}  // namespace

int main(int argc, char **argv) {
  naa::diag::log::set_program("conformance-naa");
  Options o;
  // Like naa-server: NAA_TRANSPORT names the transport unless --transport does.
  if (const char *t = std::getenv("NAA_TRANSPORT");
      t != nullptr && *t != '\0' && std::strcmp(t, "auto") != 0)
    o.transport = t;
  int opt;
  uint64_t n = 0;
  static const option long_options[] = {{"transport", required_argument, nullptr, 't'},
                                        {"address", required_argument, nullptr, 'a'},
                                        {"port", required_argument, nullptr, 'p'},
                                        {"ready-file", required_argument, nullptr, 'r'},
                                        {"window-us", required_argument, nullptr, 'w'},
                                        {"max-clients", required_argument, nullptr, 'c'},
                                        {"memory", required_argument, nullptr, 'm'},
                                        {"verbose", no_argument, nullptr, 'v'},
                                        {"slow-us", required_argument, nullptr, 's'},
                                        {"order", required_argument, nullptr, 'o'},
                                        {"event-loop", no_argument, nullptr, 'e'},
                                        {nullptr, 0, nullptr, 0}};
  while ((opt = getopt_long(argc, argv, "t:a:p:r:w:c:m:vs:o:e", long_options, nullptr)) != -1) {
    switch (opt) {
      case 't':
        o.transport = optarg;
        break;
      case 'a':
        o.address = optarg;
        break;
      case 'p':
        if (!naa::config::parse_count(optarg, 65535, &n)) return 2;
        o.port = static_cast<uint16_t>(n);
        break;
      case 'r':
        o.ready_file = optarg;
        break;
      case 'w':
        if (!naa::config::parse_count(optarg, 10000000, &n)) return 2;
        o.window = std::chrono::microseconds(n);
        break;
      case 's':
        if (!naa::config::parse_count(optarg, 10000000, &n)) return 2;
        o.slow = std::chrono::microseconds(n);
        break;
      case 'o':
        if (!parse_order(optarg, &o.orders.emplace_back())) return 2;
        break;
      case 'e':
        o.event_loop = true;
        break;
      case 'c':
        if (!naa::config::parse_count(optarg, 1000, &n) || n == 0) return 2;
        o.max_clients = static_cast<unsigned>(n);
        break;
      case 'm':
        if (!naa::config::parse_count(optarg, UINT64_MAX, &o.memory, true)) return 2;
        break;
      case 'v':
        setenv("NAA_LOG_LEVEL", "info", 0);
        break;
      default:
        std::fprintf(stderr,
                     "usage: conformance-naa [--transport NAME] [--address ADDR] [--port N] "
                     "[--ready-file PATH] [--window-us N] [--slow-us N] [--event-loop] "
                     "[--order KIND@N[=VALUE]]... "
                     "[--max-clients N] "
                     "[--memory SIZE] [--verbose]\n");
        return 2;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = [](int) { stop.store(true); };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  try {
    auto transport = naa::transport::open_transport(o.transport);
    auto listener = transport->listen(o.address, o.port);
    if (!o.ready_file.empty()) write_ready_file(o.ready_file, listener->port());
    std::fprintf(stderr, "conformance-naa: listening on %s:%u (%s), window %ld us, slow %ld us%s\n",
                 o.address.c_str(), static_cast<unsigned>(listener->port()), transport->name(),
                 static_cast<long>((o.window + (o.event_loop ? o.slow : o.slow / 4)).count()),
                 static_cast<long>(o.slow.count()),
                 o.event_loop ? ", the reference's event loop" : "");
    std::list<Running> clients;
    while (!stop.load()) {
      auto ep = listener->next_request(naa::Deadline::after(kSlice));
      clients.remove_if([](Running &r) {
        if (r.done.load()) r.thread.join();
        return r.done.load();
      });
      if (!ep) continue;
      if (clients.size() >= o.max_clients) {
        ep->reject("Server overlad");  // sic: the reference NAA's text
        continue;
      }
      Running &r = clients.emplace_back();
      auto client = std::make_shared<Client>(std::move(ep), o);
      r.thread = std::thread([client, &r] {
        client->run();
        r.done.store(true);
      });
    }
    for (Running &r : clients) r.thread.join();
  } catch (const naa::Error &e) {
    std::fprintf(stderr, "conformance-naa: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "conformance-naa: %lu invocations served, %lu requests stranded, %lu "
               "requests seen before our write completion\n",
               served.load(), stranded.load(), early.load());
  return 0;
}
