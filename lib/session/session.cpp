// SPDX-License-Identifier: BSD-3-Clause
#include "session/session.hpp"

#include "config/auth.hpp"
#include "error.hpp"
#include "diag/error_text.hpp"
#include "protocol/connect_data.hpp"
#include "protocol/immediate.hpp"
#include "diag/last_error.hpp"
#include "diag/log.hpp"
#include "session/stats.hpp"
#include "energy/energy.hpp"
#include "progress/progress_until.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

namespace naa::session {

using progress::no_timer;
using progress::progress_until;
using progress::ProgressEngine;

namespace {

// Completion contexts: which of our posts a completion belongs to.
enum Context : uint64_t { kMrspRecv = 1, kMrspSend = 2, kWrites = 3, kReplyRecv = 4 };

// Of a single-send input as first sent (check_single_send): words multiplied in with a shift
// folding the high bits down, so that a change anywhere moves every later bit; not a defence
// against an attacker, who owns the host buffer anyway.
uint64_t checksum(const void *data, size_t n) {
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string hex(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

Session::Session(std::unique_ptr<transport::Transport> transport, uint8_t function_code,
                 std::vector<protocol::Region> regions, std::unique_ptr<rm::Target> target,
                 std::shared_ptr<const Settings> settings, Deadline deadline)
    : timeout_(settings->timeout),
      progress_(settings->progress),
      settings_(std::move(settings)),
      transport_(std::move(transport)),
      function_code_(function_code),
      regions_(std::move(regions)),
      target_(std::move(target)),
      peer_(target_->host() + ":" + std::to_string(target_->port())),
      request_imm_(protocol::imm::host_request(function_code)) {
  connect_first(deadline);
  if (progress_.mode == config::Progress::Mode::Thread)
    engine_ = ProgressEngine::acquire(progress_.cpu, progress_.spin);
}

// Everything that belongs to one connection, from nothing: endpoint, registrations, MRSP,
// write chains, pacing. Throws Error, leaving what it built for disconnect().
void Session::connect(Deadline deadline) {
  const std::string &key = settings_->auth_key;
  // Where the connection request has room, the memory-region request rides in it, and a
  // naa-server answers in its accept (doc/protocol.md §3.4): one round trip less.
  size_t request_len = 0;
  bool request_sent = false;
  // The asks for the NAA's energy and its kernels follow the request (doc/protocol.md §3.5,
  // §3.6): in the connection request to whatever peer (over libfabric both ends are libnaa's; a
  // reference-like one reads no private data), by message only to a libnaa server.
  const auto asked = [&] { return request_len + asks_size(); };
  auto request_in_connection = [&](transport::Endpoint &ep, size_t room) {
    register_buffers(ep);
    request_len = encode_request();
    std::string data = protocol::mrsp::in_connect_data(
        mrsp_buf_.data() + protocol::mrsp::kBufferSize, asked(), room);
    request_sent = !data.empty();
    return data;
  };
  ep_ = transport_->connect(target_->host(), target_->port(), settings_->local_ip, deadline,
                            config::auth::connect_data(key), request_in_connection);
  peer_ = ep_->peer();
  transport_name_ = transport_->name();
  if (!mrsp_mr_) {
    register_buffers(*ep_);
    request_len = encode_request();
  }
  const bool libnaa_server = transport::is_libnaa_server(ep_->peer_data());
  libnaa_server_ = libnaa_server;
  naa_kernels_.reset();
  size_t advert_len = 0;
  const uint8_t *advert =
      request_sent && libnaa_server
          ? protocol::mrsp::from_connect_data(ep_->peer_data(), sizeof transport::kServerIdentity,
                                              &advert_len)
          : nullptr;
  exchange_took_ = {};
  if (advert != nullptr)
    take_reply(advert, advert_len);
  else
    exchange_memory_regions(libnaa_server ? asked() : request_len, deadline);
  naa_message_polled_ = Deadline::Clock::now();
  completed_at_ = naa_message_polled_;
  build_chains();
  first_invoked_ = false;  // single-send inputs go again: a new connection may be a new NAA
  NAA_LOG_INFO("function code %u: connected to %s via %s, %zu regions exchanged %s",
               static_cast<unsigned>(function_code_), peer_.c_str(), transport_->name(),
               regions_.size(),
               advert != nullptr ? "in the connection's private data" : "by messages");
  naa_uj_.reset();
  if (naa_energy_)
    NAA_LOG_INFO("NAA at %s reports the energy of each kernel run: %s", peer_.c_str(),
                 naa_energy_source_.c_str());
  else if (energy::Meter::on())
    NAA_LOG_INFO(
        "NAA at %s reports no energy (a reference NAA, or a naa-server without "
        "NAA_ENERGY or a readable source): only the host's is counted",
        peer_.c_str());
  if (libnaa_server) {
    pacing_.reset(std::chrono::microseconds(0), false,
                  target_->host() + ":" + std::to_string(target_->port()), exchange_took_);
    NAA_LOG_INFO("NAA at %s identifies itself as %s: no pacing", peer_.c_str(),
                 transport::kServerIdentity);
  } else {
    pacing_.reset(settings_->pacing, settings_->pacing_adaptive,
                  target_->host() + ":" + std::to_string(target_->port()), exchange_took_);
    NAA_LOG_INFO(
        "NAA at %s does not identify itself: each invocation's final write waits until "
        "%ld us (NAA_PACING_US%s) after its last reply",
        peer_.c_str(), static_cast<long>(pacing_.guard().count()),
        settings_->pacing_adaptive ? ", or the memory-region exchange's round trip, then the "
                                     "fastest invocation's if shorter"
                                   : "");
  }
}

// naa_create's connection: an NAA that cannot be reached hands over to the next one serving
// the code (Target::fail_over), each tried once within the one deadline. An NAA that answers
// and refuses (MRSP, authentication) is not passed over: its refusal is the answer.
void Session::connect_first(Deadline deadline) {
  for (size_t others = target_->alternatives();; --others) {
    try {
      connect(deadline);
      return;
    } catch (const Error &e) {
      disconnect();
      const bool unreachable = e.code() == NAA_ERR_CONNECTION || e.code() == NAA_ERR_TRANSPORT ||
                               e.code() == NAA_ERR_TIMEOUT;
      if (e.code() == NAA_ERR_TIMEOUT && deadline.expired() &&
          std::strstr(e.what(), "NAA_CONNECT_TIMEOUT") == nullptr)
        throw Error(NAA_ERR_TIMEOUT, std::string(e.what()) + " (NAA_CONNECT_TIMEOUT: " +
                                         std::to_string(settings_->connect_timeout.count()) +
                                         " ms)");
      if (!unreachable || others == 0 || deadline.expired()) throw;
      NAA_LOG_WARN("function code %u: cannot connect to %s: %s",
                   static_cast<unsigned>(function_code_), peer_.c_str(), e.what());
      fail_over();
    }
  }
}

// The next NAA serving the code, if there is another: logged with both.
bool Session::fail_over() {
  const std::string failed = target_->host() + ":" + std::to_string(target_->port());
  if (!target_->fail_over()) return false;
  peer_ = target_->host() + ":" + std::to_string(target_->port());
  NAA_LOG_WARN("function code %u: failing over from %s to %s (%s)",
               static_cast<unsigned>(function_code_), failed.c_str(), peer_.c_str(),
               target_->source().c_str());
  return true;
}

// Once it returns, the NAA can write into none of our buffers: the progress engine has let go,
// the registrations are gone and the endpoint closed, in that order.
void Session::disconnect() {
  if (engine_ && !engine_->orphaned()) engine_->withdraw(this);
  owner_.store(Owner::Caller, std::memory_order_relaxed);
  phase_ = Phase::Idle;
  chain_ = nullptr;
  disarm();
  unwatch();
  engine_error_.reset();
  first_chain_.reset();
  steady_chain_.reset();
  region_mrs_.clear();
  mrsp_mr_.reset();
  ep_.reset();
  naa_regions_.clear();
}

// Attempts until NAA_CONNECT_TIMEOUT runs out, whatever NAA_RECONNECT says (it only turns
// reconnecting on or off): an NAA that restarts within the deadline costs the caller a pause,
// not an error. Each failed attempt moves on to the next NAA serving the code (failover); after
// each round of them a pause, jittered so that the ranks of a job do not knock at a restarted
// NAA in step, doubling from kFirstPause to kLongestPause. Runs at least once, also with
// NAA_RECONNECT=0, which only a naa_cancel leads here with. An NAA that answers and refuses
// (MRSP, authentication) ends it: its refusal is the answer.
int Session::reconnect() {
  constexpr auto kFirstPause = std::chrono::milliseconds(10);
  constexpr auto kLongestPause = std::chrono::milliseconds(500);
  static thread_local std::minstd_rand jitter(static_cast<unsigned>(std::random_device{}()) ^
                                              static_cast<unsigned>(getpid()));
  const auto began = Deadline::Clock::now();
  const Deadline deadline = Deadline::after(settings_->connect_timeout);
  const size_t naas = target_->alternatives() + 1;
  auto pause = std::chrono::duration_cast<Deadline::Clock::duration>(kFirstPause);
  // The transport the handle had: a reconnect over another one says so and why.
  const std::string before = transport_name_;
  for (unsigned attempt = 1;; ++attempt) {
    try {
      connect(deadline);
      NAA_LOG_WARN("function code %u: reconnected to %s (attempt %u, after %ld ms)",
                   static_cast<unsigned>(function_code_), peer_.c_str(), attempt,
                   static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         Deadline::Clock::now() - began)
                                         .count()));
      const std::string why = transport_->detour();
      if (transport_name_ != before && !why.empty())
        NAA_LOG_WARN(
            "function code %u: the handle's connection to %s is now over %s, not %s as "
            "before (%s); a later reconnect tries %s first again",
            static_cast<unsigned>(function_code_), peer_.c_str(), transport_name_.c_str(),
            before.c_str(), why.c_str(), before.c_str());
      else if (transport_name_ != before)
        NAA_LOG_WARN(
            "function code %u: the handle's connection to %s is now over %s, not %s as "
            "before (NAA_TRANSPORT=auto's choice for it now)",
            static_cast<unsigned>(function_code_), peer_.c_str(), transport_name_.c_str(),
            before.c_str());
      state_ = State::Ready;
      return NAA_SUCCESS;
    } catch (const Error &e) {
      disconnect();
      const bool unreachable = e.code() == NAA_ERR_CONNECTION || e.code() == NAA_ERR_TRANSPORT ||
                               e.code() == NAA_ERR_TIMEOUT;
      const std::string tried = peer_;
      // Why this attempt was not over the transport the handle had, where it was not.
      const std::string detour =
          transport_->name() != before ? transport_->detour() : std::string();
      const bool moved = fail_over();
      // The last attempt's failure is naa_invoke's: the caller's code, with its cause.
      if (!unreachable || deadline.expired()) {
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - began);
        return diag::last_error::returned(
            e.code(), "function code " + std::to_string(function_code_) + ": cannot reconnect to " +
                          tried + " (attempt " + std::to_string(attempt) + ", " +
                          std::to_string(took.count()) + " ms, NAA_CONNECT_TIMEOUT): " + e.what() +
                          (detour.empty() ? "" : " (not over " + before + ": " + detour + ")") +
                          "; the next naa_invoke tries again");
      }
      if (attempt == 1)
        NAA_LOG_WARN(
            "function code %u: reconnecting to %s failed (%s%s%s%s%s); trying again until "
            "NAA_CONNECT_TIMEOUT",
            static_cast<unsigned>(function_code_), tried.c_str(), e.what(),
            detour.empty() ? "" : "; not over ", detour.empty() ? "" : before.c_str(),
            detour.empty() ? "" : ": ", detour.c_str());
      else
        NAA_LOG_DEBUG("function code %u: reconnect attempt %u to %s failed (%s)",
                      static_cast<unsigned>(function_code_), attempt, tried.c_str(), e.what());
      if (moved && attempt % naas != 0) continue;  // another NAA of this round: no reason to wait
      const auto half = pause / 2;
      const auto jittered = half + Deadline::Clock::duration(std::uniform_int_distribution<int64_t>(
                                       0, static_cast<int64_t>(half.count()))(jitter));
      std::this_thread::sleep_for(
          std::min<Deadline::Clock::duration>(jittered, deadline.remaining()));
      pause = std::min<Deadline::Clock::duration>(2 * pause, kLongestPause);
    }
  }
}

Session::~Session() {
  // In a forked child the engine's thread is not there to withdraw from, nor to join: its
  // reference is dropped on the floor rather than destroyed.
  if (engine_ && engine_->orphaned())
    new std::shared_ptr<ProgressEngine>(std::move(engine_));
  else if (engine_)
    engine_->withdraw(this);
  abandon();
  unwatch();
}

void Session::register_buffers(transport::Endpoint &ep) {
  region_mrs_.clear();
  mrsp_mr_ = ep.register_memory(mrsp_buf_.data(), mrsp_buf_.size(), false);
  for (const protocol::Region &r : regions_)
    region_mrs_.push_back(
        ep.register_memory(r.addr, r.size, (r.flags & protocol::mrsp::kOutput) != 0));
}

// The advertise-request for our registered regions, in the send half of mrsp_buf_: its length.
size_t Session::encode_request() {
  std::vector<uint32_t> sizes;
  for (const protocol::Region &r : regions_) sizes.push_back(r.size);
  std::vector<uint64_t> placeholders(regions_.size());
  if (!protocol::mrsp::placeholder_addresses(sizes.data(), sizes.size(), 0, placeholders.data()))
    throw Error(NAA_ERR_INVALID_ARGUMENT,
                "regions too large for the protocol's 56-bit NAA addresses");

  std::vector<protocol::mrsp::RequestEntry> request;
  for (size_t k = 0; k < regions_.size(); ++k)
    request.push_back({regions_[k].flags, placeholders[k], region_mrs_[k]->remote_addr,
                       region_mrs_[k]->rkey, regions_[k].size});
  uint8_t *out = mrsp_buf_.data() + protocol::mrsp::kBufferSize;
  size_t len = protocol::mrsp::encode_request(request.data(), request.size(), out,
                                              protocol::mrsp::kBufferSize);
  if (len == 0) throw Error(NAA_ERR_INTERNAL, "MRSP request does not encode");
  // At most 4 + 24 * 31 bytes: the asks (asks_size()) fit behind them, energy's first.
  size_t at = len;
  if (energy::Meter::on()) {
    std::memcpy(out + at, protocol::energy_report::kTag, protocol::energy_report::kAskSize);
    at += protocol::energy_report::kAskSize;
  }
  if (settings_->list_kernels_from != 0)
    protocol::kernel_list::encode_ask(settings_->list_kernels_from, out + at);
  return len;
}

// The bytes of the asks that encode_request() put behind the request.
size_t Session::asks_size() const {
  return (energy::Meter::on() ? protocol::energy_report::kAskSize : 0) +
         (settings_->list_kernels_from != 0 ? protocol::kernel_list::kAskSize : 0);
}

// MRSP by messages (doc/protocol.md §2): the request encoded by encode_request() is sent, the
// reply received.
void Session::exchange_memory_regions(size_t len, Deadline deadline) {
  uint8_t *recv_buf = mrsp_buf_.data();
  uint8_t *send_buf = mrsp_buf_.data() + protocol::mrsp::kBufferSize;
  // Stamped before the post, not after: a thread descheduled between posting and stamping
  // would measure an exchange shorter than the NAA's handling of it, and the pacing guard,
  // never longer than the exchange, too short for the NAA's first re-arm (doc/protocol.md §4.4).
  const auto asked = naa::Clock::now();
  ep_->post_recv(recv_buf, protocol::mrsp::kBufferSize, *mrsp_mr_, kMrspRecv);
  ep_->post_send(send_buf, len, *mrsp_mr_, kMrspSend);

  bool sent = false;
  size_t received = 0;
  bool got_reply = false;
  // The answer is due within microseconds on a fast link: waited for as naa_wait waits for a
  // reply (the wait plan), from how long the process's last exchanges took.
  static naa::SharedExpected answer_took;
  const progress::Policy policy{progress_.mode, progress_.spin, answer_took.value(), true};
  auto absorb = [&](const transport::Completion &c, bool) {
    if (c.kind == transport::CompletionKind::Send && c.context == kMrspSend) {
      sent = true;
    } else if (c.kind == transport::CompletionKind::Recv && c.context == kMrspRecv) {
      got_reply = true;
      received = c.bytes;
    } else {
      throw Error(NAA_ERR_PROTOCOL,
                  "NAA at " + ep_->peer() + " sent data before the memory-region exchange ended");
    }
  };
  if (!progress_until(
          *ep_, policy, deadline, [&] { return sent && got_reply; }, absorb))
    throw Error(NAA_ERR_TIMEOUT, "NAA at " + ep_->peer() +
                                     " did not answer the memory-region "
                                     "exchange in time (NAA_CONNECT_TIMEOUT)");
  exchange_took_ = naa::Clock::now() - asked;
  answer_took.observe(exchange_took_);
  take_reply(recv_buf, received);
}

// The NAA's answer to our request, by message or in its accept: its advertisement is kept,
// anything else is the create's error.
void Session::take_reply(const uint8_t *msg, size_t len) {
  protocol::mrsp::Message reply;
  std::string why;
  if (protocol::mrsp::decode(msg, len, reply, &why) != protocol::mrsp::DecodeError::None)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " sent a malformed MRSP reply: " + why);
  if (reply.type == protocol::mrsp::Type::Error && reply.has_memory_limit)
    throw Error(NAA_ERR_NO_RESOURCES,
                "NAA at " + ep_->peer() + " refused the memory regions: their " +
                    std::to_string(reply.memory_limit.requested) +
                    " bytes exceed the NAA's memory limit (" +
                    std::to_string(reply.memory_limit.available) +
                    " bytes left for this client; use smaller buffers or raise the NAA's limit)");
  if (reply.type == protocol::mrsp::Type::Error)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " refused the memory regions: " +
                                      protocol::mrsp::error_code_name(reply.error_code) +
                                      " (MRSP error " + std::to_string(reply.error_code) + ")");
  if (reply.type != protocol::mrsp::Type::Advertise)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " answered MRSP with message type " +
                                      std::to_string(static_cast<int>(reply.type)));
  if (reply.advert.size() != regions_.size())
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " advertised " +
                                      std::to_string(reply.advert.size()) + " regions for our " +
                                      std::to_string(regions_.size()));
  for (size_t k = 0; k < regions_.size(); ++k)
    if (reply.advert[k].size < regions_[k].size)
      throw Error(NAA_ERR_PROTOCOL,
                  "NAA at " + ep_->peer() + " advertised region " + std::to_string(k) + " with " +
                      std::to_string(reply.advert[k].size) + " bytes, smaller than our " +
                      std::to_string(regions_[k].size));
  naa_regions_ = std::move(reply.advert);
  const size_t advert_len =
      protocol::mrsp::kHeaderSize + protocol::mrsp::kAdvertEntrySize * naa_regions_.size();
  take_energy_answer(msg, len, advert_len);
  take_kernel_list(
      msg, len,
      advert_len +
          (naa_energy_ ? protocol::energy_report::kTagSize + 1 + naa_energy_source_.size() : 0));
}

// Whether the NAA answered our ask for its energy in the bytes after its advertisement (the
// first advert_len of msg's len), and what it counts.
void Session::take_energy_answer(const uint8_t *msg, size_t len, size_t advert_len) {
  naa_energy_ =
      energy::Meter::on() && advert_len <= len &&
      protocol::energy_report::find_answer(msg + advert_len, len - advert_len, &naa_energy_source_);
}

// The NAA's kernels, where we asked and it answered in the bytes from `offset` of msg's len
// (after its advertisement and energy answer).
void Session::take_kernel_list(const uint8_t *msg, size_t len, size_t offset) {
  protocol::kernel_list::Page page;
  if (settings_->list_kernels_from != 0 && offset <= len &&
      protocol::kernel_list::find_answer(msg + offset, len - offset, settings_->list_kernels_from,
                                         &page))
    naa_kernels_ = std::move(page);
}

void Session::build_chains() {
  std::vector<transport::WriteSegment> all, steady;
  for (size_t k = 0; k < regions_.size(); ++k) {
    if (!(regions_[k].flags & protocol::mrsp::kInput)) continue;
    transport::WriteSegment s{region_mrs_[k].get(), 0, regions_[k].size,
                              naa_regions_[k].naa_address, naa_regions_[k].rkey};
    all.push_back(s);
    if (!(regions_[k].flags & protocol::mrsp::kSingleSend)) steady.push_back(s);
  }
  // Every invocation must end in a write-with-immediate. When all inputs are single-send, later
  // invocations carry no data: a zero-length write to region 0 (as the spec's error path does,
  // but with the function code) starts the kernel on the data the NAA kept.
  if (steady.empty())
    steady.push_back(
        {region_mrs_[0].get(), 0, 0, naa_regions_[0].naa_address, naa_regions_[0].rkey});
  first_chain_ = ep_->prepare_writes(all, kWrites);
  steady_chain_ = ep_->prepare_writes(steady, kWrites);
}

// A lost connection, with reconnecting allowed, costs the invocation in flight and no more.
int Session::fail(const Error &e) {
  const bool lost = e.code() == NAA_ERR_CONNECTION || e.code() == NAA_ERR_TRANSPORT;
  if (lost && settings_->reconnect > 0) {
    // e may be the progress engine's error, which disconnect() clears: the cause goes first.
    const std::string cause =
        "function code " + std::to_string(function_code_) + " at " + peer_ + ": " + e.what();
    NAA_LOG_WARN(
        "%s; the invocation is lost, the handle will reconnect on the next naa_invoke "
        "(NAA_RECONNECT)",
        cause.c_str());
    disconnect();
    state_ = state_ == State::Running ? State::Lost : State::Disconnected;
    return diag::last_error::returned(NAA_ERR_CONNECTION, cause + "; the handle will reconnect");
  }
  phase_ = Phase::Idle;
  state_ = State::Failed;
  failed_code_ = e.code();
  return diag::last_error::returned(e.code(), "function code " + std::to_string(function_code_) +
                                                  " at " + peer_ + ": " + e.what());
}

void Session::describe(naa_handle_info_t *info) {
  std::lock_guard<std::mutex> lock(mu_);
  *info = naa_handle_info_t{};
  snprintf(info->naa, sizeof info->naa, "%s", peer_.c_str());
  snprintf(info->transport, sizeof info->transport, "%s", transport_name_.c_str());
  info->function_code = function_code_;
  info->regions = static_cast<uint32_t>(regions_.size());
  info->pacing_us = pacing_.enabled() ? pacing_.guard().count() : 0;
  info->timeout_ms = timeout_.count();
  snprintf(info->progress, sizeof info->progress, "%s", config::progress_name(progress_.mode));
}

Session::Stages Session::last_stages() {
  std::lock_guard<std::mutex> lock(mu_);
  return Stages{invoked_at_,         writes_completed_,
                final_write_posted_, final_write_returned_,
                naa_message_polled_, naa_uj_.has_value(),
                naa_uj_.value_or(0), naa_uj_ ? naa_energy_source_ : std::string()};
}

// The invocation in flight is given up (naa_cancel, naa_finalize; the connection closes next):
// Overdue, the NAA may have lost it (§4.4), and its guard doubles.
void Session::abandon() {
  if (state_ != State::Running || phase_ != Phase::Overdue || !pacing_.adaptive()) return;
  const long doubled_us = static_cast<long>(pacing_.unanswered().count());
  NAA_LOG_WARN(
      "function code %u: the NAA at %s acknowledged a request and never answered it; "
      "its pacing guard doubles, to %ld us, for the rest of the process",
      static_cast<unsigned>(function_code_), peer_.c_str(), doubled_us);
}

// What a call that reports to the application returns: a lost invocation is reported once.
int Session::reported(int rc) {
  if (state_ == State::Lost) state_ = State::Disconnected;
  return rc;
}

// Cancels the invocation in flight as the call begins (a later one, started by another thread
// once that one ended, is not this call's to cancel), and clears a failure. Another thread's
// wait() holds mu_ for up to NAA_TIMEOUT: the cancel is asked first (cancel_asked_) and every
// thread that may wait for the handle is woken; the wait then ends the invocation itself
// (take_cancel()) and returns NAA_ERR_CANCELED, so the lock below waits for no more than that.
// Once it is taken, the invocation is over and the connection closed, whoever closed it.
int Session::cancel() {
  const uint64_t asked = invocation_.load(std::memory_order_acquire);
  uint64_t before = cancel_asked_.load(std::memory_order_relaxed);
  while (before < asked &&
         !cancel_asked_.compare_exchange_weak(before, asked, std::memory_order_acq_rel)) {
  }
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    for (const auto &waiter : waiters_)
      if (const auto set = waiter.lock()) set->wake(this);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (take_cancel() || state_ != State::Failed) return NAA_SUCCESS;
  NAA_LOG_INFO(
      "naa_cancel: function code %u at %s: clearing the failure; the next naa_invoke "
      "connects again",
      static_cast<unsigned>(function_code_), peer_.c_str());
  close_connection();
  return NAA_SUCCESS;
}

// Whether a cancel() asked to end the invocation last started (in flight or not).
bool Session::cancel_asked() const {
  return cancel_asked_.load(std::memory_order_acquire) ==
         invocation_.load(std::memory_order_relaxed);
}

// Under mu_, first thing in every call that looks at the invocation in flight: ends it if a
// cancel() asked for it; true then.
bool Session::take_cancel() {
  if ((state_ != State::Running && state_ != State::Lost) || !cancel_asked()) return false;
  NAA_LOG_INFO(
      "naa_cancel: function code %u at %s: closing the connection; the next "
      "naa_invoke connects again",
      static_cast<unsigned>(function_code_), peer_.c_str());
  close_connection();
  last_cancelled_ = invocation_.load(std::memory_order_relaxed);
  return true;
}

void Session::close_connection() {
  release_from_engine();  // abandon() reads what the engine writes
  abandon();
  disconnect();
  state_ = State::Disconnected;
}

// What a call waiting for the invocation that a cancel ended returns.
int Session::cancelled() {
  return diag::last_error::returned(NAA_ERR_CANCELED,
                                    "naa_cancel ended the invocation this call waited "
                                    "for; the next naa_invoke connects again");
}

// What a call that waited for invocation `invocation` returns when that ended elsewhere: in a
// cancel, or in another thread's call, which reported it.
int Session::ended_elsewhere(uint64_t invocation) {
  if (invocation == last_cancelled_) return cancelled();
  return diag::last_error::returned(NAA_ERR_STATE,
                                    "the invocation this call waited for ended in another "
                                    "call on the handle, which reported it");
}

// The calling thread's set, as a wait for this handle goes to sleep: registered first, so that
// a cancel() either finds it to wake or was asked before the waiter looks again.
progress::WaitSet *Session::sleeping() {
  const auto set = progress::WaitSet::of_this_thread();
  if (!set) return nullptr;
  waited_from(set);
  return set.get();
}

void Session::waited_from(const std::shared_ptr<progress::WaitSet> &set) {
  std::lock_guard<std::mutex> lock(wake_mu_);
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    const auto known = it->lock();
    if (known == set) return;
    it = known ? it + 1 : waiters_.erase(it);
  }
  waiters_.push_back(set);
}

int Session::invoke() {
  std::lock_guard<std::mutex> lock(mu_);
  if (watch_set_) watch_set_->touched(this);  // it may have been Idle there
  take_cancel();
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Running || state_ == State::Lost) {
    return diag::last_error::returned(NAA_ERR_STATE,
                                      "an invocation is still in flight on this handle "
                                      "(naa_wait it first)");
  }
  // One clock read for the look and the invocation's start: each read is tens of
  // nanoseconds of a 1 B round trip over ofi+shm.
  invoked_at_ = Deadline::Clock::now();
  if (state_ == State::Ready) {
    const int rc = look_before_invoking(invoked_at_);
    if (rc != NAA_SUCCESS) return rc;
  }
  if (state_ == State::Disconnected) {
    const int rc = reconnect();
    if (rc != NAA_SUCCESS) return rc;
    invoked_at_ = Deadline::Clock::now();  // the invocation starts on the new connection
  }
  invocation_.store(invocation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (!first_invoked_) {
    try {
      check_single_send();
    } catch (const Error &e) {
      return fail(e);
    }
  }
  if (engine_) {
    if (engine_->orphaned())
      return fail(Error(NAA_ERR_STATE,
                        "this handle was created before fork(); its progress "
                        "thread stayed in the parent"));
    phase_ = Phase::Unposted;
    state_ = State::Running;
    hand_over();
    return NAA_SUCCESS;
  }
  try {
    post_invocation();
  } catch (const Error &e) {
    return fail(e);
  }
  state_ = State::Running;
  return NAA_SUCCESS;
}

// Before the first invocation on a connection, which sends the single-send inputs. Those that
// only go out (not in place) are what the NAA keeps from their first send on, and the
// documentation promises that later changes to their host buffers do not reach it: the first
// send takes a checksum of each, and a later connection (a reconnect, a failover) sends them
// again only if the host buffer still holds what was first sent; else the call fails
// (NAA_ERR_STATE, sticky until naa_cancel): no result may be computed from contents the
// application wrote since. In-place ones hold the last result read back, what the NAA held:
// they go as they are.
void Session::check_single_send() {
  size_t s = 0;
  for (size_t k = 0; k < regions_.size(); ++k) {
    const protocol::Region &r = regions_[k];
    if (!(r.flags & protocol::mrsp::kSingleSend) || !(r.flags & protocol::mrsp::kInput) ||
        (r.flags & protocol::mrsp::kOutput))
      continue;
    const uint64_t sum = checksum(r.addr, r.size);
    if (!single_send_summed_)
      single_send_sums_.push_back(sum);
    else if (sum != single_send_sums_[s++])
      throw Error(NAA_ERR_STATE,
                  "single-send input (region " + std::to_string(k) +
                      ") changed since it was "
                      "first sent; the new connection to " +
                      peer_ +
                      " would compute from the new "
                      "contents: restore the buffer and naa_cancel the handle, or create it again");
  }
  single_send_summed_ = true;
}

// Ready, before anything is posted: what the NAA sent since the last invocation ended is
// polled (a reply to nothing is a protocol error, replied()), and after a pause of
// kLookAfterIdle or more the connection itself is looked at. A peer found gone here had no
// request of ours: the handle reconnects (Disconnected) and the invocation goes to the new
// connection, instead of being posted to a dead one and reported lost. Back-to-back
// invocations skip the look at the connection (a system call on some transports): an NAA that
// dies between two of them costs the one in flight, as a death during an invocation does. To
// a naa-server (it names itself, transport::kServerIdentity), which answers each request
// once, they skip the poll too: over ofi+tcp it is three system calls of libfabric's progress.
int Session::look_before_invoking(Deadline::Clock::time_point now) {
  constexpr auto kLookAfterIdle = std::chrono::milliseconds(1);
  const bool after_a_pause = now - completed_at_ >= kLookAfterIdle;
  if (libnaa_server_ && !after_a_pause) return NAA_SUCCESS;
  try {
    poll_once();  // first: reading the CQ is what moves some providers' progress (tcp)
    if (after_a_pause) ep_->check_connection();
  } catch (const Error &e) {
    if ((e.code() != NAA_ERR_CONNECTION && e.code() != NAA_ERR_TRANSPORT) ||
        settings_->reconnect == 0)
      return fail(e);
    NAA_LOG_WARN(
        "function code %u at %s: %s; nothing was in flight: reconnecting before the "
        "invocation (NAA_RECONNECT)",
        static_cast<unsigned>(function_code_), peer_.c_str(), e.what());
    disconnect();
    state_ = State::Disconnected;
  }
  return NAA_SUCCESS;
}

// Idle (or Unposted, handed to the engine) -> Posted, or Paced while the guard has not passed:
// pacing is a timer, never a sleep. The data writes go now and the final write-with-immediate
// waits for whoever drives progress next (naa_wait, naa_test, naa_waitany, the progress
// thread): final_write_due(), a timer of the driver.
void Session::post_invocation() {
  if (ep_->immediate_consumes_recv())
    ep_->post_recv(mrsp_buf_.data(), protocol::mrsp::kBufferSize, *mrsp_mr_, kReplyRecv);
  chain_ = first_invoked_ ? steady_chain_.get() : first_chain_.get();
  first_invoked_ = true;
  if (!pacing_.enabled() || Deadline::Clock::now() >= final_write_not_before()) {
    // Stamped before the post, not after: a thread descheduled between posting and stamping
    // would make the round trip look shorter than it is, and the guard learnt from it too short.
    // Only pacing and the stages (NAA_STATS, NAA_TRACE) read it.
    if (pacing_.enabled() || stats::on()) final_write_posted_ = Deadline::Clock::now();
    ep_->post_writes(*chain_, request_imm_);
    if (stats::on()) final_write_returned_ = Deadline::Clock::now();
    phase_ = Phase::Posted;
    return;
  }
  ep_->post_data_writes(*chain_);
  phase_ = Phase::Paced;
}

// The pacing guard (doc/protocol.md §4.4): the earliest the final write may go, or the epoch
// (no wait) for an NAA that needs none.
Deadline::Clock::time_point Session::final_write_not_before() const {
  return pacing_.enabled() ? naa_message_polled_ + pacing_.guard() : Deadline::Clock::time_point{};
}

// The pacing timer: Paced -> Posted once the guard has passed; returns when it is due
// (no_timer() when nothing waits).
naa::Clock::time_point Session::final_write_due() {
  if (phase_ != Phase::Paced) return no_timer();
  const auto due = final_write_not_before();
  if (Deadline::Clock::now() < due) return due;
  phase_ = Phase::Posted;
  final_write_posted_ = Deadline::Clock::now();  // before the post, as in post_invocation()
  ep_->post_final_write(*chain_, request_imm_);
  if (stats::on()) final_write_returned_ = Deadline::Clock::now();
  return no_timer();
}

// One clock read per poll that returned something, and only for pacing or for NAA_STATS /
// NAA_TRACE (Stages): completions seen at once share their time, so that the NAA's service is
// not made of the nanoseconds between two of them.
void Session::absorb(const transport::Completion &c, bool first_of_poll) {
  if (first_of_poll && (pacing_.enabled() || stats::on())) seen_at_ = Deadline::Clock::now();
  switch (c.kind) {
    case transport::CompletionKind::Writes:
      writes_through();
      break;
    case transport::CompletionKind::RemoteImm:
      replied(c);
      break;
    default:
      NAA_LOG_WARN("NAA at %s: unexpected completion ignored", ep_->peer().c_str());
  }
}

// Posted -> Written, Answered -> Done: the NAA has every byte of the request. A chain
// completes once, after its final write: no other phase sees this.
void Session::writes_through() {
  writes_completed_ = seen_at_;
  NAA_LOG_DEBUG("NAA at %s: our writes completed %lld ms after the invocation", ep_->peer().c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           Deadline::Clock::now() - invoked_at_)
                                           .count()));
  if (phase_ == Phase::Posted)
    phase_ = Phase::Written;
  else if (phase_ == Phase::Answered)
    phase_ = Phase::Done;
}

// Posted -> Answered, Written or Overdue -> Done: the NAA's reply. In any other phase it
// answers nothing we asked (nothing in flight, a second reply, or one before our final
// write-with-immediate was even posted): replies carry no sequence number, so one extra reply
// would complete every later invocation early with the output of the one before. A protocol
// error instead (NAA_ERR_PROTOCOL), which ends the connection.
void Session::replied(const transport::Completion &c) {
  switch (phase_) {
    case Phase::Posted:
      phase_ = Phase::Answered;
      break;
    case Phase::Written:
    case Phase::Overdue:
      phase_ = Phase::Done;
      break;
    default:
      throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " wrote a reply (immediate " +
                                        hex(c.imm) +
                                        ") to no request in flight; the connection "
                                        "is closed, its replies can no longer be matched");
  }
  reply_ = c;
  naa_message_polled_ = seen_at_;  // also the NAA's service time's end
  if (pacing_.adaptive()) pacing_.round_trip(naa_message_polled_ - final_write_posted_);
}

size_t Session::poll_once() {
  disarm();
  final_write_due();
  transport::Completion c[4];
  size_t n = ep_->poll(c, 4);
  for (size_t i = 0; i < n; ++i) absorb(c[i], i == 0);
  return n;
}

// Done -> Idle, Running -> Ready: the reply reported.
int Session::complete(naa_status *status) {
  phase_ = Phase::Idle;
  state_ = State::Ready;
  // The NAA's joules ride beside the return code (doc/protocol.md §3.5): taken out, the
  // immediate reads as one from an NAA that sends none.
  naa_uj_.reset();
  if (naa_energy_) {
    naa_uj_ = protocol::energy_report::from_immediate(reply_.imm);
    reply_.imm &= ~protocol::energy_report::kEnergyBits;
  }
  completed_at_ = Deadline::Clock::now();
  round_trip_.observe(completed_at_ - invoked_at_);
  NAA_LOG_DEBUG("NAA at %s: reply %lld ms after the invocation", ep_->peer().c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           completed_at_ - invoked_at_)
                                           .count()));
  uint8_t rc = protocol::imm::return_code(reply_.imm);
  if (protocol::imm::reply_low_byte(reply_.imm) != 0)
    NAA_LOG_DEBUG(
        "NAA reply immediate %s has a non-zero low byte (ignored, as the reference host does)",
        hex(reply_.imm).c_str());
  if (status != nullptr) {
    status->naa_return_code = rc;
    status->immediate = reply_.imm;
    status->bytes_received = reply_.bytes;
    status->function_code = function_code_;
    status->error = rc != NAA_RC_SUCCESS ? NAA_ERR_NAA : NAA_SUCCESS;
  }
  if (rc != NAA_RC_SUCCESS) {
    char why[160];
    snprintf(why, sizeof why, "NAA at %s returned code 0x%02x, %s, for function code %u",
             ep_->peer().c_str(), rc, diag::rc_text(rc), static_cast<unsigned>(function_code_));
    return diag::last_error::returned(NAA_ERR_NAA, why);
  }
  return NAA_SUCCESS;
}

int Session::test(bool *flag, naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  return reported(test_locked(flag, status));
}

int Session::test_locked(bool *flag, naa_status *status) {
  *flag = false;
  if (take_cancel()) return cancelled();
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Lost) return NAA_ERR_CONNECTION;
  if (state_ != State::Running) {
    return diag::last_error::returned(NAA_ERR_STATE, "no invocation in flight on this handle");
  }
  switch (owner_.load(std::memory_order_acquire)) {
    case Owner::Engine:
      return NAA_SUCCESS;  // still moving on the progress thread
    case Owner::Settled:
      *flag = phase_ != Phase::Broken;
      return settled(status);
    case Owner::Caller:
      break;
  }
  try {
    poll_once();
  } catch (const Error &e) {
    return fail(e);
  }
  if (!finished()) return NAA_SUCCESS;
  *flag = true;
  return complete(status);
}

int Session::wait(naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  return reported(wait_locked(status));
}

int Session::wait_locked(naa_status *status) {
  if (take_cancel()) return cancelled();
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Lost) return NAA_ERR_CONNECTION;
  if (state_ != State::Running) {
    return diag::last_error::returned(NAA_ERR_STATE, "no invocation in flight on this handle");
  }
  if (!engine_) return wait_on_endpoint(status);
  // naa_wait takes the invocation back from the engine and ends it on this thread as the other
  // modes do: a thread that waits anyway moves the data itself, and the round trip pays no
  // wake-up of the engine's nor of its own.
  take_back_locked();
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Lost) return NAA_ERR_CONNECTION;
  if (owner_.load(std::memory_order_acquire) == Owner::Settled) return settled(status);
  int rc = wait_on_endpoint(status);
  give_back_locked();
  return rc;
}

// The caller drives the invocation from here on, as in the other modes (the engine's
// settlement, if it came first, stays to be collected); one handed over unposted is posted now.
void Session::take_back_locked() {
  if (state_ != State::Running || owner_.load(std::memory_order_acquire) != Owner::Engine) return;
  release_from_engine();
  if (owner_.load(std::memory_order_relaxed) != Owner::Caller || phase_ != Phase::Unposted) return;
  try {
    post_invocation();
  } catch (const Error &e) {
    fail(e);
  }
}

// Still in flight (our writes are not through): the engine drives it on for naa_test.
void Session::give_back_locked() {
  if (!engine_ || owner_.load(std::memory_order_relaxed) != Owner::Caller ||
      state_ != State::Running)
    return;
  hand_over();
}

// Caller -> Engine: the progress thread posts and polls the invocation from now on, so that
// naa_test only reads owner_ and the data moves while the application computes. Stored before
// the submit: the engine may settle it (announce()) before submit() returns.
void Session::hand_over() {
  owner_.store(Owner::Engine, std::memory_order_relaxed);
  engine_->submit(this);
}

// Engine -> Caller; Settled stays Settled, to be collected. Once withdraw() returns the
// progress thread is inside none of our calls and steps us no more: what it wrote (the
// phase, the reply, the pacing) is the caller's to read and write.
void Session::release_from_engine() {
  if (owner_.load(std::memory_order_acquire) != Owner::Engine) return;
  engine_->withdraw(this);
  Owner engine = Owner::Engine;
  owner_.compare_exchange_strong(engine, Owner::Caller, std::memory_order_acquire);
}

void Session::give_back() {
  std::lock_guard<std::mutex> lock(mu_);
  give_back_locked();
}

uint64_t Session::in_flight() {
  std::lock_guard<std::mutex> lock(mu_);
  take_cancel();
  return state_ == State::Running || state_ == State::Lost
             ? invocation_.load(std::memory_order_relaxed)
             : 0;
}

bool Session::done(uint64_t invocation) {
  std::lock_guard<std::mutex> lock(mu_);
  take_cancel();
  if (state_ != State::Running || invocation != invocation_.load(std::memory_order_relaxed))
    return true;
  if (const Owner owner = owner_.load(std::memory_order_acquire); owner != Owner::Caller)
    return owner == Owner::Settled;
  try {
    poll_once();
  } catch (const Error &e) {
    fail(e);
    return true;
  }
  return finished();
}

// As the progress engine's step(): arming comes before the last poll.
// An endpoint armed and found empty stays armed until the next poll: its descriptor, level
// triggered, then tells of anything new, so a caller may sleep on it again without arming.
// The waiting thread's set is registered for cancel() before anything is looked at.
Session::Watch Session::arm(progress::Armed *armed, const std::shared_ptr<progress::WaitSet> &set) {
  std::lock_guard<std::mutex> lock(mu_);
  armed->ready = true;
  if (set) waited_from(set);
  if (cancel_asked() || state_ != State::Running ||
      owner_.load(std::memory_order_acquire) != Owner::Caller)
    return Watch::Polled;
  const int fd = ep_->wait_fd();
  try {
    if (!armed_) {
      armed->due = std::min(armed->due, final_write_due());
      if (fd >= 0 && !ep_->arm_wait()) return Watch::Polled;  // something may be there: still ready
      if (poll_once() > 0) return Watch::Polled;
      armed_ = fd >= 0 && phase_ != Phase::Paced;
    }
    armed->ready = false;
  } catch (const Error &e) {
    fail(e);
    return Watch::Polled;
  }
  if (fd < 0 || !watch(set)) return Watch::None;
  return armed_ ? Watch::Watched : Watch::Polled;
}

Session::Watch Session::join_wait(progress::Policy *policy, const progress::WaitSet *set,
                                  uint64_t *invocation) {
  std::lock_guard<std::mutex> lock(mu_);
  take_cancel();
  *invocation = invocation_.load(std::memory_order_relaxed);
  if (state_ != State::Running && state_ != State::Lost)
    return set != nullptr && watch_set_.get() == set ? Watch::Idle : Watch::Inactive;
  take_back_locked();
  *policy = policy_locked();
  return owner_.load(std::memory_order_relaxed) == Owner::Caller && state_ == State::Running &&
                 armed_ && watched_by(set)
             ? Watch::Watched
             : Watch::Polled;
}

bool Session::watched_by(const progress::WaitSet *set) {
  return set != nullptr && watch_set_.get() == set && watch_set_->holds(this, &watch_drops_);
}

// Into `set`, out of any other: a handle waited for by another thread moves to its set.
bool Session::watch(const std::shared_ptr<progress::WaitSet> &set) {
  if (watched_by(set.get())) return true;
  unwatch();
  if (!set || !set->add(this, ep_->wait_fd(), &watch_drops_)) return false;
  watch_set_ = set;
  return true;
}

// Polled: armed no more, and the set it was Watched in learns it.
void Session::disarm() {
  if (armed_ && watch_set_) watch_set_->touched(this);
  armed_ = false;
}

// Before the descriptor is closed: no set may name a session gone (leaving it touches it).
void Session::unwatch() {
  if (watch_set_) watch_set_->remove(this);
  watch_set_.reset();
}

progress::Policy Session::policy_locked() const {
  return {progress_.mode, progress_.spin, round_trip_.value(), false, &spin_budget_};
}

// Ends invocation `invocation` as test() would, or as ended_elsewhere() says.
int Session::end(uint64_t invocation, bool *flag, naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  *flag = false;
  if (take_cancel() || invocation != invocation_.load(std::memory_order_relaxed) ||
      state_ == State::Ready || state_ == State::Disconnected)
    return reported(ended_elsewhere(invocation));
  return reported(test_locked(flag, status));
}

int Session::expire(uint64_t invocation, naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (take_cancel() || invocation != invocation_.load(std::memory_order_relaxed) ||
      state_ == State::Ready || state_ == State::Disconnected)
    return ended_elsewhere(invocation);
  take_back_locked();
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Lost) return reported(NAA_ERR_CONNECTION);
  if (state_ != State::Running) return NAA_ERR_STATE;
  if (owner_.load(std::memory_order_acquire) == Owner::Settled) return settled(status);
  try {
    poll_once();
  } catch (const Error &e) {
    return fail(e);
  }
  if (finished()) return complete(status);
  int rc = timed_out();
  give_back_locked();
  return reported(rc);
}

int Session::timed_out() {
  return phase_ == Phase::Written || phase_ == Phase::Overdue ? unanswered() : writes_timed_out();
}

int Session::wait_on_endpoint(naa_status *status) {
  disarm();  // progress_until polls the endpoint itself
  try {
    if (!progress_until(
            *ep_, policy_locked(), Deadline::after(timeout_),
            [this] { return finished() || cancel_asked(); },
            [this](const transport::Completion &c, bool first) { absorb(c, first); },
            [this] { return final_write_due(); }, [this] { return sleeping(); }))
      return timed_out();
  } catch (const Error &e) {
    return fail(e);
  }
  if (!finished() && take_cancel()) return cancelled();
  return complete(status);
}

// Written -> Overdue: the NAA acknowledged every write of the request and has not answered: a
// long kernel and a request the NAA lost (doc/protocol.md §4.4) look the same. The invocation
// stays in flight: the caller may wait again, or naa_cancel it (abandon()).
int Session::unanswered() {
  phase_ = Phase::Overdue;
  return diag::last_error::returned(NAA_ERR_TIMEOUT,
                                    "the NAA at " + peer_ +
                                        " acknowledged the request but sent no reply "
                                        "within NAA_TIMEOUT (" +
                                        std::to_string(timeout_.count()) +
                                        " ms); the invocation is still in flight "
                                        "(wait again, or naa_cancel it)");
}

// Our own writes are not through: the invocation stays in flight, the caller may wait again
// or finalize.
int Session::writes_timed_out() const {
  return diag::last_error::returned(NAA_ERR_TIMEOUT, "the writes to NAA at " + peer_ +
                                                         " did not complete within NAA_TIMEOUT (" +
                                                         std::to_string(timeout_.count()) +
                                                         " ms); the invocation is still in flight");
}

// On the engine's thread. Arming comes before the last poll: a completion that lands between
// the two is then either polled here or signalled on wait_fd(). A paced final write waiting
// for its guard is a timer of the engine's driver (due()).
ProgressEngine::Client::Step Session::step() {
  try {
    if (phase_ == Phase::Unposted) {
      post_invocation();
      return Step::Moved;
    }
    if (poll_once() == 0) {
      if (!ep_->arm_wait()) return Step::Moved;  // something is there: poll, do not sleep
      if (poll_once() == 0) return Step::Idle;
    }
    return finished() ? Step::Settled : Step::Moved;
  } catch (const Error &e) {  // -> Broken: reported when the application collects it
    engine_error_ = e;
    phase_ = Phase::Broken;
    return Step::Settled;
  }
}

naa::Clock::time_point Session::due() const {
  return phase_ == Phase::Paced ? final_write_not_before() : no_timer();
}

// Engine -> Settled, on the engine's thread once it dropped us: the release publishes what
// the engine wrote to whoever reads Settled.
void Session::announce() {
  owner_.store(Owner::Settled, std::memory_order_release);
}

// Settled -> Caller: the invocation the engine ended, now back in the application's hands.
void Session::collect() {
  owner_.store(Owner::Caller, std::memory_order_relaxed);
}

int Session::settled(naa_status *status) {
  collect();
  if (phase_ == Phase::Broken) return fail(*engine_error_);
  return complete(status);
}

}  // namespace naa::session
