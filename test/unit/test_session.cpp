// SPDX-License-Identifier: BSD-3-Clause
// Session, the progress driver, the pacing timer and the completion calls (naa_wait, naa_test,
// naa_waitany, naa_waitall below the C ABI), with NAA_PROGRESS=thread's races, over a fake
// transport (fake_transport.hpp): no fabric, no naa-server, the NAA's answers scripted.
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

// Before cmocka.h, whose fail() macro would rename Session::fail.
#include "session/settings.hpp"
#include "diag/log.hpp"
#include "fake_transport.hpp"
#include "session/completion.hpp"
#include "protocol/mrsp.hpp"
#include "session/session.hpp"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

namespace {

// How much slower than a plain build this one runs (NAA_TEST_TIME_SCALE: 3 under ASan, 5 under
// TSan, scripts/sanitize.sh): the bounds below are the mechanism's, stretched by it.
std::chrono::microseconds scaled(std::chrono::microseconds d) {
  const char *s = std::getenv("NAA_TEST_TIME_SCALE");
  const double scale = s != nullptr && std::atof(s) > 1 ? std::atof(s) : 1;
  return std::chrono::microseconds(static_cast<long long>(static_cast<double>(d.count()) * scale));
}

using namespace std::chrono_literals;
using naa::config::Progress;
using naa::fake::Clock;

// CPU time of the calling thread: a waiter that sleeps uses next to none of it.
std::chrono::nanoseconds thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// As naa_testany and naa_testall see `sessions` (api.cpp): those with nothing in flight
// inactive, each other one with the number of its invocation in flight.
struct InFlight {
  explicit InFlight(const naa::session::Sessions &all) : sessions(all), invocations(all.size()) {
    for (size_t i = 0; i < all.size(); ++i)
      if (sessions[i] != nullptr && (invocations[i] = sessions[i]->in_flight()) == 0)
        sessions[i] = nullptr;
  }
  naa::session::Sessions sessions;
  std::vector<uint64_t> invocations;
};

// Hands the block it was last given back to the next request of the same size, so that a
// Session made after another one's end lands at its address whatever the C++ allocator (or
// ASan's quarantine) would do. `slot` keeps one block; the test frees it at its end.
struct AddressSlot {
  void *block = nullptr;
  size_t size = 0;
  ~AddressSlot() { ::operator delete(block); }
};

template <typename T>
struct RecyclingAllocator {
  using value_type = T;
  AddressSlot *slot;
  explicit RecyclingAllocator(AddressSlot *s) : slot(s) {}
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U> &other) : slot(other.slot) {}
  T *allocate(size_t n) {
    const size_t size = n * sizeof(T);
    if (slot->block != nullptr && slot->size == size)
      return static_cast<T *>(std::exchange(slot->block, nullptr));
    return static_cast<T *>(::operator new(size));
  }
  void deallocate(T *p, size_t n) {
    ::operator delete(slot->block);
    slot->block = p;
    slot->size = n * sizeof(T);
  }
  template <typename U>
  bool operator==(const RecyclingAllocator<U> &other) const {
    return slot == other.slot;
  }
  template <typename U>
  bool operator!=(const RecyclingAllocator<U> &other) const {
    return slot != other.slot;
  }
};

// One handle on a fake NAA.
struct Handle {
  std::shared_ptr<naa::fake::Peer> peer = std::make_shared<naa::fake::Peer>();
  naa::fake::Endpoint *ep = nullptr;
  naa::fake::Transport *transport = nullptr;  // its `last` is the endpoint after a reconnect
  std::shared_ptr<naa::session::Session> session;
  std::vector<uint8_t> in = std::vector<uint8_t>(64), out = std::vector<uint8_t>(64);
  unsigned reconnect = 0;        // NAA_RECONNECT
  bool pacing_adaptive = false;  // NAA_PACING_ADAPTIVE
  uint16_t port = 1;  // the NAA's, which names it: a guard doubled for fake:1 stays doubled
  AddressSlot *slot = nullptr;  // where the Session is made, if not by make_shared

  void open(Progress::Mode mode, std::chrono::microseconds pacing = 0us,
            std::chrono::milliseconds timeout = 10s) {
    naa::session::Settings s = naa::session::Settings::resolve(nullptr);
    s.timeout = timeout;
    s.connect_timeout = 5s;
    s.reconnect = reconnect;
    s.progress.mode = mode;
    s.pacing = pacing;
    s.pacing_adaptive = pacing_adaptive;
    auto t = std::make_unique<naa::fake::Transport>(peer);
    transport = t.get();
    std::vector<naa::protocol::Region> regions{{in.data(), 64, naa::protocol::mrsp::kInput},
                                               {out.data(), 64, naa::protocol::mrsp::kOutput}};
    auto target = std::make_unique<naa::rm::Target>("fake", port, "unit test");
    if (slot != nullptr)
      session = std::allocate_shared<naa::session::Session>(
          RecyclingAllocator<naa::session::Session>(slot), std::move(t), 1, regions,
          std::move(target), std::make_shared<const naa::session::Settings>(s),
          naa::Deadline::after(5s));
    else
      session = std::make_shared<naa::session::Session>(
          std::move(t), 1, regions, std::move(target),
          std::make_shared<const naa::session::Settings>(s), naa::Deadline::after(5s));
    ep = transport->last;
  }
};

// The NAA answers `ep` after `delay`, from another thread.
std::thread reply_after(naa::fake::Endpoint *ep, std::chrono::milliseconds delay) {
  return std::thread([ep, delay] {
    std::this_thread::sleep_for(delay);
    ep->reply();
  });
}

void wait_completes_invocations(void **) {
  for (Progress::Mode mode :
       {Progress::Mode::Adaptive, Progress::Mode::SpinThenBlock, Progress::Mode::Spin,
        Progress::Mode::Block, Progress::Mode::Thread}) {
    Handle h;
    h.open(mode);
    for (int i = 0; i < 50; ++i) {
      assert_int_equal(h.session->invoke(), NAA_SUCCESS);
      naa_status st{};
      assert_int_equal(h.session->wait(&st), NAA_SUCCESS);
      assert_int_equal(st.naa_return_code, 0);
    }
    h.peer->auto_reply = false;
    assert_int_equal(h.session->invoke(), NAA_SUCCESS);
    std::thread naa = reply_after(h.ep, 30ms);
    assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
    naa.join();
    assert_int_equal(h.peer->invocations.load(), 51);
  }
}

// A blocking wait sleeps on the endpoint's descriptor until the reply comes: a few polls and
// next to no CPU time (a spin would use its core for the whole wait, or its share of it on a
// busy machine), not a timing of the wait itself.
void block_sleeps_on_the_descriptor(void **) {
  Handle h;
  h.open(Progress::Mode::Block);
  h.peer->auto_reply = false;
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  const unsigned before = h.peer->polls;
  const auto cpu = thread_cpu();
  std::thread naa = reply_after(h.ep, 500ms);
  assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
  naa.join();
  const unsigned polls = h.peer->polls - before;
  const auto used = std::chrono::duration_cast<std::chrono::microseconds>(thread_cpu() - cpu);
  print_message("a 500 ms blocking wait: %u polls, %ld us of CPU\n", polls,
                static_cast<long>(used.count()));
  assert_true(polls < 50);
  assert_true(used < scaled(20ms));
}

// naa_waitany over many handles, one answered: that one, found by sleeping on all the
// descriptors at once (few polls: the armed handles are looked at through their descriptors;
// next to no CPU time); naa_testany then finds none; naa_waitall ends the rest.
void waitany_sleeps_on_every_descriptor(void **) {
  constexpr size_t kHandles = 8, kAnswered = 5;
  std::vector<Handle> h(kHandles);
  naa::session::Sessions sessions;
  for (Handle &x : h) {
    x.peer->auto_reply = false;
    x.open(Progress::Mode::Block);
    assert_int_equal(x.session->invoke(), NAA_SUCCESS);
    sessions.push_back(x.session.get());
  }
  auto polls = [&] {
    unsigned n = 0;
    for (Handle &x : h) n += x.peer->polls;
    return n;
  };
  const unsigned before = polls();
  const auto cpu = thread_cpu();
  std::thread naa = reply_after(h[kAnswered].ep, 500ms);
  int index = -1;
  naa_status st{};
  assert_int_equal(naa::session::wait_any(sessions, &index, &st), NAA_SUCCESS);
  naa.join();
  assert_int_equal(index, kAnswered);
  const auto used = std::chrono::duration_cast<std::chrono::microseconds>(thread_cpu() - cpu);
  print_message("a 500 ms naa_waitany over %zu handles: %u polls, %ld us of CPU\n", kHandles,
                polls() - before, static_cast<long>(used.count()));
  assert_true(polls() - before < 50 * kHandles);
  assert_true(used < scaled(20ms));

  sessions[kAnswered] = nullptr;  // inactive now, as naa_waitany leaves it
  bool flag = true;
  const InFlight active(sessions);
  assert_int_equal(naa::session::test_any(active.sessions, active.invocations, &index, &flag, &st),
                   NAA_SUCCESS);
  assert_false(flag);
  for (size_t i = 0; i < kHandles; ++i)
    if (i != kAnswered) h[i].ep->reply();
  std::vector<naa_status> all(kHandles);
  assert_int_equal(naa::session::wait_all(sessions, all.data()), NAA_SUCCESS);
}

// naa_waitany keeps its set of descriptors and the arming of the handles in it across calls:
// no wake-up may be lost to that. 200 handles (every tenth without a descriptor, as ofi+shm)
// answered one at a time in a shuffled order, each after 0-2 ms (before or after the waiter
// sleeps), each waited for in Block mode (asleep at once: only a descriptor or a poll can end
// the wait) and invoked again once ended; then waits over half of them while a handle of the
// other half is answered (its registration, fired for nobody, is dropped), and a wait over
// all must still find that one. Each wait must return the answered handle well before the
// handles' deadline: a lost wake-up is a sleep until the deadline.
void waitany_over_many_handles_loses_no_wake_up(void **) {
  constexpr size_t kHandles = 200;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(scaled(2s));
  std::vector<Handle> h(kHandles);
  naa::session::Sessions sessions;
  for (size_t i = 0; i < kHandles; ++i) {
    h[i].peer->auto_reply = false;
    h[i].peer->descriptor = i % 10 != 3;
    h[i].open(Progress::Mode::Block, 0us, timeout);
    assert_int_equal(h[i].session->invoke(), NAA_SUCCESS);
    sessions.push_back(h[i].session.get());
  }
  std::vector<size_t> order;
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < kHandles; ++i) order.push_back(i);
  srand(24);
  for (size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<size_t>(rand()) % (i + 1)]);
  auto answered_in_time = [&](const naa::session::Sessions &among, size_t answer, long delay_us) {
    std::thread naa([&, answer, delay_us] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      h[answer].ep->reply();
    });
    const auto start = Clock::now();
    int index = -1;
    naa_status st{};
    const int rc = naa::session::wait_any(among, &index, &st);
    const auto took = Clock::now() - start;
    naa.join();
    if (rc != NAA_SUCCESS || index != static_cast<int>(answer) || took >= timeout / 2)
      print_message(
          "handle %zu answered after %ld us: naa_waitany returned %d, index %d, after %ld ms\n",
          answer, delay_us, rc, index,
          static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    return rc == NAA_SUCCESS && index == static_cast<int>(answer) && took < timeout / 2;
  };
  for (size_t answer : order) {
    assert_true(answered_in_time(sessions, answer, rand() % 2000));
    assert_int_equal(h[answer].session->invoke(), NAA_SUCCESS);
  }
  naa::session::Sessions half(sessions.begin(), sessions.begin() + kHandles / 2);
  for (size_t other = kHandles / 2; other < kHandles; other += 7) {
    h[other].ep->reply();  // fires in the set while nobody waits for it
    assert_true(answered_in_time(half, other % (kHandles / 2), 1000));
    assert_int_equal(h[other % (kHandles / 2)].session->invoke(), NAA_SUCCESS);
    int index = -1;
    const auto start = Clock::now();
    assert_int_equal(naa::session::wait_any(sessions, &index, nullptr), NAA_SUCCESS);
    assert_int_equal(index, static_cast<int>(other));
    assert_true(Clock::now() - start < timeout / 2);
    assert_int_equal(h[other].session->invoke(), NAA_SUCCESS);
  }
  for (Handle &x : h) x.ep->reply();
  assert_int_equal(naa::session::wait_all(sessions, nullptr), NAA_SUCCESS);
}

// Two threads wait for one handle at once (MPI would not allow it; libnaa does): the second
// takes it into its own wait set and returns with another handle; the first, asleep on its
// own set, must still find the handle once answered, at the end of a sleep slice (the wait
// plan's, 0.1 s here), not at the handles' deadline.
void waitany_finds_a_handle_another_thread_took(void **) {
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(scaled(3s));
  std::vector<Handle> h(3);
  for (Handle &x : h) {
    x.peer->auto_reply = false;
    x.open(Progress::Mode::Block, 0us, timeout);
    assert_int_equal(x.session->invoke(), NAA_SUCCESS);
  }
  int first_index = -1, first_rc = -1;
  Clock::time_point first_returned;
  std::thread first([&] {
    first_rc =
        naa::session::wait_any({h[0].session.get(), h[1].session.get()}, &first_index, nullptr);
    first_returned = Clock::now();
  });
  std::this_thread::sleep_for(50ms);  // the first thread is asleep, handle 1 armed in its set
  std::thread naa = reply_after(h[2].ep, 20ms);
  int index = -1;
  assert_int_equal(
      naa::session::wait_any({h[1].session.get(), h[2].session.get()}, &index, nullptr),
      NAA_SUCCESS);
  naa.join();
  assert_int_equal(index, 1);  // handle 2, its position in this call
  const auto answered = Clock::now();
  h[1].ep->reply();  // fires in this thread's set, where nobody waits
  first.join();
  print_message("the first thread found it %ld ms after the answer\n",
                static_cast<long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(first_returned - answered)
                        .count()));
  assert_int_equal(first_rc, NAA_SUCCESS);
  assert_int_equal(first_index, 1);
  assert_true(first_returned - answered < timeout / 2);
  h[0].ep->reply();
  assert_int_equal(h[0].session->wait(nullptr), NAA_SUCCESS);
}

// What a thread's waits keep across calls (completion.cpp's Memory) for handles of the same
// array. naa_waitany over `sessions` with `answer` answered after `delay` must return it well
// before the handles' deadline (a handle wrongly taken for Watched is never polled: its wait
// lasts until the deadline), with a 500 ms NAA_TIMEOUT scaled.
std::chrono::milliseconds short_timeout() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(scaled(500ms));
}

bool answered_in_time(const naa::session::Sessions &sessions, std::vector<Handle> &h, size_t answer,
                      std::chrono::milliseconds delay) {
  std::thread naa = reply_after(h[answer].ep, delay);
  const auto start = Clock::now();
  int index = -1;
  const int rc = naa::session::wait_any(sessions, &index, nullptr);
  const auto took = Clock::now() - start;
  naa.join();
  if (rc != NAA_SUCCESS || index != static_cast<int>(answer) || took >= short_timeout() / 2)
    print_message(
        "handle %zu answered: naa_waitany returned %d, index %d, after %ld ms\n", answer, rc, index,
        static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  return rc == NAA_SUCCESS && index == static_cast<int>(answer) && took < short_timeout() / 2;
}

void open_invoked(std::vector<Handle> *h, naa::session::Sessions *sessions) {
  for (Handle &x : *h) {
    x.peer->auto_reply = false;
    x.open(Progress::Mode::Block, 0us, short_timeout());
    assert_int_equal(x.session->invoke(), NAA_SUCCESS);
    sessions->push_back(x.session.get());
  }
}

std::vector<Handle> open_invoked(size_t n, naa::session::Sessions *sessions) {
  std::vector<Handle> h(n);
  open_invoked(&h, sessions);
  return h;
}

// A handle naa_waitany ended stays Idle in the thread's memory until it is invoked again:
// the invocation (here on another thread) must make the next call over the same array wait
// for it.
void waitany_sees_a_handle_invoked_again_between_calls(void **) {
  naa::session::Sessions sessions;
  std::vector<Handle> h = open_invoked(6, &sessions);
  for (size_t answer : {0, 1, 2}) assert_true(answered_in_time(sessions, h, answer, 5ms));
  for (size_t again : {1, 0}) {
    std::thread([&] { assert_int_equal(h[again].session->invoke(), NAA_SUCCESS); }).join();
    assert_true(answered_in_time(sessions, h, again, 20ms));
  }
  for (size_t i = 3; i < h.size(); ++i) h[i].ep->reply();
  assert_int_equal(naa::session::wait_all(sessions, nullptr), NAA_SUCCESS);
}

// A handle finalized between two calls and replaced at the same position by a new one at the
// same address (the allocator may well place it there; RecyclingAllocator makes sure it does):
// the old one's leaving the set tells the waiting thread, which must not take the new one for
// the old, Watched, one.
void waitany_sees_a_handle_replaced_at_the_same_address(void **) {
  AddressSlot slot;
  naa::session::Sessions sessions;
  std::vector<Handle> h(6);
  for (Handle &one : h) one.slot = &slot;
  open_invoked(&h, &sessions);
  assert_true(answered_in_time(sessions, h, 0, 20ms));  // the others are Watched now
  for (size_t k : {2, 4, 2}) {
    naa::session::Session *old = h[k].session.get();
    h[k] = Handle();
    h[k].slot = &slot;
    h[k].peer->auto_reply = false;
    h[k].open(Progress::Mode::Block, 0us, short_timeout());
    assert_ptr_equal(h[k].session.get(), old);  // the premise, forced
    sessions[k] = h[k].session.get();
    assert_int_equal(h[k].session->invoke(), NAA_SUCCESS);
    assert_true(answered_in_time(sessions, h, k, 20ms));
    assert_int_equal(h[k].session->invoke(), NAA_SUCCESS);
  }
  sessions[0] = nullptr;
  for (size_t i = 1; i < h.size(); ++i) h[i].ep->reply();
  assert_int_equal(naa::session::wait_all(sessions, nullptr), NAA_SUCCESS);
}

// Between two calls of one thread another thread ends one of its Watched handles (naa_wait),
// then takes another into its own set (its naa_waitany): the next call must neither end the
// first again (it has nothing in flight: naa_waitany ignores it) nor miss the answer of the
// second.
void waitany_sees_handles_another_thread_used_between_calls(void **) {
  naa::session::Sessions sessions;
  std::vector<Handle> h = open_invoked(6, &sessions);
  Handle extra;
  extra.peer->auto_reply = false;
  extra.open(Progress::Mode::Block, 0us, short_timeout());
  assert_int_equal(extra.session->invoke(), NAA_SUCCESS);
  assert_true(answered_in_time(sessions, h, 0, 20ms));  // 1 to 5 Watched in this thread's set
  std::thread([&] {
    h[2].ep->reply();
    assert_int_equal(h[2].session->wait(nullptr), NAA_SUCCESS);
  }).join();
  assert_true(answered_in_time(sessions, h, 3, 20ms));
  std::thread([&] {
    extra.ep->reply();
    int index = -1;
    assert_int_equal(
        naa::session::wait_any({h[1].session.get(), extra.session.get()}, &index, nullptr),
        NAA_SUCCESS);
    assert_int_equal(index, 1);
  }).join();
  assert_true(answered_in_time(sessions, h, 1, 20ms));
  for (size_t i : {4, 5}) h[i].ep->reply();
  assert_int_equal(naa::session::wait_all(sessions, nullptr), NAA_SUCCESS);
}

// Pacing is a timer of the driver: naa_invoke posts the data writes only and returns; the wait
// posts the final write once the guard has passed, not before, and not a sleep slice later
// (the driver's sleeps last 100 ms at least without a timer to end them).
void pacing_timer_posts_the_final_write_when_due(void **) {
  for (Progress::Mode mode : {Progress::Mode::Block, Progress::Mode::Thread}) {
    Handle h;
    h.peer->libnaa_server = false;
    const auto guard = scaled(20ms);
    const auto opened = Clock::now();
    h.open(mode, guard);
    assert_int_equal(h.session->invoke(), NAA_SUCCESS);
    const auto invoked = Clock::now();
    assert_true(invoked - opened < guard);  // else the guard passed before this test could look
    assert_true(h.session->wait(nullptr) == NAA_SUCCESS);
    const Clock::time_point final_at{Clock::duration(h.peer->final_posted_at.load())};
    const Clock::time_point data_at{Clock::duration(h.peer->data_posted_at.load())};
    print_message(
        "final write %ld us after the data writes\n",
        static_cast<long>(
            std::chrono::duration_cast<std::chrono::microseconds>(final_at - data_at).count()));
    if (mode != Progress::Mode::Thread) assert_true(data_at <= invoked);  // the engine posts later
    assert_true(final_at - opened >= guard);
    assert_true(final_at - invoked < scaled(90ms));
  }
}

// NAA_PROGRESS=thread: the engine's thread and two application threads drive the same
// handles at once (naa_invoke hands over, naa_waitany and naa_testany take back and give
// back); every invocation is ended exactly once.
void thread_mode_two_threads_drive_the_same_sessions(void **) {
  constexpr int kRounds = 3000;
  std::vector<Handle> h(2);
  naa::session::Sessions sessions;
  for (Handle &x : h) {
    x.open(Progress::Mode::Thread);
    sessions.push_back(x.session.get());
  }
  std::atomic<int> invoked{0}, ended{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop) {
      int index = -1;
      bool flag = false;
      naa_status st{};
      const InFlight active(sessions);
      if (naa::session::test_any(active.sessions, active.invocations, &index, &flag, &st) ==
              NAA_SUCCESS &&
          flag && index >= 0)
        ended++;
      if (naa::session::wait_any(sessions, &index, &st) == NAA_SUCCESS && index >= 0) ended++;
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    for (auto &s : sessions)
      if (s->invoke() == NAA_SUCCESS) invoked++;
    int index = -1;
    naa_status st{};
    if (naa::session::wait_any(sessions, &index, &st) == NAA_SUCCESS && index >= 0) ended++;
  }
  stop = true;
  other.join();
  for (auto &s : sessions)
    if (s->wait(nullptr) == NAA_SUCCESS) ended++;  // NAA_ERR_STATE when it has ended already
  print_message("%d invocations, %d ended\n", invoked.load(), ended.load());
  assert_true(invoked > kRounds);
  assert_int_equal(ended.load(), invoked.load());
  assert_int_equal(h[0].peer->invocations + h[1].peer->invocations,
                   static_cast<unsigned>(invoked.load()));
}

// Whether `what` becomes true within a deadline far beyond the mechanism's.
template <typename F>
bool eventually(F what) {
  const auto deadline = Clock::now() + scaled(5s);
  while (!what()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::chrono::milliseconds scaled_ms(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(scaled(d));
}

// NAA_PROGRESS=thread: a wait that times out leaves the invocation running, handed back to the
// progress thread, which settles it when the reply comes; a later naa_wait collects that
// settlement, the reply's code included, without polling the endpoint itself.
void thread_mode_wait_after_a_timeout_collects_the_engines_settlement(void **) {
  Handle h;
  h.peer->auto_reply = false;
  h.open(Progress::Mode::Thread, 0us, scaled_ms(50ms));
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  assert_int_equal(h.session->wait(nullptr), NAA_ERR_TIMEOUT);
  assert_true(h.session->in_flight());
  const unsigned before = h.peer->caller_polls;
  h.ep->reply(7);
  assert_true(eventually([&] { return h.session->done(h.session->in_flight()); }));
  naa_status st{};
  assert_int_equal(h.session->wait(&st), NAA_ERR_NAA);
  assert_int_equal(st.naa_return_code, 7);
  assert_int_equal(h.peer->caller_polls - before, 0);
  assert_false(h.session->in_flight());
}

// The second invocation of a handle whose connection closed after the first: naa_invoke
// connects again, and the invocation completes.
void completes_on_a_new_connection(Handle &h) {
  h.peer->auto_reply = true;
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
  assert_int_equal(h.transport->connects, 2);
  assert_int_equal(h.peer->invocations.load(), 2);
}

void cancel_doubles_the_guard_and_reconnects() {
  Handle h;
  h.peer->libnaa_server = false;
  h.peer->auto_reply = false;
  h.pacing_adaptive = true;
  h.open(Progress::Mode::Thread, 1000us, scaled_ms(50ms));
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  assert_int_equal(h.session->wait(nullptr), NAA_ERR_TIMEOUT);
  naa_handle_info_t before{}, after{};
  h.session->describe(&before);
  assert_int_equal(h.session->cancel(), NAA_SUCCESS);
  h.session->describe(&after);
  assert_true(before.pacing_us > 0);
  assert_int_equal(after.pacing_us, 2 * before.pacing_us);
  assert_false(h.session->in_flight());
  bool flag = true;
  assert_int_equal(h.session->test(&flag, nullptr), NAA_ERR_STATE);
  completes_on_a_new_connection(h);
}

// naa_cancel of an invocation the progress thread holds after its wait ran out with the
// request acknowledged and unanswered (doc/protocol.md §4.4): the cancel takes it from the
// engine, doubles the pacing guard of an NAA that may lose requests, and closes the
// connection; the next naa_invoke connects again and completes. The guard doubles at every
// NAA_LOG_LEVEL: the warning that names the new guard is skipped below warn, the doubling not.
void cancel_takes_an_unanswered_invocation_from_the_engine(void **) {
  for (const auto &[name, level] : {std::pair{"error", naa::diag::log::Level::Error},
                                    std::pair{"warn", naa::diag::log::Level::Warn},
                                    std::pair{"info", naa::diag::log::Level::Info},
                                    std::pair{"debug", naa::diag::log::Level::Debug}}) {
    setenv("NAA_LOG_LEVEL", name, 1);
    naa::diag::log::set_default_threshold(
        naa::diag::log::Level::Warn);  // NAA_LOG_LEVEL is read again
    assert_int_equal(static_cast<int>(naa::diag::log::threshold()), static_cast<int>(level));
    cancel_doubles_the_guard_and_reconnects();
  }
  unsetenv("NAA_LOG_LEVEL");
  naa::diag::log::set_default_threshold(naa::diag::log::Level::Warn);
}

// NAA_PROGRESS=thread with NAA_RECONNECT: the connection goes while the progress thread holds
// the invocation; the engine settles it broken, the next call to look reports
// NAA_ERR_CONNECTION, once, and the next naa_invoke connects again and completes.
void thread_mode_reconnects_after_the_engine_lost_the_connection(void **) {
  Handle h;
  h.peer->auto_reply = false;
  h.reconnect = 1;
  h.open(Progress::Mode::Thread);
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  assert_true(eventually([&] { return h.peer->invocations == 1; }));  // the engine posted it
  h.ep->lose();
  assert_true(eventually([&] { return h.session->done(h.session->in_flight()); }));
  assert_true(h.session->in_flight());  // settled, not yet reported
  bool flag = true;
  assert_int_equal(h.session->test(&flag, nullptr), NAA_ERR_CONNECTION);
  assert_false(flag);
  assert_false(h.session->in_flight());
  assert_int_equal(h.session->wait(nullptr), NAA_ERR_STATE);
  completes_on_a_new_connection(h);
}

// A reply polled while our final write-with-immediate still waits for its pacing guard
// answers nothing we asked: a protocol error that ends the connection, never a completion.
void reply_before_the_final_write_is_a_protocol_error(void **) {
  Handle h;
  h.peer->libnaa_server = false;
  const auto guard = scaled(20ms);
  const auto opened = Clock::now();
  h.open(Progress::Mode::Block, guard);
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  h.ep->reply(9);
  assert_true(Clock::now() - opened < guard);  // else the final write may have gone already
  naa_status st{};
  assert_int_equal(h.session->wait(&st), NAA_ERR_PROTOCOL);
  assert_int_equal(h.peer->invocations.load(), 0);  // the final write never went
}

// An NAA that sends one reply too many, between two invocations: the next naa_invoke finds
// it and fails with NAA_ERR_PROTOCOL, instead of the extra reply completing that invocation
// early with the previous output.
void extra_reply_is_a_protocol_error(void **) {
  Handle h;
  h.peer->libnaa_server = false;
  h.open(Progress::Mode::Block);
  assert_int_equal(h.session->invoke(), NAA_SUCCESS);
  assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
  h.peer->auto_reply = false;
  h.ep->reply(0);  // the extra one
  assert_int_equal(h.session->invoke(), NAA_ERR_PROTOCOL);
  assert_int_equal(h.session->wait(nullptr), NAA_ERR_PROTOCOL);  // failed, not completed
  assert_int_equal(h.peer->invocations.load(), 1);
}

// To a naa-server, which answers each request once, a back-to-back naa_invoke posts without
// polling first; after a pause of a millisecond it polls (and looks at the connection), as it
// does before every invocation to an NAA that does not name itself. Back to back is this
// thread's premise, not the machine's promise: a try in which more than the pause passed
// between the wait's start and the invocation's end (a stalled thread) is tried again.
void invoke_polls_first_only_after_a_pause_or_to_other_naas(void **) {
  for (const bool libnaa_server : {true, false}) {
    Handle h;
    h.peer->libnaa_server = libnaa_server;
    h.open(Progress::Mode::Block);
    int tries = 0;
    for (bool back_to_back = false; !back_to_back; ++tries) {
      assert_true(tries < 100);
      assert_int_equal(h.session->invoke(), NAA_SUCCESS);
      const auto waited = Clock::now();  // before the completion the Session stamps
      assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
      const unsigned before = h.peer->polls.load();
      assert_int_equal(h.session->invoke(), NAA_SUCCESS);
      back_to_back = Clock::now() - waited < 1ms;
      if (back_to_back) assert_int_equal(h.peer->polls.load() - before, libnaa_server ? 0u : 1u);
      assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
    }
    if (tries > 1) print_message("back to back at try %d\n", tries);
    std::this_thread::sleep_for(2ms);
    const unsigned before = h.peer->polls.load();
    assert_int_equal(h.session->invoke(), NAA_SUCCESS);
    assert_int_equal(h.peer->polls.load() - before, 1u);
    assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
  }
}

// Back-to-back invocations of a long kernel on an NAA that is not naa-server, adaptive pacing
// on: the final write of each goes well within the kernel's time after naa_invoke (under a
// quarter: on a loaded machine the exchange's round trip, and so the guard, takes tens of ms).
// The guard follows the memory-region exchange at connect, not the invocations' round trips,
// which hold the kernel's time (a guard of half of those made a 2 s kernel cost 3 s). The final
// write's post is what pacing delays; when the reply is polled after it is the wait plan's
// business.
void pacing_guard_leaves_out_the_kernel(void **) {
  Handle h;
  h.peer->libnaa_server = false;
  const auto kernel = scaled(200ms);
  h.peer->kernel = kernel;
  h.peer->descriptor = false;  // the waits poll, which delivers the reply when due
  h.pacing_adaptive = true;
  h.open(Progress::Mode::Block, 100us);
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    assert_int_equal(h.session->invoke(), NAA_SUCCESS);
    assert_int_equal(h.session->wait(nullptr), NAA_SUCCESS);
    const auto paced = Clock::duration(h.peer->final_posted_at.load()) - t0.time_since_epoch();
    printf("invocation %d of a %lld ms kernel: final write %lld us after naa_invoke\n", i,
           static_cast<long long>(
               std::chrono::duration_cast<std::chrono::milliseconds>(kernel).count()),
           static_cast<long long>(
               std::chrono::duration_cast<std::chrono::microseconds>(paced).count()));
    assert_true(paced < kernel / 4);
  }
}

// The memory-region exchange's round trip, which bounds the adaptive guard, counts from before
// the request was posted: a poster held after its post while the NAA answered (here inside the
// fake's post_send) measures the whole exchange, and the guard holds it. Stamped after the
// post, the exchange measured next to nothing and the guard fell to its floor, short of an NAA
// that re-arms only after handling its advertisement's completion (conformance-naa
// --event-loop).
void pacing_guard_holds_an_exchange_whose_poster_was_held(void **) {
  Handle h;
  h.peer->libnaa_server = false;
  const auto stall = scaled(20ms);
  h.peer->send_stall = stall;
  h.pacing_adaptive = true;
  h.port = 2;  // not doubled by the cancel cases
  h.open(Progress::Mode::Block, 100us);
  naa_handle_info_t info{};
  h.session->describe(&info);
  printf(
      "poster held %lld us after the MRSP request's post: guard %lld us\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(stall).count()),
      static_cast<long long>(info.pacing_us));
  assert_true(info.pacing_us >=
              std::chrono::duration_cast<std::chrono::microseconds>(stall).count());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wait_completes_invocations),
      cmocka_unit_test(block_sleeps_on_the_descriptor),
      cmocka_unit_test(waitany_sleeps_on_every_descriptor),
      cmocka_unit_test(waitany_over_many_handles_loses_no_wake_up),
      cmocka_unit_test(waitany_finds_a_handle_another_thread_took),
      cmocka_unit_test(waitany_sees_a_handle_invoked_again_between_calls),
      cmocka_unit_test(waitany_sees_a_handle_replaced_at_the_same_address),
      cmocka_unit_test(waitany_sees_handles_another_thread_used_between_calls),
      cmocka_unit_test(pacing_timer_posts_the_final_write_when_due),
      cmocka_unit_test(thread_mode_two_threads_drive_the_same_sessions),
      cmocka_unit_test(thread_mode_wait_after_a_timeout_collects_the_engines_settlement),
      cmocka_unit_test(cancel_takes_an_unanswered_invocation_from_the_engine),
      cmocka_unit_test(thread_mode_reconnects_after_the_engine_lost_the_connection),
      cmocka_unit_test(reply_before_the_final_write_is_a_protocol_error),
      cmocka_unit_test(extra_reply_is_a_protocol_error),
      cmocka_unit_test(invoke_polls_first_only_after_a_pause_or_to_other_naas),
      cmocka_unit_test(pacing_guard_leaves_out_the_kernel),
      cmocka_unit_test(pacing_guard_holds_an_exchange_whose_poster_was_held),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
