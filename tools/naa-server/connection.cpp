// SPDX-License-Identifier: BSD-3-Clause
#include "connection.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "error.hpp"
#include "config/auth.hpp"
#include "protocol/connect_data.hpp"
#include "protocol/immediate.hpp"
#include "protocol/kernel_list.hpp"
#include "kernel_energy.hpp"
#include "key_check.hpp"
#include "transport/descriptor_gate.hpp"
#include "diag/log.hpp"
#include "progress/busy_node.hpp"

namespace naa::server {
namespace {

enum Context : uint64_t { kMrspRecv = 1, kMrspSend = 2, kReplyWrites = 3, kInvocationRecv = 4 };
constexpr int kStopCheckMs = 200;
// Every blocking step has a deadline: a connection asleep on its descriptors wakes this
// rarely without news (a day; poll's timeout reaches 24 days).
constexpr auto kLongestSleep = std::chrono::hours(24);
constexpr unsigned kCheapPollsPerYield = 32;

// For the test suite only (naa-server(1), ENVIRONMENT): NAA_SERVER_TEST_LATE_ACCEPT=1 leaves
// every acceptance to the thread that serves the client, as when a client over shm does not
// read in time for the listening thread's attempt, so that a test can force that path instead
// of racing a client's naps against the attempt.
bool test_late_accept() {
  static const bool late = [] {
    const char *v = std::getenv("NAA_SERVER_TEST_LATE_ACCEPT");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return late;
}

// How soon a client's first message (its first invocation, or its goodbye) comes after our
// advertisement, over the server's connections: a program that creates handles one after
// another, or invokes at once, sends it within microseconds, and a connection thread asleep by
// then costs it a wake-up (a large share of a warm ofi+shm naa_create, doc/performance.md).
naa::SharedArrivalPoll &first_message() {
  static naa::SharedArrivalPoll poll;
  return poll;
}

// The identity (NUL included) tells a libnaa client that it needs no pacing.
const std::string &server_identity() {
  static const std::string identity(transport::kServerIdentity, sizeof transport::kServerIdentity);
  return identity;
}

}  // namespace

Connection::Connection(std::unique_ptr<transport::Endpoint> ep, const KernelRegistry &kernels,
                       MemoryBudget &budget, const KernelPolicy &policy,
                       std::chrono::milliseconds mrsp_timeout,
                       std::chrono::milliseconds idle_timeout, std::chrono::microseconds spin,
                       bool adaptive, std::chrono::microseconds reference_guard,
                       const StopSignal &stop, RegionPool *regions)
    : mrsp_timeout_(mrsp_timeout),
      idle_timeout_(idle_timeout),
      spin_(spin),
      adaptive_(adaptive),
      reference_client_(!config::auth::from_libnaa(ep->peer_data())),
      reference_guard_(reference_guard),
      stop_(stop),
      handler_(kernels, budget, policy, &stop.flag(), peer_host(ep->peer()), regions),
      accept_data_(server_identity()),
      ep_(std::move(ep)),
      mrsp_buf_(2 * protocol::mrsp::kBufferSize) {
  ep_->interrupt_on(stop_.fd());
}

Connection::~Connection() {
  reply_chain_.reset();
  buffer_mrs_.clear();
}

void Connection::start() {
  if (!ep_->can_begin_accept()) return;
  started_ = true;
  try {
    regions_in_accept_ = serve_request_in_connection(&accept_data_);
    if (!regions_in_accept_) post_mrsp_recv();
    if (!test_late_accept()) ep_->begin_accept(accept_data_);
  } catch (...) {
    start_failed_ = std::current_exception();
  }
}

// The client's memory-region request in its connection request (doc/protocol.md §3.4), served
// before the accept, whose private data then carries our advertisement after the identity.
// False, with nothing kept, where there is none or it cannot be served so (no room, too few
// descriptors, any refusal): the client then sends it by message and gets its answer,
// errors included, as for a client that never sent it early.
bool Connection::serve_request_in_connection(std::string *accept_data) {
  const std::string &data = ep_->peer_data();
  size_t len = 0;
  const uint8_t *request =
      protocol::mrsp::from_connect_data(data, config::auth::connect_data_length(data), &len);
  const size_t room = request != nullptr ? ep_->connect_data_room() : 0;
  if (room == 0) return false;
  std::string why;
  len = std::min(len, protocol::mrsp::kBufferSize);
  if (!descriptors_spare_for(room / protocol::mrsp::kRequestEntrySize)) {
    why = "few descriptors spare";
  } else {
    const bool served = handler_.on_mrsp(request, len, &why, false) == 0;
    if (served) take_asks(request, len);
    if (!served ||
        room < accept_data->size() + protocol::mrsp::kConnectTagSize + protocol::mrsp::kHeaderSize +
                   protocol::mrsp::kAdvertEntrySize * handler_.parameters().size() +
                   energy_answer_.size() + kernel_list_answer_.size() ||
        !register_regions(&why)) {
      if (why.empty()) why = "no room for the advertisement";
      buffer_mrs_.clear();
      drop_answers();
      handler_.withdraw();
    }
  }
  if (!why.empty()) {
    NAA_LOG_DEBUG(
        "client %s: its memory-region request in the connection request is left for "
        "the exchange by messages (%s)",
        ep_->peer().c_str(), why.c_str());
    return false;
  }
  mrsp_mr_ = ep_->register_memory(mrsp_buf_.data(), mrsp_buf_.size(), false);
  uint8_t *advert = mrsp_buf_.data() + protocol::mrsp::kBufferSize;
  const std::string tagged =
      protocol::mrsp::in_connect_data(advert, advertise(advert), room - accept_data->size());
  // The room was checked above: an accept without the advertisement would leave the client
  // waiting for an answer to a request we no longer receive.
  if (tagged.empty()) throw std::logic_error("the advertisement does not fit the accept");
  *accept_data += tagged;
  return true;
}

// The regions of a request served before the accept take a descriptor each (a memfd) ahead
// of the accept's own needs: over shm its send maps the client, for which the listener keeps
// kSpareDescriptors. Without room for both, the exchange goes by messages after the accept,
// where a region may wait for a descriptor (Handler::on_mrsp).
bool Connection::descriptors_spare_for(size_t regions) {
  std::lock_guard<std::mutex> gate(transport::descriptor_gate());
  return transport::descriptors_spare(transport::kSpareDescriptors + regions);
}

// Before accepting, as the reference NAA does: the client may send its request as soon as the
// connection is established.
void Connection::post_mrsp_recv() {
  mrsp_mr_ = ep_->register_memory(mrsp_buf_.data(), mrsp_buf_.size(), false);
  ep_->post_recv(mrsp_buf_.data(), protocol::mrsp::kBufferSize, *mrsp_mr_, kMrspRecv);
}

void Connection::run() {
  const std::string peer = ep_->peer();
  // Named, so that top -H and the tests (idle_connection.sh) tell a client's thread.
  pthread_setname_np(pthread_self(), "naa-client");
  // The thread serves another client next, or parks: on naa-server's CPUs again.
  struct Release {
    ClientCpu &cpu;
    const std::string &peer;
    ~Release() { cpu.release(peer); }
  } release{client_cpu_, peer};
  try {
    if (start_failed_) std::rethrow_exception(start_failed_);
    if (!started_) post_mrsp_recv();
    ep_->accept(Deadline::after(mrsp_timeout_), accept_data_);
    NAA_LOG_INFO("client %s connected%s", peer.c_str(),
                 reference_client_ ? " (not libnaa: each reply waits until the client's own "
                                     "write has surely completed, --reference-guard-us)"
                                   : "");
    if (regions_in_accept_)
      advertised("in the accept");
    else if (!exchange_memory_regions())
      return;
    Deadline idle = Deadline::after(idle_timeout_);
    while (!stop_.raised()) {
      if (idle_timeout_.count() != 0 && idle.expired()) {
        NAA_LOG_WARN("client %s: no invocation for %ld s (--idle-timeout); dropping it",
                     peer.c_str(), static_cast<long>(idle_timeout_.count() / 1000));
        return;
      }
      transport::Completion c[kBatch];
      size_t n = next_completions(c, kBatch, idle);
      if (reference_client_ && n > 1) order_acknowledgements_first(c, n);
      for (size_t i = 0; i < n; ++i) {
        if (c[i].kind == transport::CompletionKind::RemoteImm) {
          idle = Deadline::after(idle_timeout_);
          if (invocations_ > 0)
            next_invocation_.observe(last_news_ - replied_);
          else
            first_message().observe(last_news_ - replied_);
          invocation_came();
          // What we posted before and has not completed yet takes at least this long to be
          // acknowledged: a lower bound for the guard, which otherwise knows only faster ones.
          if (reference_client_ && !unacknowledged_.empty())
            reply_acked_.observe(last_news_ - unacknowledged_.front());
          invoke(c[i].imm);
        } else if (c[i].kind == transport::CompletionKind::Writes && c[i].context == kReplyWrites) {
          acknowledged("the reply's writes");
        } else if (c[i].kind == transport::CompletionKind::Send && c[i].context == kMrspSend) {
          // The advertisement's acknowledgement is the first measure of the link's: the reply
          // to a reference client's first invocation is guarded by it too (hold_reply).
          acknowledged("the advertisement's send");
        } else if (c[i].kind == transport::CompletionKind::Recv) {
          // Consumed and dropped, the receive re-posted at once: an unreceived message would
          // sit in front of the client's close, which then would never be seen.
          if (++stray_messages_ == 1)
            NAA_LOG_WARN("client %s sent a message after MRSP; ignored (logged once)",
                         peer.c_str());
          post_invocation_recv();
        }
      }
    }
  } catch (const Error &e) {
    if (e.code() == NAA_ERR_CONNECTION && invocations_ == 0 && replied_ != naa::Clock::time_point{})
      first_message().observe(naa::Clock::now() - replied_);  // it said goodbye first
    if (e.code() == NAA_ERR_CONNECTION)
      NAA_LOG_INFO("client %s: %s (after %" PRIu64 " invocations)", peer.c_str(), e.what(),
                   invocations_);
    else
      NAA_LOG_WARN("client %s: %s; dropping it", peer.c_str(), e.what());
  } catch (const std::exception &e) {
    NAA_LOG_ERROR("client %s: %s; dropping it", peer.c_str(), e.what());
  }
}

// Polls while the client's next invocation is due by the wait plan (wait_plan.hpp:
// twice as long as it took to come after our recent replies, --spin-us at least; a new
// connection's first message while the server's recent clients sent theirs within 1 ms of the
// advertisement, naa::ArrivalPoll), then sleeps
// in the transport: a blocked thread's wake-up is most of a small round trip, and a client
// that stopped invoking costs nothing after a few of its round trips.
size_t Connection::next_completions(transport::Completion *c, size_t max, Deadline idle_until) {
  size_t n = ep_->poll(c, max);
  if (n == 0) {
    const auto now = naa::Clock::now();
    const auto idle = now - last_news_;
    const naa::nanoseconds poll_for =
        invocations_ == 0
            ? first_message().due(spin_)
            : naa::wait_plan(next_invocation_.value(), spin_, ep_->wait_fd() >= 0).poll;
    if (may_poll(now, idle, poll_for)) {
      polling_.poll();
      // The client may share this core (loopback, shm): it moves meanwhile. Every few
      // microseconds of polling: after every poll where a poll is itself a system call (tcp,
      // verbs), after kCheapPollsPerYield where it only reads memory (shm), as a post that
      // lands during the yield is seen only after it (a yield after every poll makes shm's small
      // round trip slower, doc/performance.md).
      if (!ep_->polls_memory() || ++empty_polls_ % kCheapPollsPerYield == 0) sched_yield();
      return 0;
    }
    polling_.stop();
    place_before_sleep(now);
    n = ep_->wait(
        c, max,
        sleep_until(idle_timeout_.count() != 0 ? idle_until : Deadline::after(kLongestSleep),
                    idle));
  }
  if (n > 0) {
    polling_.stop();
    last_news_ = naa::Clock::now();
  }
  return n;
}

// Whether to poll on, `idle` into the wait for the next invocation (at `now`), where the wait plan
// polls for `poll_for`. Adaptive (--wait): never while the node is oversubscribed, where this
// thread would hold the core that the client, another connection or the kernel needs
// (progress/busy_node.hpp), nor while this connection's polls did not pay lately
// (progress/spin_budget.hpp), which it learns from the polls that end in the next invocation
// or in a sleep.
bool Connection::may_poll(naa::Clock::time_point now, naa::nanoseconds idle,
                          naa::nanoseconds poll_for) {
  if (!adaptive_) return idle < poll_for;
  if (idle >= poll_for || progress::node_oversubscribed(now, this)) {
    if (spell_ == Spell::Polled && idle >= poll_for) {
      spell_ = Spell::GaveUp;
      polled_for_ = poll_for;
      spell_from_ = last_news_;
    }
    if (spell_ != Spell::Skipped && spell_ != Spell::GaveUp) spell_ = Spell::Settled;
    return false;
  }
  if (spell_ == Spell::None && !spin_budget_.may_poll()) spell_ = Spell::Skipped;
  if (spell_ != Spell::None && spell_ != Spell::Polled) return false;
  spell_ = Spell::Polled;
  return true;
}

// Adaptive: while the node is oversubscribed this thread sleeps on the client's CPU, where the
// transport tells it (client_cpu.hpp); otherwise on naa-server's CPUs.
void Connection::place_before_sleep(naa::Clock::time_point now) {
  if (!adaptive_) return;
  if (progress::node_oversubscribed(now, this))
    client_cpu_.follow(ep_->peer_cpu(), ep_->peer());
  else
    client_cpu_.release(ep_->peer());
}

// The end of a wait for an invocation, for the spin budget. A spell that gave up counts as a
// miss only where the invocation then came later than twice the spell
// (progress::late_but_near).
void Connection::invocation_came() {
  if (spell_ == Spell::Polled ||
      (spell_ == Spell::GaveUp && progress::late_but_near(last_news_ - spell_from_, polled_for_)))
    spin_budget_.paid();
  else if (spell_ == Spell::GaveUp)
    spin_budget_.missed();
  else if (spell_ == Spell::Skipped)
    spin_budget_.skipped();
  spell_ = Spell::None;
}

// How long a wait for the client may sleep, at most `until`: as long as that where the endpoint
// sleeps on descriptors alone, the stop's among them (an idle connection wakes only for its
// client, its idle timeout or the stop); elsewhere the stop flag is looked at as rarely as the
// transport wakes for a client idle that long (`idle`), kStopCheckMs at least.
Deadline Connection::sleep_until(Deadline until, naa::Clock::duration idle) const {
  if (stop_.fd() >= 0 && ep_->wait_sleeps_through()) return until;
  const Deadline slice = Deadline::after(std::max<naa::Clock::duration>(
      std::chrono::milliseconds(kStopCheckMs), naa::idle_slice(idle)));
  return slice.remaining() < until.remaining() ? slice : until;
}

// The request is due as soon as the client sees its connection: polled for while due by the
// wait plan (from how long the server's last clients took, --spin-us at least), then slept for.
bool Connection::exchange_memory_regions() {
  const std::string &peer = ep_->peer();
  Deadline deadline = Deadline::after(mrsp_timeout_);
  static naa::SharedExpected request_took;
  const auto accepted = naa::Clock::now();
  const Deadline poll_until = Deadline::after(naa::wait_plan(request_took.value(), spin_).poll);
  size_t received = 0;
  bool got = false;
  while (!got) {
    if (stop_.raised()) return false;
    transport::Completion c[4];
    const bool polling = !poll_until.expired();
    size_t n = polling ? ep_->poll(c, 4) : ep_->wait(c, 4, sleep_until(deadline, {}));
    if (n == 0 && polling) sched_yield();  // the client may share this core: it moves meanwhile
    for (size_t i = 0; i < n; ++i)
      if (c[i].kind == transport::CompletionKind::Recv && c[i].context == kMrspRecv) {
        got = true;
        received = c[i].bytes;
        request_took.observe(naa::Clock::now() - accepted);
      }
    if (!got && deadline.expired()) {
      NAA_LOG_WARN("client %s sent no memory-region request within %ld ms; dropping it",
                   peer.c_str(), static_cast<long>(mrsp_timeout_.count()));
      return false;
    }
  }

  uint8_t *send_buf = mrsp_buf_.data() + protocol::mrsp::kBufferSize;
  std::string why;
  // A transport never reports more than the posted length; clamped so that a broken one cannot
  // make the decoder read past the receive half of the buffer.
  received = std::min(received, protocol::mrsp::kBufferSize);
  uint8_t error_code = handler_.on_mrsp(mrsp_buf_.data(), received, &why);
  if (error_code == 0 && !register_regions(&why))
    error_code = static_cast<uint8_t>(protocol::mrsp::ErrorCode::NoMemory);
  if (error_code == 0) take_asks(mrsp_buf_.data(), received);
  if (error_code != 0) {
    NAA_LOG_WARN("client %s: bad memory-region request (%s); answering MRSP error 0x%02x (%s)",
                 peer.c_str(), why.c_str(), error_code,
                 protocol::mrsp::error_code_name(error_code));
    const auto &limit = handler_.memory_refusal();
    size_t len =
        limit ? protocol::mrsp::encode_memory_refusal(*limit, send_buf, protocol::mrsp::kBufferSize)
              : protocol::mrsp::encode_error(static_cast<protocol::mrsp::ErrorCode>(error_code),
                                             send_buf, protocol::mrsp::kBufferSize);
    send_mrsp(send_buf, len);
    // The error must reach the client before the endpoint is torn down, unless the server
    // stops (the stop ends every wait at once then).
    Deadline sent = Deadline::after(std::chrono::seconds(1));
    for (bool done = false; !done && !sent.expired() && !stop_.raised();) {
      transport::Completion c[4];
      size_t n = ep_->wait(c, 4, sent);
      for (size_t i = 0; i < n; ++i) done |= c[i].kind == transport::CompletionKind::Send;
    }
    return false;
  }

  size_t len = advertise(send_buf);
  send_mrsp(send_buf, len);
  advertised("by message");
  if (reference_client_) unacknowledged_.push_back(replied_);
  return true;
}

// The client's first message is due from here.
void Connection::advertised(const char *how) {
  replied_ = last_news_ = naa::Clock::now();
  NAA_LOG_INFO("client %s: %zu regions, %" PRIu64 " bytes allocated, advertised %s",
               ep_->peer().c_str(), handler_.parameters().size(), handler_.reserved(), how);
}

// Once the regions are allocated and registered: the chain of our reply's writes, the receive
// for the first invocation, and the advertisement, encoded into `out` (its length returned).
size_t Connection::advertise(uint8_t *out) {
  const std::vector<protocol::mrsp::RequestEntry> &request = handler_.request();
  std::vector<protocol::mrsp::AdvertEntry> advert;
  std::vector<transport::WriteSegment> outputs;
  const protocol::mrsp::RequestEntry *first_parameter = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < request.size(); ++i) {
    const protocol::mrsp::RequestEntry &e = request[i];
    if (e.flags & protocol::mrsp::kInternal) continue;
    const transport::MemoryRegion &mr = *buffer_mrs_[i];
    advert.push_back({mr.remote_addr, mr.rkey, e.size});
    if (first_parameter == nullptr) first_parameter = &e, first_index = i;
    if (e.flags & protocol::mrsp::kOutput)
      outputs.push_back({&mr, 0, e.size, e.host_address, e.host_rkey});
  }
  // Every reply must end in a write-with-immediate: without outputs it is a zero-length one to
  // the host's first region (doc/protocol.md §4.2). Handler refuses requests without parameter
  // regions.
  if (outputs.empty())
    outputs.push_back({buffer_mrs_[first_index].get(), 0, 0, first_parameter->host_address,
                       first_parameter->host_rkey});
  reply_chain_ = ep_->prepare_writes(outputs, kReplyWrites);
  // Posted before the advertisement, so the first invocation never meets a missing receive.
  post_invocation_recv();
  const size_t len =
      protocol::mrsp::encode_advert(advert.data(), advert.size(), out, protocol::mrsp::kBufferSize);
  // At most 4 + 16 * 31 bytes, the energy answer at most 68, the kernel list what was left
  // (take_kernel_list_ask): all fit the buffer.
  std::memcpy(out + len, energy_answer_.data(), energy_answer_.size());
  std::memcpy(out + len + energy_answer_.size(), kernel_list_answer_.data(),
              kernel_list_answer_.size());
  return len + energy_answer_.size() + kernel_list_answer_.size();
}

// The client's asks in the bytes after its memory-region request, energy's first.
void Connection::take_asks(const uint8_t *request, size_t len) {
  take_energy_ask(request, len);
  take_kernel_list_ask(request, len);
}

// The client's ask for the energy of each kernel run (doc/protocol.md §3.5), in the bytes after
// its memory-region request: taken where the kernel runs are measured (NAA_ENERGY and a source).
// Otherwise the advertisement carries no answer and the replies no energy, so that the client
// reports none.
void Connection::take_energy_ask(const uint8_t *request, size_t len) {
  const size_t used =
      protocol::mrsp::kHeaderSize + protocol::mrsp::kRequestEntrySize * handler_.request().size();
  std::string source;
  if (used > len || !protocol::energy_report::find_ask(request + used, len - used)) return;
  if (!kernel_energy::measuring(&source)) {
    NAA_LOG_INFO(
        "client %s asks for the energy of its kernel runs; none is measured here "
        "(NAA_ENERGY, naa-server(1))",
        ep_->peer().c_str());
    return;
  }
  energy_answer_ = protocol::energy_report::encode_answer(source);
  NAA_LOG_INFO("client %s: each reply carries the energy of its kernel run (%s)",
               ep_->peer().c_str(), source.c_str());
}

// The client's ask for our kernels (doc/protocol.md §3.6), after its energy ask if any: the
// answer lists them from the code asked, as many as fit the client's 768-byte receive behind the
// advertisement and the energy answer (at least 200 bytes: two kernels or more).
void Connection::take_kernel_list_ask(const uint8_t *request, size_t len) {
  size_t at =
      protocol::mrsp::kHeaderSize + protocol::mrsp::kRequestEntrySize * handler_.request().size();
  if (at <= len && protocol::energy_report::find_ask(request + at, len - at))
    at += protocol::energy_report::kAskSize;
  uint8_t from = 0;
  if (at > len || !protocol::kernel_list::find_ask(request + at, len - at, &from)) return;
  std::vector<protocol::kernel_list::Kernel> all;
  const KernelRegistry &kernels = handler_.kernels();
  for (const naa_kernel *k : kernels.list())
    all.push_back({k->function_code,
                   kernels.is_builtin(k->function_code) ? protocol::kernel_list::kBuiltin
                                                        : protocol::kernel_list::kPlugin,
                   k->name});
  const size_t used = protocol::mrsp::kHeaderSize +
                      protocol::mrsp::kAdvertEntrySize * handler_.parameters().size() +
                      energy_answer_.size();
  kernel_list_answer_ =
      protocol::kernel_list::encode_answer(all, from, protocol::mrsp::kBufferSize - used);
  NAA_LOG_INFO("client %s asks for the kernels from function code %u: %s", ep_->peer().c_str(),
               static_cast<unsigned>(from),
               kernel_list_answer_.empty() ? "no room to list them" : "listed");
}

// The exchange goes by messages after all: the asks come again there.
void Connection::drop_answers() {
  energy_answer_.clear();
  kernel_list_answer_.clear();
}

bool Connection::register_regions(std::string *why) {
  const std::vector<SharedRegion> &regions = handler_.regions();
  const std::vector<protocol::mrsp::RequestEntry> &request = handler_.request();
  try {
    for (size_t i = 0; i < regions.size(); ++i) {
      // Internal scratch is never transferred, so it needs no registration; a placeholder keeps
      // buffer_mrs_ indexed like the request.
      bool internal = (request[i].flags & protocol::mrsp::kInternal) != 0;
      buffer_mrs_.push_back(
          internal ? nullptr : ep_->register_memory(regions[i].addr(), regions[i].size(), true));
    }
  } catch (const Error &e) {
    *why = std::string("cannot register the regions: ") + e.what();
    return false;
  }
  return true;
}

void Connection::send_mrsp(const uint8_t *msg, size_t len) {
  ep_->post_send(msg, len, *mrsp_mr_, kMrspSend);
}

// One receive is always outstanding after MRSP. Where an immediate consumes a receive it is the
// invocation's; elsewhere it only catches messages the protocol does not allow (doc/protocol.md
// §6), so that they are consumed instead of stalling the connection.
void Connection::post_invocation_recv() {
  ep_->post_recv(mrsp_buf_.data(), protocol::mrsp::kBufferSize, *mrsp_mr_, kInvocationRecv);
}

// The reply to a reference client goes no earlier than the guard after its request was seen
// (last_news_): --reference-guard-us, or, if longer, twice the slowest of our replies' writes
// (before the first, the advertisement) to complete, the client's acknowledgement, which its
// own final write waits for likewise. The slowest, forgotten only over hundreds of replies
// (naa::Peak), and twice it, because that acknowledgement varies from one write to the
// next with the load of both hosts (Soft-RoCE acknowledges from a kernel thread, which a busy
// host runs late) and a reply that comes early kills the client, whereas a late one costs it
// only the wait.
// A reference client polls one completion at a time and takes the reply for a protocol error
// when it comes before its write's completion (doc/protocol.md §4.4); libnaa takes both in
// either order.
// Returns the guard, for the log.
naa::Clock::duration Connection::hold_reply() const {
  const auto guard = std::max<naa::Clock::duration>(reference_guard_, 2 * reply_acked_.value());
  std::this_thread::sleep_until(last_news_ + guard);
  return guard;
}

// Our posts' completions before the invocations that came in the same batch, each kind in its
// order: an invocation's reply guard (hold_reply) needs the acknowledgements that had come by
// then, and a batch holds the advertisement's beside the first invocation when both came
// while the thread was not running.
void Connection::order_acknowledgements_first(transport::Completion *c, size_t n) {
  transport::Completion ordered[kBatch];
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (c[i].kind != transport::CompletionKind::RemoteImm) ordered[k++] = c[i];
  for (size_t i = 0; i < n; ++i)
    if (c[i].kind == transport::CompletionKind::RemoteImm) ordered[k++] = c[i];
  std::copy(ordered, ordered + n, c);
}

// A completion of the oldest of our posts that had none yet came: how long its
// acknowledgement took is what hold_reply waits for. Kept for reference clients only, the
// ones whose replies are guarded.
void Connection::acknowledged(const char *what) {
  if (unacknowledged_.empty()) return;
  const naa::Clock::duration took = last_news_ - unacknowledged_.front();
  unacknowledged_.pop_front();
  reply_acked_.observe(took);
  NAA_LOG_DEBUG(
      "client %s: %s completed %lld us after posting", ep_->peer().c_str(), what,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
}

void Connection::invoke(uint32_t v) {
  std::optional<uint8_t> rc = handler_.on_immediate(v, ep_->peer());
  if (ep_->immediate_consumes_recv())
    post_invocation_recv();  // before the reply, as doc/protocol.md §6 (NAA table) recommends
  if (!rc) return;
  ++invocations_;
  uint32_t reply = protocol::imm::naa_reply(*rc);
  if (!energy_answer_.empty())
    reply |= protocol::energy_report::in_immediate(handler_.last_kernel_uj());
  const naa::Clock::duration guard = reference_client_ ? hold_reply() : naa::Clock::duration(0);
  ep_->post_writes(*reply_chain_, reply);
  replied_ = naa::Clock::now();
  if (reference_client_) unacknowledged_.push_back(replied_);
  using std::chrono::microseconds;
  NAA_LOG_DEBUG("client %s: invocation %" PRIu64
                " answered (reply posted) %lld us after it came, guard %lld us",
                ep_->peer().c_str(), invocations_,
                static_cast<long long>(
                    std::chrono::duration_cast<microseconds>(replied_ - last_news_).count()),
                static_cast<long long>(std::chrono::duration_cast<microseconds>(guard).count()));
}

}  // namespace naa::server
