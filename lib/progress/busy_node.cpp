// SPDX-License-Identifier: BSD-3-Clause
#include "progress/busy_node.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "diag/log.hpp"
#include "wait_plan.hpp"  // Clock

namespace naa::progress {
namespace {

// A small /proc file, kept open and read again from its start (pread(2) makes the kernel
// produce it anew): open(2) and close(2) are two thirds of a reading's system calls, and a
// reading is taken every reading_interval() in a waiting thread's own path. One per thread that
// reads: /proc/thread-self is the opener's. Opened again in a fork()ed child. A descriptor that
// fails to read is given up, not closed: it may be the application's by now, if the
// application closed ours.
class ProcFile {
 public:
  explicit ProcFile(const char *path) : path_(path) {}
  ~ProcFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ProcFile(const ProcFile &) = delete;
  ProcFile &operator=(const ProcFile &) = delete;

  // Its start, NUL-terminated, in `text`; false when unreadable.
  template <size_t N>
  bool read(char (&text)[N]) {
    const pid_t pid = getpid();
    if (fd_ >= 0 && pid_ != pid) {
      ::close(fd_);  // the parent's, copied into this child
      fd_ = -1;
    }
    if (fd_ < 0) {
      fd_ = ::open(path_, O_RDONLY | O_CLOEXEC);
      pid_ = pid;
      if (fd_ < 0) return false;
    }
    const ssize_t n = ::pread(fd_, text, N - 1, 0);
    if (n <= 0) {
      fd_ = -1;
      return false;
    }
    text[n] = '\0';
    return true;
  }

 private:
  const char *const path_;
  int fd_ = -1;
  pid_t pid_ = 0;
};

// The running count of /proc/loadavg ("0.50 0.40 0.30 3/250 12345": 3), 0 when unreadable.
unsigned running_now() {
  thread_local ProcFile loadavg("/proc/loadavg");
  char text[128];
  if (!loadavg.read(text)) return 0;
  unsigned running = 0, total = 0;
  double a, b, c;
  if (std::sscanf(text, "%lf %lf %lf %u/%u", &a, &b, &c, &running, &total) != 5) return 0;
  return running;
}

// The first of the variables set to a plain number ("4"; Slurm's "4(x2)" counts as 4).
unsigned ranks_from_environment() {
  for (const char *name :
       {"SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v < '1' || *v > '9') continue;
    const unsigned long n = std::strtoul(v, nullptr, 10);
    if (n > 0 && n < 1000000) return static_cast<unsigned>(n);
  }
  return 0;
}

// This thread's run delay (time runnable but not running) in ns, -1 when unreadable.
int64_t run_delay_now() {
  thread_local ProcFile schedstat("/proc/thread-self/schedstat");
  char text[96];
  if (!schedstat.read(text)) return -1;
  unsigned long long on_cpu = 0, delay = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu, &delay) != 2) return -1;
  return static_cast<int64_t>(delay);
}

// Per mille of the time since this thread's previous call that it waited for a CPU (-1: the
// first call, one more than kWaitWindow after the previous, or schedstat unreadable). Past
// the window the share would mostly measure the past: where the threads of a process take
// the readings in turn (naa-server's connections), each one's previous reading is old, and
// the running count then decides alone.
int waited_since_last(Clock::time_point now) {
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  constexpr int64_t kWaitWindow = 20 * 1000 * 1000;
  static_assert(kWaitWindow >= 2 * std::chrono::nanoseconds(kMaxRefresh).count(),
                "two readings in a row must fall within the window");
  thread_local int64_t last_ns = 0, last_delay = -1;
  const int64_t delay = run_delay_now();
  int share = -1;
  if (delay >= 0 && last_delay >= 0 && now_ns > last_ns && now_ns - last_ns <= kWaitWindow)
    share =
        static_cast<int>(std::min<int64_t>(1000, (delay - last_delay) * 1000 / (now_ns - last_ns)));
  last_ns = now_ns;
  last_delay = delay;
  return share;
}

// The CPUs in the calling thread's affinity mask (0: unknown).
unsigned usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return static_cast<unsigned>(CPU_COUNT(&set));
}

struct Reading {
  std::atomic<int64_t> taken{0};  // Clock ticks of the last reading
  Oversubscription verdict;
  std::atomic<bool> at_capacity{false};
  std::atomic<int64_t> cost{0};  // ns: reading_cost()'s estimate (0: no reading yet)
};
Reading reading;

int64_t ticks(Clock::time_point t) {
  return t.time_since_epoch().count();
}
int64_t ticks(Clock::duration d) {
  return d.count();
}

void refresh(Clock::time_point now, const PeerBeside *peer) {
  int64_t last = reading.taken.load(std::memory_order_relaxed);
  const auto interval = reading_interval(nanoseconds(reading.cost.load(std::memory_order_relaxed)));
  if (last != 0 && now - Clock::time_point(Clock::duration(last)) < interval) return;
  // One reader at a time; the others go on with the last reading.
  if (!reading.taken.compare_exchange_strong(last, ticks(now))) return;
  static const unsigned ranks = ranks_from_environment();
  static const unsigned online = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  NodeLoad load;
  load.online = online;
  load.runnable = running_now();
  load.yielding = yielding_pollers();
  load.beside = peer != nullptr && peer->peer_beside() ? 1 : 0;
  load.usable = load.beside != 0 ? usable_cpus() : 0;  // at_capacity asks only then
  load.ranks = ranks;
  load.waited = waited_since_last(now);
  if (reading.verdict.observe(ticks(now), load))
    NAA_LOG_DEBUG("adaptive waits sleep at once for %lld ms: %s",
                  static_cast<long long>(kHold.count()), load.describe().c_str());
  reading.at_capacity.store(load.at_capacity(), std::memory_order_relaxed);
  const nanoseconds took = Clock::now() - now;
  reading.cost.store(
      reading_cost(nanoseconds(reading.cost.load(std::memory_order_relaxed)), took).count(),
      std::memory_order_relaxed);
}

}  // namespace

nanoseconds reading_cost(nanoseconds estimate, nanoseconds took) {
  if (estimate.count() <= 0) return took;
  return std::min(took, estimate + estimate / 8);
}

Clock::duration reading_interval(nanoseconds cost) {
  return std::clamp<Clock::duration>(cost * kReadingShare, kRefresh, kMaxRefresh);
}

std::string NodeLoad::describe() const {
  std::string s = std::to_string(online) + " CPUs online, ";
  if (usable != 0) s += std::to_string(usable) + " usable, ";
  s += runnable != 0 ? std::to_string(runnable) + " runnable" : std::string("runnable unknown");
  if (yielding != 0) s += " (" + std::to_string(yielding) + " of them yielding pollers)";
  if (beside != 0) s += ", the peer on the reader's CPU";
  if (waited >= 0) s += ", waited " + std::to_string(waited / 10) + " %";
  s += ranks != 0 ? ", " + std::to_string(ranks) + " ranks on the node"
                  : std::string(", ranks unknown");
  return s + (oversubscribed() ? ": oversubscribed" : ": not oversubscribed");
}

NodeLoad read_node_load() {
  NodeLoad load;
  load.online = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  load.usable = usable_cpus();
  load.runnable = running_now();
  load.yielding = yielding_pollers();
  load.ranks = ranks_from_environment();
  load.waited = waited_since_last(Clock::now());
  return load;
}

bool Oversubscription::observe(int64_t now, const NodeLoad &load) {
  const bool above = load.crowded();
  const unsigned in_a_row = above ? above_in_a_row_.load(std::memory_order_relaxed) + 1 : 0;
  above_in_a_row_.store(in_a_row, std::memory_order_relaxed);
  if (!(in_a_row >= 2 || load.ranks > load.online)) return false;
  const bool began = !at(now);
  since_.store(now, std::memory_order_relaxed);
  return began;
}

bool Oversubscription::at(int64_t now) const {
  const int64_t since = since_.load(std::memory_order_relaxed);
  return since != 0 && now - since < ticks(Clock::duration(kHold));
}

bool node_oversubscribed(Clock::time_point now, const PeerBeside *peer) {
  refresh(now, peer);
  return reading.verdict.at(ticks(now));
}

bool node_at_capacity(Clock::time_point now, const PeerBeside *peer) {
  refresh(now, peer);
  return reading.at_capacity.load(std::memory_order_relaxed);
}

}  // namespace naa::progress
