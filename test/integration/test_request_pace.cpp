// SPDX-License-Identifier: BSD-3-Clause
// A listener polls for its next connection request while one is due (request_pace.hpp), over
// real libfabric tcp and shm on loopback, the listener in a process of its own:
// - the rule (naa::ArrivalPoll): a poll only after arrivals close together, none for a
//   listener that saw no request or whose requests come seldom, back after a few quick ones
//   (an idle server's listener: idle_server.sh);
// - a series of requests close together: the listener is held while a series of requests
//   gathers in its queue, then takes them one after another, and finds some of them while the
//   next was due. The series is made, not waited for: connections made one after another from
//   one thread come too far apart on a loaded machine (milliseconds: each waits for the
//   listener's accept);
// - between requests the ofi+shm listener sleeps on its bell, which the client of the next
//   request rings (shm/bell.hpp).
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
#include "server.h"
}

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "wait_plan.hpp"
#include "linked_transports.hpp"
#include "request_within.hpp"
#include "transport/ofi/ofi.hpp"
#include "transport/ofi/shm/bell.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/shm_name.hpp"
#include "transport/transport.hpp"

using naa::Deadline;
using namespace naa::transport;
using namespace naa::transport::ofi;
using std::chrono::microseconds;

namespace {

constexpr int kConnections = 24;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

// Both sides keep their shm endpoints, as naa-server and libnaa do by default, one per
// connection of a series: a fresh one costs milliseconds, more than the gap of a series.
TransportOptions keeping() {
  TransportOptions options;
  options.idle_endpoints = kConnections;
  return options;
}

// One rule for a single waiter's estimate and for the one naa-server's connection threads
// share (a new connection's first message, tools/naa-server/connection.cpp).
template <class Poll>
void check_arrival_rule() {
  Poll poll;
  assert_int_equal(poll.due().count(), 0);  // seen nothing: no poll
  poll.observe(std::chrono::hours(1));      // a pause
  assert_int_equal(poll.due().count(), 0);
  for (int i = 0; i < 3; ++i) poll.observe(microseconds(150));  // a program's handles
  assert_true(poll.due() > microseconds(0));
  for (int i = 0; i < 12; ++i) poll.observe(microseconds(150));
  assert_true(poll.due() == microseconds(300));
  assert_true(poll.due(microseconds(500)) == microseconds(500));  // the spin at least
  poll.observe(std::chrono::seconds(2));                          // seldom again
  assert_int_equal(poll.due().count(), 0);
}

void test_arrivals_close_together_are_polled_for(void **) {
  check_arrival_rule<naa::ArrivalPoll>();
  check_arrival_rule<naa::SharedArrivalPoll>();
}

// What a series of requests was like: how many came within kPollableGap of the one before,
// and at how many of them the rule (naa::ArrivalPoll, as RequestPace applies it) called for a
// poll, from their arrival times alone. The second is the premise of the check: a listener
// preempted often enough (a loaded machine) sees gaps long enough to keep the rule from ever
// polling, however many of the other gaps are short.
struct Series {
  unsigned long close = 0;
  unsigned long due = 0;
};

// Takes kConnections requests one after another (describing them in `series`, unless null),
// then accepts them, then polls each connection until its client's goodbye.
bool serve_at_once(Listener &listener, Series *series) {
  std::vector<std::unique_ptr<Endpoint>> eps;
  naa::ArrivalPoll rule;
  auto last = Deadline::Clock::time_point{};
  auto poll_until = Deadline::Clock::time_point{};
  for (int i = 0; i < kConnections; ++i) {
    eps.push_back(request_within(listener, soon()));
    if (!eps.back()) return false;
    const auto now = Deadline::Clock::now();
    if (series && i > 0) {
      series->close += now - last <= naa::ArrivalPoll::kPollableGap;
      series->due += now < poll_until;
      rule.observe(now - last);
    }
    last = now;
    poll_until = now + rule.due();
  }
  for (auto &ep : eps) ep->accept(soon());
  for (auto &ep : eps) {
    try {
      Completion c[4];
      for (Deadline d = soon(); !d.expired(); std::this_thread::yield()) ep->poll(c, 4);
    } catch (const std::exception &) {  // the client's goodbye
    }
  }
  return true;
}

// The listener's process (this program run with --listen TRANSPORT): it prints its port and
// serves kConnections clients at once, each accepted as its request comes (both sides keep the
// endpoints afterwards, so that a kept client endpoint's next request goes straight into the
// listener's queue). Then it says "ready" and is held until the line "go": meanwhile the
// clients' next kConnections requests wait in its queue. It takes them one after another, as
// a listener finds the requests of a program creating handles in a series, accepts them, and
// prints the counts of that series and what the series was like (Series). A process of its own, as
// naa-server is: a client in the listener's process does not keep its shm endpoint.
int listen_in_turn(const char *name) {
  auto listener = open_transport(name, keeping())->listen("127.0.0.1", 0);
  std::printf("%u\n", static_cast<unsigned>(listener->port()));
  std::fflush(stdout);
  if (!serve_at_once(*listener, nullptr)) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  char line[16] = {};
  if (!std::fgets(line, sizeof line, stdin) || std::strcmp(line, "go\n") != 0) return 1;
  const ListenerCounts before = listener->counts();
  Series series;
  if (!serve_at_once(*listener, &series)) return 1;
  const ListenerCounts after = listener->counts();
  std::printf("%lu %lu %lu %lu\n", after.requests - before.requests, after.polled - before.polled,
              series.close, series.due);
  return 0;
}

// The listener's process of the bell check (this program run with --listen-once TRANSPORT): it
// prints its port, takes one request, prints how many it returned and how many of its sleeps a
// ring ended, then serves the connection until its client's goodbye.
int listen_once(const char *name) {
  auto listener = open_transport(name, keeping())->listen("127.0.0.1", 0);
  std::printf("%u\n", static_cast<unsigned>(listener->port()));
  std::fflush(stdout);
  std::unique_ptr<Endpoint> ep = request_within(*listener, soon());
  if (!ep) return 1;
  const ListenerCounts counts = listener->counts();
  std::printf("%lu %lu\n", counts.requests, counts.rung);
  std::fflush(stdout);
  ep->accept(soon());
  try {
    Completion c[4];
    for (Deadline d = soon(); !d.expired(); std::this_thread::yield()) ep->poll(c, 4);
  } catch (const std::exception &) {  // the client's goodbye
  }
  return 0;
}

// This program run with `mode` and `name` in a process of its own, its standard input and
// output piped to the test, as naa-server is a process of its own: a client in the
// listener's process does not keep its shm endpoint.
struct ListenerProcess {
  pid_t pid = -1;
  int in = -1;          // its standard input
  FILE *out = nullptr;  // its standard output
  unsigned port = 0;    // the first line it printed

  ListenerProcess(const char *mode, const char *name) {
    char *const argv[] = {const_cast<char *>("test_request_pace"), const_cast<char *>(mode),
                          const_cast<char *>(name), nullptr};
    pid = test_spawn_self(argv, &in, &out);
    assert_true(pid > 0);
    assert_int_equal(std::fscanf(out, "%u", &port), 1);
  }
  // Whether it exited with 0.
  bool ended_well() {
    int status = 0;
    const bool waited = waitpid(pid, &status, 0) == pid;
    fclose(out);
    close(in);
    return waited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
};

// kConnections connections to the listener at `port` at once, each from a thread and a transport
// of its own (as handles created on threads of a program) and ended as soon as it is made;
// `meanwhile` runs once every thread has begun its connection. Returns how many failed.
using Transports = std::vector<std::unique_ptr<Transport>>;
int connect_at_once(const Transports &transports, unsigned port,
                    const std::function<void()> &meanwhile) {
  std::atomic<int> failed{0}, begun{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kConnections; ++i)
    clients.emplace_back([&, i] {
      ++begun;
      try {
        transports[i]->connect("127.0.0.1", static_cast<uint16_t>(port), "", soon()).reset();
      } catch (const std::exception &e) {
        std::fprintf(stderr, "  connection %d failed: %s\n", i, e.what());
        ++failed;
      }
    });
  while (begun < kConnections) std::this_thread::yield();
  meanwhile();
  for (auto &t : clients) t.join();
  return failed;
}

// The listener, held, gets kConnections requests at once from kept client endpoints whose
// names it has taken (so each goes straight into its queue); released, it takes them one after
// another, and the next is due for most of them: it finds some while polling. The premise is
// checked from the arrival times: a request not yet in the queue when the listener was released
// (a client thread that did not get a CPU for the whole grace below) comes later, and a
// listener preempted between two requests (beside busy loops) sees a long gap, after which the
// rule polls again only from the fourth close one on. Where the rule called for a poll at fewer
// than four of the requests, the check is skipped and says why.
void check_polled(const char *name) {
  ListenerProcess listener("--listen", name);
  FILE *out = listener.out;
  const unsigned port = listener.port;
  Transports transports;  // kept through both rounds: the endpoints they keep are their context's
  for (int i = 0; i < kConnections; ++i) transports.push_back(open_transport(name, keeping()));
  assert_int_equal(connect_at_once(transports, port, [] {}), 0);
  char ready[16] = {};
  assert_int_equal(std::fscanf(out, "%15s", ready), 1);
  assert_string_equal(ready, "ready");
  ssize_t told = 0;  // "go" once the requests had a while to gather in the held queue
  const int failed = connect_at_once(transports, port, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200) * test_time_scale());
    told = write(listener.in, "go\n", 3);
  });
  assert_int_equal(told, 3);
  assert_int_equal(failed, 0);
  ListenerCounts counts;
  Series series;
  const int read = std::fscanf(out, "%lu %lu %lu %lu", &counts.requests, &counts.polled,
                               &series.close, &series.due);
  assert_true(listener.ended_well());
  assert_int_equal(read, 4);
  std::fprintf(stderr,
               "  %s: %lu requests in the series, %lu of them within %ld us of the one before, "
               "the rule's poll due at %lu by their arrival times, %lu found while polling\n",
               name, counts.requests, series.close,
               static_cast<long>(naa::ArrivalPoll::kPollableGap.count()), series.due,
               counts.polled);
  assert_int_equal(counts.requests, kConnections);
  if (series.due < 4) {
    std::fprintf(stderr,
                 "  skipped: the requests came too far apart for the rule to call for a poll\n");
    skip();
  }
  assert_true(counts.polled >= 1);
}

void test_tcp_requests_in_turn_are_polled_for(void **) {
  check_polled("ofi+tcp");
}

void test_shm_requests_in_turn_are_polled_for(void **) {
  if (!ofi_provider_available("shm")) skip();
  check_polled("ofi+shm");
}

// The ofi+shm listener, asleep on its bell (raised: seen through a rope to its page), is woken by
// the ring of a client's request: without the ring it would find the request only at its look
// every kUnrungLook (2 s), and no sleep would have ended by a ring.
void test_shm_listener_asleep_is_rung(void **) {
  if (!ofi_provider_available("shm")) skip();
  ListenerProcess listener("--listen-once", "ofi+shm");
  const std::string object =
      shm::listener_bell_object(shm::kListenerAddressPrefix + shm_service(listener.port));
  for (Deadline d = soon();; std::this_thread::sleep_for(std::chrono::milliseconds(1))) {
    shm::BellRope rope(object);
    if (rope.rings() && !rope.peer_awake()) break;
    assert_false(d.expired());
  }
  open_transport("ofi+shm", keeping())
      ->connect("127.0.0.1", static_cast<uint16_t>(listener.port), "", soon())
      .reset();
  ListenerCounts counts;
  const int read = std::fscanf(listener.out, "%lu %lu", &counts.requests, &counts.rung);
  assert_true(listener.ended_well());
  assert_int_equal(read, 2);
  std::fprintf(stderr, "  %lu request, %lu sleep(s) ended by a ring\n", counts.requests,
               counts.rung);
  assert_int_equal(counts.requests, 1);
  assert_true(counts.rung >= 1);
}

}  // namespace

int main(int argc, char **argv) {
  naa::test::use_linked_ofi();
  if (argc == 3 && std::strcmp(argv[1], "--listen") == 0) return listen_in_turn(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "--listen-once") == 0) return listen_once(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arrivals_close_together_are_polled_for),
      cmocka_unit_test(test_tcp_requests_in_turn_are_polled_for),
      cmocka_unit_test(test_shm_requests_in_turn_are_polled_for),
      cmocka_unit_test(test_shm_listener_asleep_is_rung),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
