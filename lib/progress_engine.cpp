// SPDX-License-Identifier: BSD-3-Clause
#include "progress_engine.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "error.hpp"
#include "log.hpp"

namespace naa {
namespace {

// The longest the thread sleeps while work is in flight before stepping every client again:
// a dead peer shows in the transport's connection events, which no wait descriptor signals.
constexpr int kSliceMs = 100;
// The sleep between rounds when some endpoint has no wait descriptor: short, since its
// completions are only seen by polling, yet long enough not to take a shared core.
constexpr int kNoDescriptorSleepMs = 1;

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

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
    NAA_LOG_WARN("progress thread: cannot pin to CPU %d (NAA_PROGRESS_CPU): %s; left unpinned",
                 cpu, strerror(rc));
  else
    NAA_LOG_INFO("progress thread pinned to CPU %d", cpu);
}

}  // namespace

std::shared_ptr<ProgressEngine> ProgressEngine::acquire(int cpu) {
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
  Registry &r = *registry.load();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto engine = r.engine.lock()) return engine;
  std::shared_ptr<ProgressEngine> engine(new ProgressEngine(cpu));
  r.engine = engine;
  return engine;
}

ProgressEngine::ProgressEngine(int cpu)
    : wake_fd_(make_eventfd()), fork_generation_(fork_generation.load()) {
  try {
    thread_ = std::thread(&ProgressEngine::run, this, cpu);
    // Named before naa_create returns, for top -H, gdb and the tests.
    pthread_setname_np(thread_.native_handle(), kThreadName);
  } catch (const std::system_error &e) {
    close(wake_fd_);
    throw Error(NAA_ERR_NO_RESOURCES, std::string("cannot start the progress thread: ") + e.what());
  }
  NAA_LOG_INFO("progress thread started (NAA_PROGRESS=thread)");
}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  close(wake_fd_);
  NAA_LOG_INFO("progress thread stopped with the last handle that used it");
}

bool ProgressEngine::orphaned() const { return fork_generation.load() != fork_generation_; }

void ProgressEngine::wake() {
  uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the thread will wake anyway.
  ssize_t rc = write(wake_fd_, &one, sizeof one);
  (void)rc;
}

void ProgressEngine::submit(Client *c) {
  bool sleeping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_.push_back(c);
    ++submissions_;
    sleeping = sleeping_;
    sleeping_ = false;  // one wake-up per sleep is enough
  }
  if (sleeping) wake();
}

void ProgressEngine::withdraw(Client *c) {
  std::unique_lock<std::mutex> lock(mu_);
  active_.erase(std::remove(active_.begin(), active_.end(), c), active_.end());
  released_.wait(lock, [&] { return current_ != c; });
}

void ProgressEngine::run(int cpu) {
  no_wakeup_preemption();
  if (cpu >= 0) pin(cpu);
  std::vector<Client *> round;
  std::vector<pollfd> fds;
  uint64_t seen = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      round = active_;
      seen = submissions_;
    }
    bool moved = false;
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    bool all_have_fds = true;
    for (Client *c : round) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (std::find(active_.begin(), active_.end(), c) == active_.end()) continue;  // withdrawn
        current_ = c;
      }
      Client::Step step = c->step();
      if (step == Client::Step::Idle) {
        int fd = c->wait_fd();
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
        else all_have_fds = false;
      } else {
        moved = true;
      }
      if (step == Client::Step::Settled) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          active_.erase(std::remove(active_.begin(), active_.end(), c), active_.end());
        }
        c->announce();  // may be submitted again from here on
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        current_ = nullptr;
      }
      released_.notify_all();
    }
    if (moved) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || submissions_ != seen) continue;  // a client submitted since is not stepped yet
      sleeping_ = true;
    }
    int timeout = round.empty() ? -1 : all_have_fds ? kSliceMs : kNoDescriptorSleepMs;
    ::poll(fds.data(), fds.size(), timeout);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sleeping_ = false;
    }
    uint64_t count;
    ssize_t rc = read(wake_fd_, &count, sizeof count);  // EAGAIN when woken by an endpoint
    (void)rc;
  }
}

}  // namespace naa
