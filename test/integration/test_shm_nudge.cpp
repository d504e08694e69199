// SPDX-License-Identifier: BSD-3-Clause
// Over ofi+shm, a side that posted and has heard nothing back since rings its peer's bell on
// every empty read of its own CQ while the peer sleeps, so that a transfer larger than shm's
// inject size, which moves only while both sides make progress where shm cannot copy across
// processes, is not slept through (lib/transport/ofi/ofi_endpoint.hpp, awaiting_peer_). A post
// within the inject size is whole in the peer's queue when its own ring goes: after one, the
// sender rings nobody, since each such ring woke a peer for nothing and put it into a second
// of naps (sleep_on_bell), a runnable thread beside the sender (doc/performance.md).
//
// Client and server ends in this process, real libfabric shm, on the transport interface: the
// client sends one message, the server's end takes it and then waits for a second that never
// comes while the client's end reads its CQ until that wait ends. The waiting thread's
// voluntary context switches tell whether it was rung: no timing is asserted.
//
// The same bell page tells a side whether its peer is awake on its own CPU
// (Endpoint::peer_beside(), for the node's load: progress/busy_node.hpp): each side publishes its
// CPU on every poll that finds nothing and when it goes to sleep. The test's thread, pinned to
// one CPU and then another, polls the server's end and asks the client's, with the server's
// bell down, then raised by arming it.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <sched.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "end_connection.hpp"
#include "linked_transports.hpp"
#include "transport/transport.hpp"

using naa::Deadline;
using namespace naa::transport;

namespace {

// Larger than any provider's inject size (shm's is 4 KiB in libfabric 1.17).
constexpr size_t kLarge = 64 * 1024;
constexpr size_t kSmall = 64;
// The server's wait for the message that never comes.
constexpr auto kWait = std::chrono::milliseconds(500);
// A wait that nobody rings ends at its deadline: a few switches at most (the wait's own
// look for a peer gone among them).
constexpr long kUnrung = 5;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

long switches_of_this_thread() {
  rusage u{};
  assert_int_equal(getrusage(RUSAGE_THREAD, &u), 0);
  return u.ru_nvcsw;
}

struct Side {
  std::vector<uint8_t> buf = std::vector<uint8_t>(kLarge);
  std::unique_ptr<MemoryRegion> mr;
};

// Sends `length` bytes from the client, the server's end taking them; returns once both the
// receive and the send have completed.
void send_to_server(Endpoint &client, Side &client_side, Endpoint &server, Side &server_side,
                    size_t length) {
  server.post_recv(server_side.buf.data(), server_side.buf.size(), *server_side.mr, 7);
  auto sent = std::async(std::launch::async, [&] {
    client.post_send(client_side.buf.data(), length, *client_side.mr, 1);
    for (bool done = false; !done;) {
      Completion c[4];
      const size_t n = client.wait(c, 4, soon());
      assert_true(n > 0);
      for (size_t i = 0; i < n; ++i) done = done || c[i].kind == CompletionKind::Send;
    }
  });
  for (bool received = false; !received;) {
    Completion c[4];
    const size_t n = server.poll(c, 4);
    for (size_t i = 0; i < n; ++i) received = received || c[i].kind == CompletionKind::Recv;
  }
  while (sent.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    Completion c[4];
    server.poll(c, 4);
  }
  sent.get();
}

// A client's end connected to a server's end, each with its buffer registered.
struct Pair {
  std::unique_ptr<Transport> server_transport = open_transport("ofi+shm", TransportOptions{});
  std::unique_ptr<Transport> client_transport = open_transport("ofi+shm", TransportOptions{});
  std::unique_ptr<Listener> listener = server_transport->listen("127.0.0.1", 0);
  Side server_side, client_side;
  std::unique_ptr<Endpoint> server, client;

  Pair() {
    auto connected = std::async(std::launch::async, [&] {
      return client_transport->connect("127.0.0.1", listener->port(), "", soon());
    });
    server = listener->next_request(soon());
    assert_non_null(server.get());
    server_side.mr = server->register_memory(server_side.buf.data(), server_side.buf.size(), true);
    server->accept(soon());
    client = connected.get();
    client_side.mr = client->register_memory(client_side.buf.data(), client_side.buf.size(), false);
  }
  ~Pair() {
    client_side.mr.reset();  // each region before its endpoint
    server_side.mr.reset();
    naa::test::end_connection(std::move(client), std::move(server));
  }
};

// After a message of `length`, the server's end waits kWait for another while the client's end
// reads its CQ; returns the waiting thread's voluntary context switches.
long server_wake_ups_after(size_t length) {
  Pair pair;
  Endpoint &client = *pair.client, &server = *pair.server;
  send_to_server(client, pair.client_side, server, pair.server_side, length);
  server.post_recv(pair.server_side.buf.data(), pair.server_side.buf.size(), *pair.server_side.mr,
                   8);
  auto waited = std::async(std::launch::async, [&] {
    const long before = switches_of_this_thread();
    Completion c[4];
    const size_t n = server.wait(c, 4, Deadline::after(kWait));
    assert_int_equal(n, 0);
    return switches_of_this_thread() - before;
  });
  unsigned long reads = 0;
  while (waited.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    Completion c[4];
    assert_int_equal(client.poll(c, 4), 0);
    ++reads;
  }
  const long woke = waited.get();
  fprintf(stderr,
          "  after a %zu-byte message: the server's end woke %ld times in %lld ms while "
          "the client's end read its CQ %lu times\n",
          length, woke, static_cast<long long>(kWait.count()), reads);
  return woke;
}

void test_small_post_rings_no_sleeper(void **) {
  assert_true(server_wake_ups_after(kSmall) <= kUnrung);
}

// The counterpart: the same wait after a message larger than the inject size is rung again and
// again (and naps after the first ring that brought nothing), so the count above can tell.
void test_large_post_rings_the_sleeper(void **) {
  assert_true(server_wake_ups_after(kLarge) > kUnrung);
}

// Pins the calling thread to `cpu`.
void pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(sched_getcpu(), cpu);
}

// Two CPUs of this thread's affinity, or skips the test.
bool two_cpus(int *first, int *second) {
  cpu_set_t set;
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  *first = *second = -1;
  for (int c = 0; c < CPU_SETSIZE && *second < 0; ++c)
    if (CPU_ISSET(c, &set)) (*first < 0 ? *first : *second) = c;
  return *second >= 0;
}

void test_peer_beside_follows_the_peers_poll_and_sleep(void **) {
  int first = -1, second = -1;
  if (!two_cpus(&first, &second)) {
    fprintf(stderr, "  skipped: needs two CPUs in this thread's affinity\n");
    skip();
  }
  cpu_set_t all;
  assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
  {
    Pair pair;
    Completion c[4];
    for (const int cpu : {first, second}) {
      pin_to(cpu);
      assert_int_equal(pair.server->poll(c, 4), 0);  // publishes `cpu`
      assert_true(pair.client->peer_beside());
      assert_int_equal(pair.client->poll(c, 4), 0);
      assert_true(pair.server->peer_beside());
    }
    pin_to(first);  // the server's end last polled on `second`
    assert_false(pair.client->peer_beside());
    assert_int_equal(pair.server->poll(c, 4), 0);
    assert_true(pair.client->peer_beside());
    assert_true(pair.server->arm_wait());  // its bell raised: asleep, for its peer
    assert_false(pair.client->peer_beside());
    assert_int_equal(pair.server->wait(c, 4, Deadline::after(std::chrono::milliseconds(1))), 0);
    assert_true(pair.client->peer_beside());  // the bell down again after the sleep
  }
  assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
}

}  // namespace

int main() {
  naa::test::use_linked_ofi();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_post_rings_no_sleeper),
      cmocka_unit_test(test_large_post_rings_the_sleeper),
      cmocka_unit_test(test_peer_beside_follows_the_peers_poll_and_sleep),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
