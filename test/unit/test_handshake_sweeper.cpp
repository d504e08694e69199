// SPDX-License-Identifier: BSD-3-Clause
// naa-server's HandshakeSweeper (tools/naa-server/handshake_sweeper.cpp) on real loopback TCP
// sockets of this process, a listener of its own standing in for libfabric's:
// - while every connection on the port is a served client's, a sweep reads no descriptor
//   links (the kernel's socket diagnostics list the port's sockets): an idle server with 1000
//   clients spent 60-185 ms a sweep reading ~9000 links before;
// - a connection that sends nothing and is not served is shut down after the timeout, with
//   the sockets listed by the kernel and by /proc alike, and the served ones are left alone;
// - sweeps after one that found nothing waiting list no sockets while no connection came
//   (PassiveOpens of /proc/net/snmp, per network namespace: the cases run in a namespace of
//   their own where the process may make one, so that no other process's connections count);
// - a sweeper that found nothing waiting asks for no look until something stirs it.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../tools/naa-server/handshake_sweeper.hpp"

using naa::server::HandshakeSweeper;
using namespace std::chrono_literals;

namespace {

bool own_network = false;  // the process runs in a network namespace of its own

// A new network namespace with its loopback up (root, or CAP_SYS_ADMIN): false where not.
bool enter_own_network() {
  if (unshare(CLONE_NEWNET) != 0) return false;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq lo{};
  std::strncpy(lo.ifr_name, "lo", sizeof lo.ifr_name - 1);
  bool up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &lo) == 0;
  lo.ifr_flags |= IFF_UP;
  up = up && ioctl(s, SIOCSIFFLAGS, &lo) == 0;
  if (s >= 0) close(s);
  return up;
}

struct Port {
  int listener = -1;
  uint16_t port = 0;
  std::vector<int> fds;  // clients' and accepted sockets, closed at the end
  ~Port() {
    for (int fd : fds) close(fd);
    if (listener >= 0) close(listener);
  }
};

void listen_on_loopback(Port *p) {
  p->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(p->listener >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(p->listener, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  assert_int_equal(listen(p->listener, 16), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(p->listener, reinterpret_cast<sockaddr *>(&a), &len), 0);
  p->port = ntohs(a.sin_port);
}

// A client connected to the port and the server's end of it: {client fd, "ip:port" of the
// client as the server's Endpoint::peer() spells it}.
std::pair<int, std::string> connect_one(Port *p) {
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(p->port);
  assert_int_equal(connect(c, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  sockaddr_in from{};
  socklen_t len = sizeof from;
  int s = accept4(p->listener, reinterpret_cast<sockaddr *>(&from), &len, SOCK_CLOEXEC);
  assert_true(s >= 0);
  p->fds.push_back(c);
  p->fds.push_back(s);
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
  return {c, std::string(ip) + ":" + std::to_string(ntohs(from.sin_port))};
}

// Whether the server's end of the client `c` was shut down (the client reads the end).
bool ended(int c) {
  pollfd p{c, POLLIN, 0};
  char byte;
  return poll(&p, 1, 0) == 1 && recv(c, &byte, 1, MSG_DONTWAIT) == 0;
}

// Sweeps whenever due, for `how_long`, as naa-server's accept loop does between two waits;
// each pass stirs it as a listener that a connection woke would: these sockets wake none.
void sweep_for(HandshakeSweeper &sweeper, const std::set<std::string> &served,
               std::chrono::milliseconds how_long) {
  const auto end = HandshakeSweeper::Clock::now() + how_long;
  while (HandshakeSweeper::Clock::now() < end) {
    sweeper.stir(HandshakeSweeper::Clock::now());
    if (sweeper.due(HandshakeSweeper::Clock::now())) sweeper.sweep(served);
    std::this_thread::sleep_for(5ms);
  }
}

// A port with 3 served clients, and its sweeper (a sweep every 50 ms), which lists the port's
// sockets from the kernel: the case is skipped where the kernel cannot.
struct ServedPort {
  Port p;
  std::unique_ptr<HandshakeSweeper> sweeper;
  std::set<std::string> served;
};

void serve_three(ServedPort *s) {
  listen_on_loopback(&s->p);
  s->sweeper = std::make_unique<HandshakeSweeper>(s->p.port, 200ms);
  if (!s->sweeper->lists_from_kernel()) {
    fprintf(stderr, "  skipped: this kernel gives no socket diagnostics for TCP (tcp_diag)\n");
    skip();
  }
  for (int i = 0; i < 3; ++i) s->served.insert(connect_one(&s->p).second);
}

void test_served_connections_read_no_links(void **) {
  ServedPort s;
  serve_three(&s);
  HandshakeSweeper &sweeper = *s.sweeper;
  const std::set<std::string> &served = s.served;
  sweep_for(sweeper, served, 400ms);
  fprintf(stderr,
          "  8 sweeps' time, 3 served clients: %lu sweeps listed the port (the last %zu sockets), "
          "%lu read the descriptors\n",
          sweeper.listings(), sweeper.last_listing(), sweeper.descriptor_scans());
  // A sweep ran and its listing held the listener and the 3 accepted sockets: no scan because
  // the kernel listed nothing (a filter that rejects every socket) would pass the last check.
  assert_true(sweeper.listings() >= 1);
  assert_int_equal(sweeper.last_listing(), 4);
  assert_int_equal(sweeper.descriptor_scans(), 0);
}

// A kernel answer that does not come in time (a slow dump under load, a signal) costs that
// sweep its listing only: it reads /proc/net/tcp once, and the later sweeps ask the kernel
// again, which answers although the lost dump was still unread in the socket. Before, any
// failed receive switched the sweeps to /proc/net/tcp for good.
void test_a_lost_answer_costs_one_listing(void **) {
  ServedPort s;
  serve_three(&s);
  HandshakeSweeper &sweeper = *s.sweeper;
  const std::set<std::string> &served = s.served;
  sweeper.lose_next_answer();
  sweep_for(sweeper, served, 100ms);
  fprintf(stderr, "  an answer lost: %lu sweeps read the descriptors, the kernel %s\n",
          sweeper.descriptor_scans(), sweeper.lists_from_kernel() ? "still asked" : "given up");
  assert_int_equal(sweeper.descriptor_scans(), 1);  // the sweep without a listing
  assert_true(sweeper.lists_from_kernel());
  const int silent = connect_one(&s.p).first;  // a new connection: the next sweep lists again
  sweep_for(sweeper, served, 400ms);
  fprintf(stderr, "  then a silent connection: the last listing %zu sockets, %s\n",
          sweeper.last_listing(), ended(silent) ? "shut down" : "not shut down");
  assert_true(sweeper.lists_from_kernel());
  assert_int_equal(sweeper.last_listing(),
                   5);  // from the kernel: listener, 3 served, the silent one
  assert_true(ended(silent));
}

void test_quiet_sweeps_list_nothing(void **) {
  if (!own_network) {
    fprintf(stderr,
            "  skipped: no network namespace of its own (needs root or CAP_SYS_ADMIN), and "
            "other processes' connections would count\n");
    skip();
  }
  Port p;
  listen_on_loopback(&p);
  HandshakeSweeper sweeper(p.port, 200ms);  // a sweep every 50 ms
  std::set<std::string> served;
  for (int i = 0; i < 3; ++i) served.insert(connect_one(&p).second);
  sweep_for(sweeper, served, 400ms);
  const unsigned long quiet = sweeper.listings();
  served.insert(connect_one(&p).second);
  sweep_for(sweeper, served, 200ms);
  fprintf(stderr,
          "  8 sweeps' time, 3 served clients: %lu listings; a fourth client, 4 sweeps' "
          "time: %lu more\n",
          quiet, sweeper.listings() - quiet);
  assert_int_equal(quiet, 1);
  assert_int_equal(sweeper.listings() - quiet, 1);
}

// A sweeper that found nothing waiting asks for no look (naa-server's listening thread then
// sleeps until a request or the stop, instead of waking twice a second) until it is stirred;
// then it looks again and a silent connection goes as before.
void test_quiet_until_stirred(void **) {
  ServedPort s;
  serve_three(&s);
  HandshakeSweeper &sweeper = *s.sweeper;
  assert_true(sweeper.next_due() ==
              HandshakeSweeper::Clock::time_point::max());  // nothing came yet
  sweeper.stir(HandshakeSweeper::Clock::now());
  std::this_thread::sleep_for(60ms);  // past the first sweep's time
  assert_true(sweeper.due(HandshakeSweeper::Clock::now()));
  sweeper.sweep(s.served);  // all 3 served
  assert_true(sweeper.next_due() == HandshakeSweeper::Clock::time_point::max());
  const int silent = connect_one(&s.p).first;
  std::this_thread::sleep_for(300ms);  // past the timeout: no look was due meanwhile
  assert_false(sweeper.due(HandshakeSweeper::Clock::now()));
  const auto stirred = HandshakeSweeper::Clock::now();
  sweeper.stir(stirred);
  assert_true(sweeper.next_due() <= stirred + 50ms);  // a look period: a quarter of the timeout
  // Sweeping until it is shut down, 3 s at most: the sweeps of a loaded machine come late.
  for (int i = 0; i < 60 && !ended(silent); ++i) sweep_for(sweeper, s.served, 50ms);
  fprintf(stderr,
          "  quiet, then stirred: %lu listings (the last %zu sockets), %lu read the descriptors\n",
          sweeper.listings(), sweeper.last_listing(), sweeper.descriptor_scans());
  assert_true(ended(silent));
}

void silent_connection_is_shut_down(HandshakeSweeper::Listing listing) {
  Port p;
  listen_on_loopback(&p);
  HandshakeSweeper sweeper(p.port, 200ms, listing);
  std::set<std::string> served;
  std::vector<int> clients;
  for (int i = 0; i < 2; ++i) {
    auto [c, name] = connect_one(&p);
    clients.push_back(c);
    served.insert(name);
  }
  const int silent = connect_one(&p).first;
  const auto connected = HandshakeSweeper::Clock::now();
  sweep_for(sweeper, served, 100ms);
  // Younger than the timeout: kept. (A loaded machine may have held this thread past the
  // timeout meanwhile; then there is nothing to see here.)
  if (HandshakeSweeper::Clock::now() - connected < 200ms) assert_false(ended(silent));
  // Shut down once past it, whenever a loaded machine lets the sweeps run (5 s at most).
  for (auto until = HandshakeSweeper::Clock::now() + 5s;
       !ended(silent) && HandshakeSweeper::Clock::now() < until;)
    sweep_for(sweeper, served, 50ms);
  assert_true(ended(silent));
  for (int c : clients) assert_false(ended(c));
  assert_true(sweeper.descriptor_scans() > 0);
}

void test_silent_connection_shut_down_listed_by_kernel(void **) {
  silent_connection_is_shut_down(HandshakeSweeper::Listing::Kernel);
}

void test_silent_connection_shut_down_listed_by_proc(void **) {
  silent_connection_is_shut_down(HandshakeSweeper::Listing::Proc);
}

}  // namespace

int main() {
  own_network = enter_own_network();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_served_connections_read_no_links),
      cmocka_unit_test(test_a_lost_answer_costs_one_listing),
      cmocka_unit_test(test_quiet_sweeps_list_nothing),
      cmocka_unit_test(test_quiet_until_stirred),
      cmocka_unit_test(test_silent_connection_shut_down_listed_by_kernel),
      cmocka_unit_test(test_silent_connection_shut_down_listed_by_proc),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
