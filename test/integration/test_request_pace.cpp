// SPDX-License-Identifier: BSD-3-Clause
// A listener polls for its next connection request while one is due (request_pace.hpp), over
// real libfabric tcp and shm on loopback, the listener in a process of its own:
// - the rule (progress::ArrivalPoll): a poll only after arrivals close together, none for a
//   listener that saw no request or whose requests come seldom, back after a few quick ones
//   (an idle server's listener: idle_server.sh);
// - connections made one after another (as a program creating handles makes them): the
//   listener finds some of their requests while polling instead of after a sleep.
// The counts, not timings, tell: which requests a poll found depends on the machine's load,
// so the test asks for some of them.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "progress/wait_plan.hpp"
#include "linked_transports.hpp"
#include "request_within.hpp"
#include "transport/ofi/ofi.hpp"
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

// Both sides keep their shm endpoints, as naa-server and libnaa do by default: a fresh one
// costs milliseconds.
TransportOptions keeping() {
  TransportOptions options;
  options.idle_endpoints = 2;
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
  check_arrival_rule<naa::progress::ArrivalPoll>();
  check_arrival_rule<naa::progress::SharedArrivalPoll>();
}

// The listener's process (this program run with --listen TRANSPORT): it prints its port, then
// serves kConnections, each accepted and polled until the client's goodbye (as naa-server's
// connection thread does while its client is active), then prints its counts and how many
// requests came within kPollableGap of the one before. A process of its own, as
// naa-server is: a client in the listener's process does not keep its shm endpoint (each
// connection then opened a fresh one: milliseconds apart).
int listen_in_turn(const char *name) {
  auto listener = open_transport(name, keeping())->listen("127.0.0.1", 0);
  std::printf("%u\n", static_cast<unsigned>(listener->port()));
  std::fflush(stdout);
  unsigned long close = 0;
  auto last = Deadline::Clock::time_point{};
  for (int i = 0; i < kConnections; ++i) {
    auto ep = request_within(*listener, soon());
    if (!ep) return 1;
    const auto now = Deadline::Clock::now();
    close += now - last <= naa::progress::ArrivalPoll::kPollableGap;
    last = now;
    ep->accept(soon());
    try {
      Completion c[4];
      for (Deadline d = soon(); !d.expired(); std::this_thread::yield()) ep->poll(c, 4);
    } catch (const std::exception &) {  // the client's goodbye
    }
  }
  const ListenerCounts counts = listener->counts();
  std::printf("%lu %lu %lu\n", counts.requests, counts.polled, close);
  return 0;
}

// kConnections connections to a listener process, made and ended one after another; `close`:
// how many of the requests came close to the one before.
ListenerCounts connections_in_turn(const char *name, unsigned long *close) {
  char self[4096] = {};
  assert_true(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  FILE *child = popen((std::string(self) + " --listen " + name).c_str(), "r");
  assert_non_null(child);
  unsigned port = 0;
  assert_int_equal(std::fscanf(child, "%u", &port), 1);
  auto transport = open_transport(name, keeping());
  int failed = 0;
  for (int i = 0; i < kConnections; ++i) {
    try {
      transport->connect("127.0.0.1", static_cast<uint16_t>(port), "", soon()).reset();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "  connection %d failed: %s\n", i, e.what());
      ++failed;
    }
  }
  ListenerCounts counts;
  const int read = std::fscanf(child, "%lu %lu %lu", &counts.requests, &counts.polled, close);
  assert_int_equal(pclose(child), 0);
  assert_int_equal(read, 3);
  assert_int_equal(failed, 0);
  std::fprintf(
      stderr,
      "  %s: %lu requests, %lu of them within %ld us of the one before, %lu found while polling\n",
      name, counts.requests, *close,
      static_cast<long>(naa::progress::ArrivalPoll::kPollableGap.count()), counts.polled);
  return counts;
}

// Where most requests came close together the listener polled for some. Where they did not
// (a sanitizer's build, a machine too loaded), it had no reason to, and the check is skipped.
void check_polled(const char *name) {
  unsigned long close = 0;
  const ListenerCounts counts = connections_in_turn(name, &close);
  assert_int_equal(counts.requests, kConnections);
  if (close < kConnections / 2) {
    std::fprintf(stderr, "  skipped: the connections came too far apart for a poll\n");
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

}  // namespace

int main(int argc, char **argv) {
  naa::test::use_linked_ofi();
  if (argc == 3 && std::strcmp(argv[1], "--listen") == 0) return listen_in_turn(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arrivals_close_together_are_polled_for),
      cmocka_unit_test(test_tcp_requests_in_turn_are_polled_for),
      cmocka_unit_test(test_shm_requests_in_turn_are_polled_for),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
