// SPDX-License-Identifier: BSD-3-Clause
// NAA_PROGRESS=adaptive (lib/progress/driver.cpp, busy_node, spin_budget): on an oversubscribed
// node a wait sleeps at its first empty turn instead of polling, where one reading above the CPUs
// is not yet oversubscription; a handle whose polls did not
// pay sleeps at once for ever more waits, and polls again once one of its polls paid. The
// node is made oversubscribed by the environment (more ranks on it than CPUs), never by load.
// Also the estimates that waits keep of what they wait for (Expected, Peak).
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <setjmp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "progress/busy_node.hpp"
#include "progress/driver.hpp"
#include "progress/spin_budget.hpp"
#include "progress/yield_pacer.hpp"

using naa::Deadline;
using naa::config::Progress;
using namespace naa::progress;
using namespace naa;  // the wait plan: Clock, Expected, YieldingPoller

namespace {

// Nothing comes until the waiter arms its descriptors to sleep; arming says "something may be
// there" (no real sleep), and the next turn finds the completion.
class SleepOnly final : public Work {
 public:
  bool done() override { return arms_ > 0 && turns_after_arm_ > 0; }
  Turn turn() override {
    if (arms_ == 0)
      ++turns_before_arm_;
    else
      ++turns_after_arm_;
    return arms_ > 0 ? Turn::Moved : Turn::Waiting;
  }
  bool woken() override { return true; }
  Armed arm(std::vector<pollfd> &) override {
    ++arms_;
    Armed a;
    a.ready = true;
    return a;
  }
  unsigned turns_before_arm_ = 0, turns_after_arm_ = 0, arms_ = 0;
};

unsigned turns_before_sleeping(Progress::Mode mode) {
  SleepOnly work;
  Policy policy;
  policy.mode = mode;
  policy.spin = std::chrono::milliseconds(20);  // long enough for thousands of polls
  assert_true(drive(work, policy, Deadline::after(std::chrono::seconds(10))));
  return work.turns_before_arm_;
}

}  // namespace

// More ranks on the node than CPUs: the adaptive wait does not poll at all, where
// spin-then-block polls for its 20 ms.
static void oversubscribed_node_sleeps_at_once(void **) {
  const NodeLoad load = read_node_load();
  assert_int_equal(load.ranks, 100000);
  assert_true(load.oversubscribed());
  assert_true(node_oversubscribed(Clock::now()));
  assert_true(turns_before_sleeping(Progress::Mode::SpinThenBlock) > 10);
  assert_int_equal(turns_before_sleeping(Progress::Mode::Adaptive), 1);
}

// One reading above the CPUs is an instant (a kernel worker, a process starting): no verdict.
// Two in a row are; the verdict holds for kHold after the last reading that counted. More
// ranks than CPUs count from the first reading.
static void oversubscription_needs_two_readings(void **) {
  using std::chrono::milliseconds;
  auto t = [](milliseconds m) { return std::chrono::duration_cast<Clock::duration>(m).count(); };
  NodeLoad quiet, above, ranks;
  quiet.online = above.online = ranks.online = 2;
  quiet.runnable = 2;
  above.runnable = 3;
  ranks.runnable = 1;
  ranks.ranks = 4;
  Oversubscription o;
  assert_false(o.observe(t(milliseconds(10)), above));
  assert_false(o.at(t(milliseconds(10))));
  assert_false(o.observe(t(milliseconds(12)), quiet));  // the spike is gone: counting starts anew
  assert_false(o.observe(t(milliseconds(14)), above));
  assert_false(o.at(t(milliseconds(14))));
  assert_true(o.observe(t(milliseconds(16)), above));  // the second in a row: a verdict
  assert_true(o.at(t(milliseconds(16))));
  assert_false(o.observe(t(milliseconds(18)), above));  // still the same spell
  assert_true(o.at(t(milliseconds(18)) + t(kHold) - 1));
  assert_false(o.at(t(milliseconds(18)) + t(kHold)));
  Oversubscription by_ranks;
  assert_true(by_ranks.observe(t(milliseconds(10)), ranks));
  assert_true(by_ranks.at(t(milliseconds(10))));
}

// Runnable threads above the CPUs while the reader itself ran whenever it was runnable (kernel
// workers on the other CPU) are no oversubscription; once it waited for a CPU they are.
static void oversubscription_needs_the_reader_kept_waiting(void **) {
  using std::chrono::milliseconds;
  auto t = [](Clock::duration d) { return d.count(); };
  NodeLoad ran, waited;
  ran.online = waited.online = 2;
  ran.runnable = waited.runnable = 3;
  ran.waited = kWaitedShare - 1;
  waited.waited = kWaitedShare;
  Oversubscription o;
  assert_false(o.observe(t(milliseconds(10)), ran));
  assert_false(o.observe(t(milliseconds(12)), ran));
  assert_false(o.at(t(milliseconds(12))));
  assert_false(o.observe(t(milliseconds(14)), waited));
  assert_true(o.observe(t(milliseconds(16)), waited));
  assert_true(o.at(t(milliseconds(16))));
}

// A reader's peer awake on the reader's own CPU (transport::Endpoint::peer_beside(): a same-host
// naa-server's connection thread, or its client) takes turns with the reader there, both
// yielding: the run delay the reader sees is the peer's turns. Counted as one with the reader,
// client and connection thread on one CPU beside one more runnable thread are no
// oversubscription; beside two more (the hogs of the busy case) they are. The reader yields to
// it (at_capacity) where no CPU is free, or where it may not run on another; with a CPU free it
// does not, so that the kernel moves one of the two there.
static void a_peer_beside_the_reader_counts_as_one_with_it(void **) {
  NodeLoad alone, beside, busy;
  alone.online = beside.online = busy.online = 2;
  alone.usable = beside.usable = busy.usable = 2;
  alone.runnable = beside.runnable = 3;  // the client, its connection thread, a kernel worker
  busy.runnable = 4;                     // the client, its connection thread, two hogs
  alone.waited = beside.waited = busy.waited = 500;
  beside.beside = busy.beside = 1;
  assert_true(alone.crowded());
  assert_false(beside.crowded());
  assert_true(beside.at_capacity());  // the kernel worker holds the other CPU
  assert_true(busy.crowded());
  NodeLoad pair = beside;
  pair.runnable = 2;  // the client and its connection thread on one CPU, the other free
  assert_false(pair.at_capacity());
  pair.beside = 0;  // on two CPUs: each may share its own with something else
  assert_true(pair.at_capacity());
  pair.beside = 1;
  pair.usable = 1;  // the reader may run on its CPU alone: only yields let the peer run
  assert_true(pair.at_capacity());
  pair.usable = 0;  // unknown
  assert_true(pair.at_capacity());
  using std::chrono::milliseconds;
  auto t = [](Clock::duration d) { return d.count(); };
  Oversubscription o;
  assert_false(o.observe(t(milliseconds(10)), beside));
  assert_false(o.observe(t(milliseconds(12)), beside));
  assert_false(o.at(t(milliseconds(12))));
}

// This process's threads that poll for an arrival and yield at every look (naa-server's
// listener, its parked threads) are not counted as runnable threads that contend for a CPU:
// counted, a same-host naa-server's own listener and a parked thread made 2 CPUs look
// oversubscribed to its connection threads. A reading counts them while a YieldingPoller polls.
static void yielding_pollers_are_no_oversubscription(void **) {
  using std::chrono::milliseconds;
  auto t = [](Clock::duration d) { return d.count(); };
  NodeLoad polite, one_more;
  polite.online = one_more.online = 2;
  polite.runnable = one_more.runnable = 4;
  polite.waited = one_more.waited = 1000;
  polite.yielding = 2;    // the client, a connection thread, the listener, a parked thread
  one_more.yielding = 1;  // the same with a thread that does not yield in the listener's place
  assert_int_equal(polite.contending(), 2);
  assert_false(polite.crowded());
  assert_true(one_more.crowded());
  Oversubscription o;
  assert_false(o.observe(t(milliseconds(10)), polite));
  assert_false(o.observe(t(milliseconds(12)), polite));
  assert_false(o.at(t(milliseconds(12))));

  // A naa-server connection that polls for its paused client's next invocation, while the
  // connection of a client that goes on reads the node: that client, the poller and the reader
  // are 3 runnable threads on 2 CPUs, and the poller steps behind the others within
  // microseconds.
  NodeLoad sibling;
  sibling.online = 2;
  sibling.runnable = 3;
  sibling.waited = 500;
  sibling.yielding = 1;
  assert_false(sibling.crowded());

  // Counted from another thread's point of view; the poller itself, a reader, is counted in the
  // running count as the reader and not taken off it.
  assert_int_equal(yielding_pollers(), 0);
  assert_int_equal(read_node_load().yielding, 0);
  std::atomic<int> step{0};
  std::atomic<unsigned> seen_by_poller{99};
  auto await = [&step](int s) {
    while (step.load() < s) std::this_thread::yield();
  };
  std::thread other([&] {
    YieldingPoller poller;
    poller.poll();
    poller.poll();  // counted once
    // What the poller itself sees, asserted in the test's thread.
    seen_by_poller.store(yielding_pollers());
    step.store(1);
    await(2);
    poller.stop();
    step.store(3);
    await(4);
    poller.poll();
    step.store(5);
    await(6);
  });
  await(1);
  assert_int_equal(seen_by_poller.load(), 0);  // not by itself
  assert_int_equal(read_node_load().yielding, 1);
  {
    YieldingPoller mine;
    mine.poll();
    assert_int_equal(yielding_pollers(), 1);  // the other one alone
  }
  step.store(2);
  await(3);
  assert_int_equal(yielding_pollers(), 0);
  step.store(4);
  await(5);
  assert_int_equal(yielding_pollers(), 1);
  step.store(6);
  other.join();
  assert_int_equal(yielding_pollers(), 0);  // its end stopped it
}

// This thread's run delay in ns as /proc/thread-self/schedstat has it now, read apart from the
// code under test (-1 when unreadable).
static int64_t run_delay_ns() {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return -1;
  unsigned long long on_cpu = 0, delay = 0;
  const int n = fscanf(f, "%llu %llu", &on_cpu, &delay);
  fclose(f);
  return n == 2 ? static_cast<int64_t>(delay) : -1;
}

struct Waited {
  bool premise = false;  // a try had the wait below within the window
  int waited = -1;       // the share of the reading that followed a wait
  int late = -1;         // the share of a reading more than the window after it
};

// This thread and a spinning one, both pinned to one CPU, take turns. A try takes a reading,
// spins until the kernel's own count says this thread waited for a CPU at least kWaited, and
// takes a second reading; it counts only if both fell within kWindow of each other (less than
// the 20 ms window of busy_node.cpp), so the second reading's share is at least
// kWaited / kWindow (150 per mille, above kWaitedShare) unless the measurement is wrong. The
// scheduler decides when the turns come, so a try that misses is made again (100 at most). A
// third reading 30 ms later is past the window.
static Waited waited_beside_a_rival() {
  using std::chrono::milliseconds;
  constexpr auto kWaited = std::chrono::microseconds(2850);
  constexpr auto kWindow = milliseconds(19);
  static_assert(kWaited * 1000 / kWindow >= kWaitedShare);
  cpu_set_t before, one;
  assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
  CPU_ZERO(&one);
  CPU_SET(std::max(0, sched_getcpu()), &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  std::atomic<bool> stop{false};
  std::thread rival([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  Waited w;
  for (int attempt = 0; attempt < 100 && !w.premise; ++attempt) {
    const auto t0 = Clock::now();
    read_node_load();
    const int64_t d0 = run_delay_ns();
    while (run_delay_ns() - d0 < std::chrono::nanoseconds(kWaited).count() &&
           Clock::now() - t0 < kWindow - milliseconds(4)) {
    }
    const bool waited = run_delay_ns() - d0 >= std::chrono::nanoseconds(kWaited).count();
    const NodeLoad load = read_node_load();
    w.premise = waited && Clock::now() - t0 <= kWindow;
    w.waited = load.waited;
  }
  if (w.premise) {
    const auto until = Clock::now() + milliseconds(30);
    while (Clock::now() < until) {
    }
    w.late = read_node_load().waited;
  }
  stop = true;
  rival.join();
  sched_setaffinity(0, sizeof before, &before);
  return w;
}

static bool schedstat_readable() {
  if (access("/proc/thread-self/schedstat", R_OK) == 0) return true;
  print_message("skipped: no /proc/thread-self/schedstat (a kernel without CONFIG_SCHED_INFO)\n");
  return false;
}

// The reader's wait for a CPU is measured.
static void run_delay_is_measured(void **) {
  if (!schedstat_readable()) skip();
  const Waited w = waited_beside_a_rival();
  if (!w.premise) {
    print_message("skipped: in 100 tries this thread never waited 2.85 ms for a CPU in 19 ms\n");
    skip();
  }
  assert_true(w.waited >= kWaitedShare);
  assert_int_equal(w.late, -1);
}

// The readings keep their /proc files open; a fork()ed child measures its own thread, not the
// parent's thread it was copied from (which sits in waitpid meanwhile and waits for no CPU).
static void run_delay_is_measured_in_a_forked_child(void **) {
  if (!schedstat_readable()) skip();
  read_node_load();  // the parent's files open
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    const Waited w = waited_beside_a_rival();
    if (!w.premise) _exit(77);
    if (w.waited < kWaitedShare)
      fprintf(stderr, "the child read a waited share of %d per mille\n", w.waited);
    _exit(w.waited >= kWaitedShare && w.late == -1 ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    print_message("skipped: in 100 tries the child never waited 2.85 ms for a CPU in 19 ms\n");
    skip();
  }
  assert_int_equal(WEXITSTATUS(status), 0);
}

// Readings are kReadingShare times their cost apart, kRefresh at least and kMaxRefresh at
// most; the cost estimate drops to a cheaper reading at once and follows a dearer one by 1/8
// per reading (a reading preempted halfway is one such).
static void readings_are_spaced_by_their_cost(void **) {
  using std::chrono::microseconds;
  using std::chrono::nanoseconds;
  assert_true(reading_interval(nanoseconds(0)) == kRefresh);
  assert_true(reading_interval(microseconds(3)) == kRefresh);  // a node's: as before
  assert_true(reading_interval(microseconds(50)) == std::chrono::milliseconds(5));
  assert_true(reading_interval(microseconds(200)) == kMaxRefresh);  // a TCG guest's
  assert_true(reading_cost(nanoseconds(0), microseconds(70)) == microseconds(70));
  assert_true(reading_cost(microseconds(80), microseconds(3)) == microseconds(3));
  assert_true(reading_cost(microseconds(80), microseconds(4000)) == microseconds(90));
  nanoseconds cost = microseconds(3);
  for (int i = 0; i < 3; ++i) cost = reading_cost(cost, std::chrono::milliseconds(4));
  assert_true(cost < microseconds(5));  // three preempted readings: still a node's interval
  assert_true(reading_interval(cost) == kRefresh);
}

// A polling wait yields less often after each yield that found nothing else to run (as cheap
// as the cheapest), twice the time between yields each time up to YieldPacer::kMaxSpacing
// cheapest yields, and at every look again after one that let another thread run (long).
static void yields_back_off_while_they_find_no_thread(void **) {
  using std::chrono::microseconds;
  using std::chrono::nanoseconds;
  Clock::time_point t(std::chrono::seconds(1));
  YieldPacer p;
  assert_true(p.due(t));
  p.yielded(t, t + microseconds(20));  // an emulated CPU's system call, nothing else ran
  t += microseconds(20);
  assert_false(p.due(t + microseconds(19)));
  assert_true(p.due(t + microseconds(20)));
  unsigned spacing = 1;
  for (int i = 0; i < 10; ++i) {  // 2, 4, ... 64 cheapest yields apart, then 64
    t += microseconds(20) * spacing;
    p.yielded(t, t + microseconds(21));
    t += microseconds(21);
    spacing = std::min(2 * spacing, YieldPacer::kMaxSpacing);
    assert_false(p.due(t + microseconds(20) * spacing - nanoseconds(1)));
    assert_true(p.due(t + microseconds(20) * spacing));
  }
  p.yielded(t, t + microseconds(3000));  // the peer ran meanwhile
  t += microseconds(3000);
  assert_true(p.due(t));               // at every look again
  p.yielded(t, t + microseconds(60));  // three cheapest ones long: another thread ran
  t += microseconds(60);
  assert_true(p.due(t));
  p.yielded(t, t + nanoseconds(400));  // a node's: the cheapest now
  t += nanoseconds(400);
  assert_false(p.due(t + nanoseconds(399)));
  assert_true(p.due(t + nanoseconds(400)));
}

// The first miss after a hit is forgiven; misses in a row then make ever longer runs of waits
// that do not poll (2, 4, ...); one poll that paid makes the next wait poll again. A completion
// within twice the spell polled counts as paid.
static void budget_backs_off_and_recovers(void **) {
  SpinBudget b;
  assert_true(b.may_poll());
  b.missed();  // the first after a hit is forgiven
  assert_true(b.may_poll());
  b.missed();
  for (int i = 0; i < 2; ++i) {
    assert_false(b.may_poll());
    b.skipped();
  }
  assert_true(b.may_poll());
  b.missed();
  for (int i = 0; i < 4; ++i) {
    assert_false(b.may_poll());
    b.skipped();
  }
  assert_true(b.may_poll());
  for (int i = 0; i < 20; ++i) b.missed();  // capped
  for (unsigned i = 0; i < SpinBudget::kMaxBackoff; ++i) {
    assert_false(b.may_poll());
    b.skipped();
  }
  assert_true(b.may_poll());
  b.paid();
  assert_true(b.may_poll());
  b.missed();  // forgiven again
  assert_true(b.may_poll());
  b.missed();  // back to the first step
  assert_false(b.may_poll());
  b.skipped();
  b.skipped();
  assert_true(b.may_poll());
  using std::chrono::microseconds;
  assert_true(late_but_near(microseconds(199), microseconds(100)));
  assert_false(late_but_near(microseconds(200), microseconds(100)));
}

// Expected forgets a slow observation within some ten quick ones; Peak (naa-server's reply
// guard for reference clients) still keeps more than half of it after a hundred.
static void peak_keeps_a_slow_observation(void **) {
  using std::chrono::microseconds;
  Expected recent;
  Peak slowest;
  recent.observe(microseconds(1000));
  slowest.observe(microseconds(1000));
  for (int i = 0; i < 100; ++i) {
    recent.observe(microseconds(10));
    slowest.observe(microseconds(10));
  }
  assert_true(recent.value() == microseconds(10));
  assert_true(slowest.value() > microseconds(600));
  assert_true(slowest.value() < microseconds(1000));  // it does fade
  slowest.observe(microseconds(2000));
  assert_true(slowest.value() == microseconds(2000));
}

int main() {
  // Read once per process, first the variable Slurm sets.
  unsetenv("SLURM_NTASKS_PER_NODE");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "100000", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(oversubscribed_node_sleeps_at_once),
      cmocka_unit_test(oversubscription_needs_two_readings),
      cmocka_unit_test(oversubscription_needs_the_reader_kept_waiting),
      cmocka_unit_test(a_peer_beside_the_reader_counts_as_one_with_it),
      cmocka_unit_test(yielding_pollers_are_no_oversubscription),
      cmocka_unit_test(run_delay_is_measured),
      cmocka_unit_test(run_delay_is_measured_in_a_forked_child),
      cmocka_unit_test(readings_are_spaced_by_their_cost),
      cmocka_unit_test(yields_back_off_while_they_find_no_thread),
      cmocka_unit_test(budget_backs_off_and_recovers),
      cmocka_unit_test(peak_keeps_a_slow_observation),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
