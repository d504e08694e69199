// SPDX-License-Identifier: BSD-3-Clause
#include "progress/progress_engine.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "error.hpp"
#include "diag/log.hpp"

namespace naa::progress {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

// How the thread spends a spell without news is the wait plan (wait_plan.hpp), from
// how long it was busy last (some client active, submit to settle: about one round trip). Its
// doze matters most here: the thread dozes while sleeping_ stays false, so that
// a submit makes no system call and waits a share of a round trip for the timer instead of a
// CPU's wake-up, which on a virtual machine whose vCPU halted costs tens of microseconds
// (doc/performance.md): for naa_invoke the whole hand-over. An application that computes for longer
// than 8 round trips between invocations pays that wake-up in naa_invoke, small beside its
// computation.

// Callers that take every invocation back within kQuick of handing it over (naa_invoke, then
// naa_wait at once) leave the thread nothing to do: not even its shortest doze would have
// found the invocation still there. Dozing on, it would wake every 20 us to take CPU time
// from the caller and from a same-host NAA: beside naa-server's adaptive wait on 2 CPUs the
// third runnable thread made the node look oversubscribed to it (doc/performance.md). After
// kTakenBackInARow such hand-overs in a row the thread dozes kLongDoze at a time (kLongDozes
// of them before it sleeps). The first hand-over that the thread takes, or that its caller
// takes back later than kQuick, brings back the plan's doze at the thread's next look: a
// caller that starts to compute between naa_invoke and naa_wait waits at most one long doze
// for the thread.
constexpr microseconds kQuick = naa::kShortestDoze;
constexpr unsigned kTakenBackInARow = 8;
constexpr microseconds kLongDoze{4000};
constexpr int kLongDozes = 8;
static_assert(kLongDoze > naa::kLongestDoze, "a long doze is longer than any of a plan");

// The engine in use, replaced wholesale in a forked child: the parent's lock may have been
// held at the fork and its thread does not exist there.
struct Registry {
  std::mutex mu;
  std::weak_ptr<ProgressEngine> engine;
};
std::atomic<Registry *> registry{new Registry};
std::atomic<uint64_t> fork_generation{0};

void after_fork_in_child() {
  fork_generation.fetch_add(1);
  registry.store(new Registry);  // the parent's is leaked: its mutex may be locked forever
}

int make_eventfd() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0)
    throw Error(NAA_ERR_NO_RESOURCES, std::string("progress thread: eventfd: ") + strerror(errno));
  return fd;
}

// SCHED_BATCH: woken by naa_invoke's eventfd write, the thread must not preempt the caller
// on its core (CFS would: a thread that mostly sleeps is owed time), or naa_invoke would last
// as long as the posting it hands over.
void no_wakeup_preemption() {
  sched_param none{};
  if (sched_setscheduler(0, SCHED_BATCH, &none) != 0)
    NAA_LOG_DEBUG("progress thread: SCHED_BATCH refused (%s)", strerror(errno));
}

// The default slack (50 us) would stretch the shortest doze period to 70 us.
void exact_timers() {
  if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0)
    NAA_LOG_DEBUG("progress thread: PR_SET_TIMERSLACK refused (%s)", strerror(errno));
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
    NAA_LOG_WARN("progress thread: cannot pin to CPU %d (NAA_PROGRESS_CPU): %s; left unpinned", cpu,
                 strerror(rc));
  else
    NAA_LOG_INFO("progress thread pinned to CPU %d", cpu);
}

}  // namespace

std::shared_ptr<ProgressEngine> ProgressEngine::acquire(int cpu, std::chrono::microseconds spin) {
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
  Registry &r = *registry.load();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto engine = r.engine.lock()) return engine;
  std::shared_ptr<ProgressEngine> engine(new ProgressEngine(cpu, spin));
  r.engine = engine;
  return engine;
}

ProgressEngine::ProgressEngine(int cpu, std::chrono::microseconds spin)
    : wake_fd_(make_eventfd()), fork_generation_(fork_generation.load()) {
  try {
    thread_ = std::thread(&ProgressEngine::run, this, cpu, spin);
    // Named before naa_create returns, for top -H, gdb and the tests.
    pthread_setname_np(thread_.native_handle(), kThreadName);
  } catch (const std::system_error &e) {
    close(wake_fd_);
    throw Error(NAA_ERR_NO_RESOURCES, std::string("cannot start the progress thread: ") + e.what());
  }
  NAA_LOG_INFO("progress thread started (NAA_PROGRESS=thread)");
}

ProgressEngine::~ProgressEngine() {
  stop_.store(true);
  wake();
  thread_.join();
  close(wake_fd_);
  NAA_LOG_INFO(
      "progress thread stopped with the last handle that used it; of %llu hand-overs "
      "%llu had to wake it and %llu were taken back before it looked",
      static_cast<unsigned long long>(submits_.load()),
      static_cast<unsigned long long>(wakes_.load()),
      static_cast<unsigned long long>(taken_back_.load()));
}

bool ProgressEngine::orphaned() const {
  return fork_generation.load() != fork_generation_;
}

void ProgressEngine::wake() {
  uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the thread will wake anyway.
  ssize_t rc = write(wake_fd_, &one, sizeof one);
  (void)rc;
}

// The thread publishes sleeping_ before it looks at requests_ a last time, a submit publishes
// requests_ before it looks at sleeping_ (both sequentially consistent): one of the two sees
// the other's, so no request sleeps unseen and no submit writes the eventfd of an awake
// thread.
void ProgressEngine::submit(Client *c) {
  const naa::Clock::time_point at = naa::Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    submitted_.push_back({c, at});
  }
  requests_.store(true);
  submits_.fetch_add(1, std::memory_order_relaxed);
  if (sleeping_.load() && sleeping_.exchange(false)) {
    wakes_.fetch_add(1, std::memory_order_relaxed);
    wake();
  }
}

// withdrawals_ goes up before current_ is read here, and the thread sets current_ before it
// reads withdrawals_: either the thread sees this withdrawal before it steps `c`, or this
// call sees `c` current and waits for the thread to leave it.
void ProgressEngine::withdraw(Client *c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto of_c = [c](const Submitted &s) { return s.client == c; };
    const auto untaken = std::find_if(submitted_.begin(), submitted_.end(), of_c);
    if (untaken != submitted_.end()) {
      const bool quick = naa::Clock::now() - untaken->at < kQuick;
      submitted_.erase(std::remove_if(untaken, submitted_.end(), of_c), submitted_.end());
      taken_back_.fetch_add(1, std::memory_order_relaxed);
      const unsigned in_a_row = taken_back_in_a_row_.load(std::memory_order_relaxed);
      taken_back_in_a_row_.store(!quick ? 0 : std::min(in_a_row + 1, kTakenBackInARow),
                                 std::memory_order_relaxed);
    }
    withdrawn_.push_back(c);
    withdrawals_.fetch_add(1);
  }
  requests_.store(true);
  if (current_.load() != c) return;
  withdrawers_.fetch_add(1);
  {
    std::unique_lock<std::mutex> lock(mu_);
    released_.wait(lock, [&] { return current_.load() != c; });
  }
  withdrawers_.fetch_sub(1);
}

// The thread's side of withdraw(): current_ is cleared before withdrawers_ is read, so a
// withdraw() that counted itself in after that read finds current_ already changed.
void ProgressEngine::leave_current() {
  current_.store(nullptr);
  if (withdrawers_.load() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  released_.notify_all();
}

// Withdrawals first: a client withdrawn and submitted again is driven once.
void ProgressEngine::take_requests() {
  if (!requests_.exchange(false) && !withdrawn_since_taken()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Client *c : withdrawn_)
    active_.erase(std::remove(active_.begin(), active_.end(), c), active_.end());
  withdrawn_.clear();
  withdrawals_taken_ = withdrawals_.load();
  if (!submitted_.empty()) taken_back_in_a_row_.store(0, std::memory_order_relaxed);
  for (const Submitted &s : submitted_)
    if (std::find(active_.begin(), active_.end(), s.client) == active_.end())
      active_.push_back(s.client);
  submitted_.clear();
}

bool ProgressEngine::withdrawn_since_taken() const {
  return withdrawals_.load() != withdrawals_taken_;
}

// A busy spell (some client active, submit to settle: about one round trip) is how long the
// awaited thing takes, for the wait plan.
void ProgressEngine::track_busy() {
  if (active_.empty() != busy_) return;
  busy_ = !busy_;
  if (busy_) {
    busy_since_ = naa::Clock::now();
  } else {
    busy_for_.observe(naa::Clock::now() - busy_since_);
    policy_.expected = busy_for_.value();
  }
}

// One turn of the driver: the requests, then one step of every client.
progress::Turn ProgressEngine::turn() {
  const diag::log::Deferred
      deferred;  // the handler sees the turn's lines once its clients are left
  bool moved = requests_.load();
  take_requests();
  track_busy();
  idle_fds_.clear();
  all_have_fds_ = true;
  due_ = naa::Clock::time_point::max();
  for (size_t i = 0; i < active_.size();) {
    Client *c = active_[i];
    current_.store(c);
    if (withdrawn_since_taken()) {  // c may be gone: take the withdrawals before touching it
      leave_current();
      return progress::Turn::Moved;
    }
    const Client::Step step = c->step();
    if (step == Client::Step::Idle) {
      const int fd = c->wait_fd();
      if (fd >= 0)
        idle_fds_.push_back({fd, POLLIN, 0});
      else
        all_have_fds_ = false;
      due_ = std::min(due_, c->due());
    } else {
      moved = true;
    }
    if (step == Client::Step::Settled) {
      active_.erase(active_.begin() + static_cast<long>(i));
      c->announce();  // may be submitted again from here on
    } else {
      ++i;
    }
    leave_current();
  }
  track_busy();
  if (moved) return progress::Turn::Moved;
  return active_.empty() ? progress::Turn::Idle : progress::Turn::Waiting;
}

naa::WaitPlan ProgressEngine::plan(naa::WaitPlan planned) const {
  if (taken_back_in_a_row_.load(std::memory_order_relaxed) < kTakenBackInARow) return planned;
  planned.period = std::max(planned.period, kLongDoze);
  planned.length = std::max(planned.length, kLongDozes * kLongDoze);
  return planned;
}

// Sleeps only unless a request came; submit() then wakes it through the eventfd. The clients
// the last turn found idle armed their descriptors in step().
progress::Armed ProgressEngine::arm(std::vector<pollfd> &fds) {
  progress::Armed armed;
  armed.due = due_;
  sleeping_.store(true);
  if (requests_.load() || stop_.load()) {
    sleeping_.store(false);
    armed.ready = true;
    return armed;
  }
  fds.push_back(pollfd{wake_fd_, POLLIN, 0});
  fds.insert(fds.end(), idle_fds_.begin(), idle_fds_.end());
  return armed;
}

void ProgressEngine::woke() {
  sleeping_.store(false);
  uint64_t count;
  ssize_t rc = read(wake_fd_, &count, sizeof count);  // EAGAIN when nobody wrote
  (void)rc;
}

void ProgressEngine::run(int cpu, microseconds spin) {
  no_wakeup_preemption();
  exact_timers();
  if (cpu >= 0) pin(cpu);
  policy_ = {config::Progress::Mode::Thread, spin, {}};
  progress::drive(*this, policy_, Deadline::at(naa::Clock::time_point::max()));
}

}  // namespace naa::progress
