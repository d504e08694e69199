// SPDX-License-Identifier: BSD-3-Clause
#include "transport/verbs/verbs_shared_cq.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "error.hpp"
#include "diag/log.hpp"

namespace naa::transport::verbs {
namespace {

// A new CQ has room for this many queue pairs' reservations, and grows by doubling.
constexpr uint32_t kFirstMembers = 4;
constexpr int kPollBatch = 16;

void ring(int fd) {
  const uint64_t one = 1;
  while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void silence(int fd) {
  uint64_t count = 0;
  while (read(fd, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

}  // namespace

// --- CqMember

CqMember::CqMember(SharedCq &cq, uint32_t slots) : cq_(cq), slots_(slots) {
  bell_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (bell_ < 0) {
    const int err = errno;
    std::lock_guard<std::mutex> lock(cq_.mu_);
    cq_.reserved_ -= slots_;
    errno = err;
    fail_errno(NAA_ERR_NO_RESOURCES, "eventfd for a verbs queue pair's wake-ups");
  }
}

CqMember::~CqMember() {
  {
    std::lock_guard<std::mutex> lock(cq_.mu_);
    if (!left_) leave_locked();
  }
  close(bell_);
}

ibv_cq *CqMember::cq() const {
  return cq_.get();
}

void CqMember::attach(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(cq_.mu_);
  qp_num_ = qp_num;
  attached_ = true;
  cq_.members_[qp_num] = this;
}

// The completions of a destroyed queue pair no longer have a member: draining drops them.
void CqMember::leave_locked() {
  left_ = true;
  if (attached_) cq_.members_.erase(qp_num_);
  try {
    cq_.drain_locked(this);
  } catch (const Error &e) {
    NAA_LOG_WARN("verbs: %s", e.what());
  }
  if (armed_) --cq_.armed_;
  armed_ = false;
  cq_.reserved_ -= slots_;
}

size_t CqMember::poll(ibv_wc *out, size_t max) {
  std::lock_guard<std::mutex> lock(cq_.mu_);
  if (found_head_ == found_.size()) {
    cq_.drain_locked(this);
    cq_.polled_ = cq_.polled_ || !armed_;
  }
  const size_t n = std::min(max, found_.size() - found_head_);
  if (n == 0) return 0;
  std::copy_n(found_.begin() + static_cast<std::ptrdiff_t>(found_head_), n, out);
  found_head_ += n;
  if (found_head_ == found_.size()) {
    found_.clear();
    found_head_ = 0;
  }
  if (armed_) {
    armed_ = false;
    --cq_.armed_;
  }
  if (rung_) {
    silence(bell_);
    rung_ = false;
  }
  return n;
}

// The poll that came before the arming is no sign of a poller that hands completions over.
bool CqMember::arm() {
  std::lock_guard<std::mutex> lock(cq_.mu_);
  if (!armed_) {
    armed_ = true;
    ++cq_.armed_;
  }
  cq_.polled_ = false;
  if (found_head_ == found_.size()) cq_.ask_for_event_locked();
  return found_head_ == found_.size();
}

// --- SharedCq

SharedCq::SharedCq(ibv_context *device, ibv_comp_channel *channel, int max_cqe,
                   uint32_t first_slots)
    : max_cqe_(max_cqe) {
  const int cqe =
      static_cast<int>(std::min<int64_t>(max_cqe, int64_t{first_slots} * kFirstMembers));
  cq_.reset(ibv_create_cq(device, cqe, this, channel, 0));
  if (!cq_) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_create_cq");
  reserved_ = first_slots;
}

SharedCq::~SharedCq() = default;

bool SharedCq::reserve(uint32_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t need = int64_t{reserved_} + slots;
  if (need > cq_->cqe) {
    // Doubling keeps the resizes few; a device that cannot resize gets another CQ instead.
    const int64_t size =
        std::min<int64_t>(max_cqe_, std::max<int64_t>(need, int64_t{cq_->cqe} * 2));
    if (size < need || ibv_resize_cq(cq_.get(), static_cast<int>(size)) != 0) return false;
    NAA_LOG_DEBUG("verbs: a shared completion queue grew to %d entries", cq_->cqe);
    // The verbs API does not say that a request for an event survives the resize.
    if (event_asked_ && ibv_req_notify_cq(cq_.get(), 0) != 0) event_asked_ = false;
  }
  reserved_ += slots;
  return true;
}

size_t SharedCq::drain_locked(const CqMember *self) {
  ibv_wc wc[kPollBatch];
  size_t total = 0;
  for (;;) {
    const int n = ibv_poll_cq(cq_.get(), kPollBatch, wc);
    if (n < 0) throw Error(NAA_ERR_TRANSPORT, "ibv_poll_cq failed on a shared completion queue");
    for (int i = 0; i < n; ++i) hand_over(wc[i], self);
    total += static_cast<size_t>(n);
    if (n < kPollBatch) return total;
  }
}

void SharedCq::hand_over(const ibv_wc &wc, const CqMember *self) {
  auto it = members_.find(wc.qp_num);
  if (it == members_.end()) return;  // of a queue pair destroyed since (flushed requests)
  CqMember &m = *it->second;
  m.found_.push_back(wc);
  if (m.armed_ && !m.rung_ && &m != self) {
    ring(m.bell_);
    m.rung_ = true;
    NAA_LOG_DEBUG("verbs: completion (opcode %d) for the armed queue pair %u: its bell rung",
                  static_cast<int>(wc.opcode), wc.qp_num);
  }
}

// A completion that lands before the request raises no event: what is there is handed over
// after it.
void SharedCq::ask_for_event_locked() {
  if (!event_asked_) {
    if (ibv_req_notify_cq(cq_.get(), 0) != 0)
      throw Error(NAA_ERR_TRANSPORT, "ibv_req_notify_cq failed on a shared completion queue");
    event_asked_ = true;
  }
  const size_t found = drain_locked(nullptr);
  if (found > 0)
    NAA_LOG_DEBUG("verbs: %zu completion(s) found right after asking for the next event", found);
}

bool SharedCq::signalled() {
  std::lock_guard<std::mutex> lock(mu_);
  event_asked_ = false;
  try {
    const size_t found = drain_locked(nullptr);
    NAA_LOG_DEBUG(
        "verbs: completion event: %zu completion(s) handed over, %u queue pair(s) armed%s", found,
        armed_,
        armed_ == 0 ? ""
        : polled_   ? ", next event deferred (polled)"
                    : "");
    if (armed_ == 0) return false;
    if (polled_) {
      polled_ = false;
      deferred_ = true;
      return true;
    }
    ask_for_event_locked();
  } catch (const Error &e) {  // tried again after kRecheck
    NAA_LOG_ERROR("verbs: %s", e.what());
    deferred_ = true;
    return true;
  }
  return false;
}

bool SharedCq::recheck() {
  if (!deferred_.load(std::memory_order_relaxed)) return false;
  // Held: somebody polls the CQ right now, which is all a look would find out.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return true;
  if (!deferred_) return false;
  if (event_asked_ || armed_ == 0) {  // an arming asked since
    deferred_ = false;
    return false;
  }
  if (polled_) {
    polled_ = false;
    return true;
  }
  try {
    NAA_LOG_DEBUG("verbs: no poll since the deferred event: asking for the next one");
    ask_for_event_locked();
  } catch (const Error &e) {  // tried again after kRecheck
    NAA_LOG_ERROR("verbs: %s", e.what());
    return true;
  }
  deferred_ = false;
  return false;
}

// --- CqSet

CqSet::CqSet(ibv_context *device) : device_(device), pid_(getpid()) {
  ibv_device_attr dev{};
  if (ibv_query_device(device, &dev) != 0) fail_errno(NAA_ERR_TRANSPORT, "ibv_query_device");
  max_cqe_ = dev.max_cqe;
  channel_.reset(ibv_create_comp_channel(device));
  if (!channel_) fail_errno(NAA_ERR_NO_RESOURCES, "ibv_create_comp_channel");
  set_nonblocking(channel_->fd, "completion channel");
  stop_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_ < 0) fail_errno(NAA_ERR_NO_RESOURCES, "eventfd");
}

CqSet::~CqSet() {
  if (thread_.joinable()) {
    if (getpid() == pid_) {
      ring(stop_);
      thread_.join();
    } else {
      thread_.detach();  // a forked child's copy: the thread stayed with the parent
    }
  }
  cqs_.clear();  // before the channel
  close(stop_);
}

std::unique_ptr<CqMember> CqSet::join(uint32_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &cq : cqs_)
    if (cq->reserve(slots)) return std::make_unique<CqMember>(*cq, slots);
  cqs_.push_back(std::make_unique<SharedCq>(device_, channel_.get(), max_cqe_, slots));
  if (cqs_.size() > 1)
    NAA_LOG_DEBUG("verbs: completion queue %zu of this device opened", cqs_.size());
  return std::make_unique<CqMember>(*cqs_.back(), slots);
}

void CqSet::watch() {
  if (watched_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error &e) {
    throw Error(NAA_ERR_NO_RESOURCES, std::string("cannot start the thread that watches verbs "
                                                  "completions: ") +
                                          e.what());
  }
  watched_.store(true, std::memory_order_release);
}

// The CQs are never destroyed while this runs, so an event's context is always a live SharedCq.
void CqSet::run() {
  pthread_setname_np(pthread_self(), "naa-verbs-cq");
  pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {stop_, POLLIN, 0}};
  using Clock = std::chrono::steady_clock;
  auto recheck_at = Clock::time_point::max();
  for (;;) {
    int timeout = -1;
    if (recheck_at != Clock::time_point::max())
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::ceil<std::chrono::milliseconds>(recheck_at - Clock::now()).count()));
    if (::poll(fds, 2, timeout) < 0 && errno != EINTR) {  // ENOMEM: try again shortly
      NAA_LOG_ERROR("verbs: waiting for completion events failed: %s", errno_text(errno).c_str());
      std::this_thread::sleep_for(kRecheck);
      continue;
    }
    if (fds[1].revents != 0) return;
    bool deferred = false;
    ibv_cq *cq = nullptr;
    void *context = nullptr;
    while (ibv_get_cq_event(channel_.get(), &cq, &context) == 0) {
      ibv_ack_cq_events(cq, 1);
      deferred = static_cast<SharedCq *>(context)->signalled() || deferred;
    }
    if (Clock::now() >= recheck_at) {
      recheck_at = Clock::time_point::max();
      deferred = recheck_all() || deferred;
    }
    if (deferred && recheck_at == Clock::time_point::max()) recheck_at = Clock::now() + kRecheck;
  }
}

bool CqSet::recheck_all() {
  std::lock_guard<std::mutex> lock(mu_);
  bool any = false;
  for (auto &cq : cqs_) any = cq->recheck() || any;
  return any;
}

}  // namespace naa::transport::verbs
