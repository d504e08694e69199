// SPDX-License-Identifier: BSD-3-Clause
#include "session.hpp"

#include "auth.hpp"
#include "error.hpp"
#include "immediate.hpp"
#include "log.hpp"
#include "progress_until.hpp"

namespace naa {
namespace {

// Completion contexts: which of our posts a completion belongs to.
enum Context : uint64_t { kMrspRecv = 1, kMrspSend = 2, kWrites = 3, kReplyRecv = 4 };

std::string hex(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

Session::Session(transport::Transport &transport, uint8_t function_code,
                 std::vector<Region> regions, std::unique_ptr<rm::Target> target,
                 const Settings &settings)
    : function_code_(function_code),
      regions_(std::move(regions)),
      target_(std::move(target)),
      timeout_(settings.timeout),
      progress_(settings.progress),
      request_imm_(imm::host_request(function_code)) {
  Deadline deadline = Deadline::after(timeout_);
  const std::string &key = settings.auth_key;
  ep_ = transport.connect(target_->host(), target_->port(), settings.local_ip, deadline,
                          key.empty() ? std::string() : auth::encode(key));
  mrsp_mr_ = ep_->register_memory(mrsp_buf_.data(), mrsp_buf_.size(), false);
  for (const Region &r : regions_)
    region_mrs_.push_back(ep_->register_memory(r.addr, r.size, (r.flags & mrsp::kOutput) != 0));
  exchange_memory_regions(deadline);
  naa_message_polled_ = Deadline::Clock::now();
  build_chains();
  NAA_LOG_INFO("function code %u: connected to %s via %s, %zu regions exchanged",
               static_cast<unsigned>(function_code_), ep_->peer().c_str(), transport.name(),
               regions_.size());
  if (transport::is_libnaa_server(ep_->peer_data())) {
    NAA_LOG_INFO("NAA at %s identifies itself as %s: no pacing", ep_->peer().c_str(),
                 transport::kServerIdentity);
  } else {
    pacing_ = settings.pacing;
    NAA_LOG_INFO("NAA at %s does not identify itself: each invocation's final write waits until "
                 "%ld us after its last reply (NAA_PACING_US)",
                 ep_->peer().c_str(), static_cast<long>(pacing_.count()));
  }
  if (progress_.mode == Progress::Mode::Thread)
    engine_ = ProgressEngine::acquire(progress_.cpu, progress_.spin);
}

Session::~Session() {
  if (!engine_) return;
  // In a forked child the engine's thread is not there to withdraw from, nor to join: its
  // reference is dropped on the floor rather than destroyed.
  if (engine_->orphaned()) new std::shared_ptr<ProgressEngine>(std::move(engine_));
  else engine_->withdraw(this);
}

void Session::exchange_memory_regions(Deadline deadline) {
  std::vector<uint32_t> sizes;
  for (const Region &r : regions_) sizes.push_back(r.size);
  std::vector<uint64_t> placeholders(regions_.size());
  if (!mrsp::placeholder_addresses(sizes.data(), sizes.size(), 0, placeholders.data()))
    throw Error(NAA_ERR_INVALID_ARGUMENT, "regions too large for the protocol's 56-bit NAA addresses");

  std::vector<mrsp::RequestEntry> request;
  for (size_t k = 0; k < regions_.size(); ++k)
    request.push_back({regions_[k].flags, placeholders[k], region_mrs_[k]->remote_addr,
                       region_mrs_[k]->rkey, regions_[k].size});
  uint8_t *recv_buf = mrsp_buf_.data();
  uint8_t *send_buf = mrsp_buf_.data() + mrsp::kBufferSize;
  size_t len = mrsp::encode_request(request.data(), request.size(), send_buf, mrsp::kBufferSize);
  if (len == 0) throw Error(NAA_ERR_INTERNAL, "MRSP request does not encode");

  ep_->post_recv(recv_buf, mrsp::kBufferSize, *mrsp_mr_, kMrspRecv);
  ep_->post_send(send_buf, len, *mrsp_mr_, kMrspSend);

  bool sent = false;
  size_t received = 0;
  bool got_reply = false;
  while (!sent || !got_reply) {
    transport::Completion c[4];
    size_t n = ep_->wait(c, 4, deadline);
    if (n == 0)
      throw Error(NAA_ERR_TIMEOUT, "NAA at " + ep_->peer() + " did not answer the memory-region "
                                   "exchange in time (NAA_TIMEOUT)");
    for (size_t i = 0; i < n; ++i) {
      if (c[i].kind == transport::CompletionKind::Send && c[i].context == kMrspSend) {
        sent = true;
      } else if (c[i].kind == transport::CompletionKind::Recv && c[i].context == kMrspRecv) {
        got_reply = true;
        received = c[i].bytes;
      } else {
        throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " sent data before the memory-region exchange ended");
      }
    }
  }

  mrsp::Message reply;
  std::string why;
  if (mrsp::decode(recv_buf, received, reply, &why) != mrsp::DecodeError::None)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " sent a malformed MRSP reply: " + why);
  if (reply.type == mrsp::Type::Error)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " refused the memory regions: " +
                                      mrsp::error_code_name(reply.error_code) + " (MRSP error " +
                                      std::to_string(reply.error_code) + ")");
  if (reply.type != mrsp::Type::Advertise)
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " answered MRSP with message type " +
                                      std::to_string(static_cast<int>(reply.type)));
  if (reply.advert.size() != regions_.size())
    throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " advertised " +
                                      std::to_string(reply.advert.size()) + " regions for our " +
                                      std::to_string(regions_.size()));
  for (size_t k = 0; k < regions_.size(); ++k)
    if (reply.advert[k].size < regions_[k].size)
      throw Error(NAA_ERR_PROTOCOL, "NAA at " + ep_->peer() + " advertised region " +
                                        std::to_string(k) + " with " + std::to_string(reply.advert[k].size) +
                                        " bytes, smaller than our " + std::to_string(regions_[k].size));
  naa_regions_ = std::move(reply.advert);
}

void Session::build_chains() {
  std::vector<transport::WriteSegment> all, steady;
  for (size_t k = 0; k < regions_.size(); ++k) {
    if (!(regions_[k].flags & mrsp::kInput)) continue;
    transport::WriteSegment s{region_mrs_[k].get(), 0, regions_[k].size, naa_regions_[k].naa_address,
                              naa_regions_[k].rkey};
    all.push_back(s);
    if (!(regions_[k].flags & mrsp::kSingleSend)) steady.push_back(s);
  }
  // Every invocation must end in a write-with-immediate. When all inputs are single-send, later
  // invocations carry no data: a zero-length write to region 0 (as the spec's error path does,
  // but with the function code) starts the kernel on the data the NAA kept.
  if (steady.empty())
    steady.push_back({region_mrs_[0].get(), 0, 0, naa_regions_[0].naa_address, naa_regions_[0].rkey});
  first_chain_ = ep_->prepare_writes(all, kWrites);
  steady_chain_ = ep_->prepare_writes(steady, kWrites);
}

int Session::fail(const Error &e) {
  state_ = State::Failed;
  failed_code_ = e.code();
  NAA_LOG_ERROR("function code %u at %s: %s", static_cast<unsigned>(function_code_),
                ep_->peer().c_str(), e.what());
  return failed_code_;
}

int Session::invoke() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::Failed) return failed_code_;
  if (state_ == State::Running) {
    NAA_LOG_ERROR("naa_invoke: an invocation is still in flight on this handle (naa_wait it first)");
    return NAA_ERR_STATE;
  }
  invoked_at_ = Deadline::Clock::now();
  if (engine_) {
    if (engine_->orphaned())
      return fail(Error(NAA_ERR_STATE, "this handle was created before fork(); its progress "
                                       "thread stayed in the parent"));
    writes_pending_ = true;
    reply_pending_ = true;
    posted_ = false;
    engine_error_.reset();
    settled_.store(false);
    state_ = State::Running;
    engine_->submit(this);
    with_engine_ = true;
    return NAA_SUCCESS;
  }
  try {
    post_invocation();
  } catch (const Error &e) {
    return fail(e);
  }
  writes_pending_ = true;
  reply_pending_ = true;
  state_ = State::Running;
  return NAA_SUCCESS;
}

// Pacing is a timer, never a sleep: when the guard has not passed yet, the data writes go now
// and the final write-with-immediate waits in paced_chain_ for whoever drives progress next
// (naa_wait, naa_test, naa_waitany, the progress thread): post_final_if_due().
void Session::post_invocation() {
  if (ep_->immediate_consumes_recv())
    ep_->post_recv(mrsp_buf_.data(), mrsp::kBufferSize, *mrsp_mr_, kReplyRecv);
  transport::WriteChain &chain = first_invoked_ ? *steady_chain_ : *first_chain_;
  first_invoked_ = true;
  if (pacing_.count() == 0 || Deadline::Clock::now() >= final_not_before()) {
    ep_->post_writes(chain, request_imm_);
    return;
  }
  ep_->post_data_writes(chain);
  paced_chain_ = &chain;
}

// Pacing (doc/protocol.md §4.4): the final write-with-immediate goes no earlier than `pacing_`
// after the NAA's last message was polled.
Deadline::Clock::time_point Session::final_not_before() const {
  return naa_message_polled_ + pacing_;
}

// Returns whether the final write still waits for its guard.
bool Session::post_final_if_due() {
  if (paced_chain_ == nullptr) return false;
  if (Deadline::Clock::now() < final_not_before()) return true;
  transport::WriteChain *chain = paced_chain_;
  paced_chain_ = nullptr;
  ep_->post_final_write(*chain, request_imm_);
  return false;
}

void Session::absorb(const transport::Completion &c) {
  switch (c.kind) {
    case transport::CompletionKind::Writes:
      writes_pending_ = false;
      break;
    case transport::CompletionKind::RemoteImm:
      if (!reply_pending_) {
        NAA_LOG_WARN("NAA at %s wrote an unexpected reply (immediate %s); ignored",
                     ep_->peer().c_str(), hex(c.imm).c_str());
        break;
      }
      reply_ = c;
      reply_pending_ = false;
      if (pacing_.count() > 0) naa_message_polled_ = Deadline::Clock::now();
      break;
    default:
      NAA_LOG_WARN("NAA at %s: unexpected completion ignored", ep_->peer().c_str());
  }
}

size_t Session::poll_once() {
  post_final_if_due();
  transport::Completion c[4];
  size_t n = ep_->poll(c, 4);
  for (size_t i = 0; i < n; ++i) absorb(c[i]);
  return n;
}

int Session::complete(naa_status *status) {
  state_ = State::Ready;
  round_trip_.observe(Deadline::Clock::now() - invoked_at_);
  uint8_t rc = imm::return_code(reply_.imm);
  if (imm::reply_low_byte(reply_.imm) != 0)
    NAA_LOG_DEBUG("NAA reply immediate %s has a non-zero low byte (ignored, as the reference host does)",
                  hex(reply_.imm).c_str());
  if (status != nullptr) {
    status->naa_return_code = rc;
    status->immediate = reply_.imm;
    status->bytes_received = reply_.bytes;
    status->function_code = function_code_;
    status->error = rc != NAA_RC_SUCCESS ? NAA_ERR_NAA : NAA_SUCCESS;
  }
  if (rc != NAA_RC_SUCCESS) {
    NAA_LOG_INFO("NAA at %s returned code 0x%02x for function code %u", ep_->peer().c_str(), rc,
                 static_cast<unsigned>(function_code_));
    return NAA_ERR_NAA;
  }
  return NAA_SUCCESS;
}

int Session::test(bool *flag, naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  *flag = false;
  if (state_ == State::Failed) return failed_code_;
  if (state_ != State::Running) {
    NAA_LOG_ERROR("naa_test: no invocation in flight on this handle");
    return NAA_ERR_STATE;
  }
  if (engine_ && (with_engine_ || settled_.load(std::memory_order_acquire))) {
    if (!settled_.load(std::memory_order_acquire)) return NAA_SUCCESS;
    *flag = !engine_error_;
    return settled(status);
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
  if (state_ == State::Failed) return failed_code_;
  if (state_ != State::Running) {
    NAA_LOG_ERROR("naa_wait: no invocation in flight on this handle");
    return NAA_ERR_STATE;
  }
  if (!engine_) return wait_on_endpoint(status);
  // naa_wait takes the invocation back from the engine and ends it on this thread as the other
  // modes do: a thread that waits anyway moves the data itself, and the round trip pays no
  // wake-up of the engine's nor of its own.
  take_back_locked();
  if (state_ == State::Failed) return failed_code_;
  if (settled_.load(std::memory_order_acquire)) return settled(status);
  int rc = wait_on_endpoint(status);
  give_back_locked();
  return rc;
}

void Session::take_back_locked() {
  if (!engine_ || !with_engine_ || state_ != State::Running) return;
  engine_->withdraw(this);
  with_engine_ = false;
  if (settled_.load(std::memory_order_acquire) || posted_) return;
  try {
    post_invocation();
    posted_ = true;
  } catch (const Error &e) {
    fail(e);
  }
}

// Still in flight (our writes are not through): the engine drives it on for naa_test.
void Session::give_back_locked() {
  if (!engine_ || with_engine_ || state_ != State::Running ||
      settled_.load(std::memory_order_acquire))
    return;
  engine_->submit(this);
  with_engine_ = true;
}

void Session::take_back() {
  std::lock_guard<std::mutex> lock(mu_);
  take_back_locked();
}

void Session::give_back() {
  std::lock_guard<std::mutex> lock(mu_);
  give_back_locked();
}

bool Session::in_flight() {
  std::lock_guard<std::mutex> lock(mu_);
  return state_ == State::Running;
}

bool Session::done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::Running) return true;
  if (engine_ && (with_engine_ || settled_.load(std::memory_order_acquire)))
    return settled_.load(std::memory_order_acquire);
  try {
    poll_once();
  } catch (const Error &e) {
    fail(e);
    return true;
  }
  return finished();
}

// As the progress engine's step(): arming comes before the last poll.
int Session::arm(bool *ready) {
  std::lock_guard<std::mutex> lock(mu_);
  *ready = true;
  if (state_ != State::Running || with_engine_ || settled_.load(std::memory_order_acquire))
    return -1;
  const int fd = ep_->wait_fd();
  try {
    if (post_final_if_due()) return -1;  // the guard is a timer of the caller's loop
    if (fd >= 0 && !ep_->arm_wait()) return fd;
    *ready = poll_once() > 0;
  } catch (const Error &e) {
    fail(e);
  }
  return fd;
}

std::chrono::microseconds Session::poll_window() {
  std::lock_guard<std::mutex> lock(mu_);
  return progress::wait_plan(round_trip_.value(), progress_.spin, ep_->wait_fd() >= 0).poll;
}

int Session::expire(naa_status *status) {
  std::lock_guard<std::mutex> lock(mu_);
  take_back_locked();
  if (state_ == State::Failed) return failed_code_;
  if (state_ != State::Running) return NAA_ERR_STATE;
  if (engine_ && settled_.load(std::memory_order_acquire)) return settled(status);
  try {
    poll_once();
  } catch (const Error &e) {
    return fail(e);
  }
  if (finished()) return complete(status);
  int rc = timed_out();
  give_back_locked();
  return rc;
}

int Session::timed_out() { return writes_pending_ ? writes_timed_out() : fail(unanswered()); }

int Session::wait_on_endpoint(naa_status *status) {
  try {
    // Drives the endpoint until the paced final write is due, then posts it.
    if (paced_chain_ != nullptr)
      progress_until(*ep_, progress_, round_trip_.value(), Deadline::at(final_not_before()),
                     [] { return false; }, [this](const transport::Completion &c) { absorb(c); });
    post_final_if_due();
    if (!progress_until(*ep_, progress_, round_trip_.value(), Deadline::after(timeout_),
                        [this] { return finished(); },
                        [this](const transport::Completion &c) { absorb(c); }))
      return timed_out();
  } catch (const Error &e) {
    return fail(e);
  }
  return complete(status);
}

// The NAA acknowledged every write of the request and never answered: a long kernel looks
// the same until the deadline, after it the request is taken as lost (the reference NAA
// strands requests, doc/protocol.md §4.4) and nothing more will come.
Error Session::unanswered() const {
  return Error(NAA_ERR_TIMEOUT, "the NAA acknowledged the request but never replied within "
                                "NAA_TIMEOUT (" + std::to_string(timeout_.count()) + " ms); this "
                                "handle cannot recover without a new connection (naa_finalize it "
                                "and naa_create another)");
}

// Our own writes are not through: the invocation stays in flight, the caller may wait again
// or finalize.
int Session::writes_timed_out() const {
  NAA_LOG_ERROR("naa_wait: the writes to NAA at %s did not complete within NAA_TIMEOUT (%ld ms)",
                ep_->peer().c_str(), static_cast<long>(timeout_.count()));
  return NAA_ERR_TIMEOUT;
}

// On the engine's thread. Arming comes before the last poll: a completion that lands between
// the two is then either polled here or signalled on wait_fd(). While a paced final write
// waits for its guard (at most NAA_PACING_US, and only for NAAs that need pacing at all) the
// client is never idle: the thread steps it, and every other handle, until the guard passes.
ProgressEngine::Client::Step Session::step() {
  try {
    if (!posted_) {
      post_invocation();
      posted_ = true;
      return Step::Moved;
    }
    if (poll_once() == 0) {
      if (paced_chain_ != nullptr) return Step::Moved;
      if (!ep_->arm_wait()) return Step::Moved;  // something is there: poll, do not sleep
      if (poll_once() == 0) return Step::Idle;
    }
    return finished() ? Step::Settled : Step::Moved;
  } catch (const Error &e) {
    engine_error_ = e;
    return Step::Settled;
  }
}

void Session::announce() { settled_.store(true, std::memory_order_release); }

// The invocation the engine settled, now back in the application's hands.
int Session::settled(naa_status *status) {
  if (engine_error_) return fail(*engine_error_);
  return complete(status);
}

}  // namespace naa
