// SPDX-License-Identifier: BSD-3-Clause
// The transport layer's process-wide parts over real ofi+tcp (and shm, where said) on loopback,
// without naa-server:
// - TransportOptions: a handle's settings (naa_attr_t.params) reach an endpoint built on
//   another thread than the one that resolved them (the thread-local scope they replaced did
//   not: such an endpoint saw the environment's values). The endpoint's log line tells where
//   it splits its writes (a peer cannot see it: tcp reports no length with remote CQ data);
// - the Context's registration cache: live endpoints share a buffer's registration, and it is
//   dropped with its last user;
// - the Context's queue stock: a closed endpoint's EQ and CQ go to the next endpoint, drained
//   (none of the closed one's completions reaches the new one);
// - the listener's poll for a connection's request after its socket: made after a wake-up
//   that brought no request, and not again after one that found none;
// - a begun accept (naa-server's listening thread, before the hand-over), over tcp and shm: the
//   client is connected, with the server's data, while nothing reads the server's endpoint any
//   more;
// - the CQ's descriptor over tcp is filled only for sleeps: a message that comes while the
//   endpoint spins does not make it readable; after arm_wait(), and while it sleeps for each
//   completion, one does.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "session/settings.hpp"
#include "linked_transports.hpp"
#include "request_within.hpp"
#include "transport/ofi/ofi.hpp"
#include "transport/ofi/ofi_cq_wait.hpp"
#include "transport/transport.hpp"

using naa::Deadline;
using namespace naa::transport;
using namespace naa::transport::ofi;

namespace {

constexpr size_t kSize = 65536;
constexpr size_t kChunk = 4096;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(30));
}

struct Target {
  uint64_t addr;
  uint32_t rkey;
};

// A client endpoint built, connected and used on its own thread with `options`: it writes
// kSize bytes to the server's buffer in one segment, ending with an immediate.
void client(TransportOptions options, uint16_t port, std::future<Target> target,
            std::future<void> done) {
  auto transport = open_transport("ofi+tcp", options);
  auto ep = transport->connect("127.0.0.1", port, "", soon());
  std::vector<uint8_t> data(kSize, 7);
  auto mr = ep->register_memory(data.data(), data.size(), false);
  Target t = target.get();
  auto chain = ep->prepare_writes({{mr.get(), 0, kSize, t.addr, t.rkey}}, 1);
  ep->post_writes(*chain, 42);
  Completion c[4];
  while (ep->wait(c, 4, soon()) == 0) {
  }
  done.wait();  // the endpoint stays until the server has the immediate
}

// One exchange with a client that uses `options`; the lines logged meanwhile.
std::string log_of_exchange_with(const TransportOptions &options) {
  char path[] = "/tmp/naa-test-log-XXXXXX";
  int log_fd = mkstemp(path);
  assert_true(log_fd >= 0);
  unlink(path);
  int saved = dup(2);
  dup2(log_fd, 2);
  auto transport = open_transport("ofi+tcp");
  auto listener = transport->listen("127.0.0.1", 0);
  std::promise<Target> target;
  std::promise<void> done;
  std::thread peer(client, options, listener->port(), target.get_future(), done.get_future());
  auto ep = request_within(*listener, soon());
  assert_non_null(ep.get());
  std::vector<uint8_t> buf(kSize), slot(64);
  auto mr = ep->register_memory(buf.data(), buf.size(), true);
  auto slot_mr = ep->register_memory(slot.data(), slot.size(), true);
  if (ep->immediate_consumes_recv()) ep->post_recv(slot.data(), slot.size(), *slot_mr, 9);
  ep->accept(soon());
  target.set_value({mr->remote_addr, mr->rkey});
  for (bool seen = false; !seen;) {
    Completion c[4];
    size_t n = ep->wait(c, 4, soon());
    assert_true(n > 0);
    for (size_t i = 0; i < n; ++i) seen = seen || c[i].kind == CompletionKind::RemoteImm;
  }
  done.set_value();
  peer.join();
  assert_int_equal(buf[0], 7);
  assert_int_equal(buf[kSize - 1], 7);
  dup2(saved, 2);
  close(saved);
  std::string text(1 << 16, '\0');
  ssize_t n = pread(log_fd, text.data(), text.size(), 0);
  close(log_fd);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  fputs(text.c_str(), stderr);
  return text;
}

bool split_at_chunk(const std::string &log) {
  return log.find("split at " + std::to_string(kChunk) + " bytes") != std::string::npos;
}

void test_options_reach_another_thread(void **) {
  const char *const params[] = {"NAA_OFI_WRITE_CHUNK=4096", nullptr};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.params = params;
  const naa::session::Settings settings = naa::session::Settings::resolve(&attr);
  assert_true(split_at_chunk(log_of_exchange_with(settings.transport_options())));
  // Without the parameter the writes go unsplit: the check above can tell the two apart.
  assert_false(split_at_chunk(
      log_of_exchange_with(naa::session::Settings::resolve(nullptr).transport_options())));
}

void test_live_endpoints_share_registrations(void **) {
  auto transport = open_transport("ofi+tcp");
  auto listener = transport->listen("127.0.0.1", 0);
  std::vector<uint8_t> buf(kSize);
  // Two requests the server never accepts: enough to register memory on.
  std::vector<std::unique_ptr<Endpoint>> eps(2);
  for (auto &ep : eps) {
    std::thread t([&] {
      try {
        open_transport("ofi+tcp")->connect("127.0.0.1", listener->port(), "",
                                           Deadline::after(std::chrono::milliseconds(300)));
      } catch (const std::exception &) {  // the request times out, as it should
      }
    });
    ep = request_within(*listener, soon());
    assert_non_null(ep.get());
    t.join();
  }
  auto a = eps[0]->register_memory(buf.data(), buf.size(), true);
  auto b = eps[1]->register_memory(buf.data(), buf.size(), true);
  assert_int_equal(a->rkey, b->rkey);  // one registration
  auto other = eps[1]->register_memory(buf.data(), buf.size(), false);
  assert_int_not_equal(other->rkey, a->rkey);  // other access: its own
  a.reset();
  auto c = eps[1]->register_memory(buf.data(), buf.size(), true);
  assert_int_equal(c->rkey, b->rkey);  // still live through b
  b.reset();
  c.reset();
  auto d = eps[0]->register_memory(buf.data(), buf.size(), true);
  assert_int_not_equal(d->rkey, other->rkey);
  assert_true(d->rkey > other->rkey);  // registered anew once its last user let go
}

// A connected pair over `listener`: the client's endpoint built on another thread.
std::pair<std::unique_ptr<Endpoint>, std::unique_ptr<Endpoint>> connected_pair(Listener &listener) {
  std::unique_ptr<Endpoint> client;
  std::thread t([&] {
    client = open_transport("ofi+tcp")->connect("127.0.0.1", listener.port(), "", soon());
  });
  auto server = request_within(listener, soon());
  assert_non_null(server.get());
  server->accept(soon());
  t.join();
  return {std::move(client), std::move(server)};
}

void test_queues_go_to_the_next_endpoint(void **) {
  auto transport = open_transport("ofi+tcp");
  auto listener = transport->listen("127.0.0.1", 0);
  std::vector<uint8_t> buf(64, 1), other(64, 2);
  auto [client, server] = connected_pair(*listener);
  auto mr = client->register_memory(buf.data(), buf.size(), false);
  client->post_recv(buf.data(), buf.size(), *mr, 66);  // never completed: flushed at close
  const int first_fd = client->wait_fd();
  assert_true(first_fd >= 0);
  mr.reset();
  client.reset();  // its queues are kept
  server.reset();  // the stock has a pair already: closed
  // The descriptors that closing freed are taken, so that new queues would get new numbers.
  std::vector<int> holes;
  for (int i = 0; i < 16; ++i) holes.push_back(dup(0));
  auto [again, peer] = connected_pair(*listener);
  assert_int_equal(again->wait_fd(), first_fd);  // the kept CQ (still open: no hole took it)
  auto recv_mr = again->register_memory(buf.data(), buf.size(), false);
  auto send_mr = peer->register_memory(other.data(), other.size(), false);
  again->post_recv(buf.data(), buf.size(), *recv_mr, 77);
  peer->post_send(other.data(), 8, *send_mr, 88);
  Completion c[4];
  size_t n = 0;
  while (n == 0) n = again->wait(c, 4, soon());
  assert_int_equal(static_cast<int>(c[0].kind), static_cast<int>(CompletionKind::Recv));
  assert_int_equal(c[0].context, 77);  // not the closed endpoint's receive
  assert_int_equal(buf[0], 2);
  for (int fd : holes) close(fd);
}

// Whether `fd` becomes readable within `ms` milliseconds.
bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// The next completion of `ep`, polled for (never armed meanwhile).
Completion polled(Endpoint &ep) {
  Completion c[4];
  for (Deadline d = soon(); !d.expired();)
    if (ep.poll(c, 4) > 0) return c[0];
  fail_msg("no completion");
  return c[0];
}

// libfabric's tcp would run epoll's wake-up for every segment that comes while its socket sits
// in the CQ's wait set, also for a thread that polls (ofi_cq_wait.hpp): the socket is in our
// set from arm_wait() on, stays while the endpoint sleeps for each completion, and leaves when
// it spins (a completion found after more than kSpinPolls empty polls).
void test_only_an_armed_endpoint_wakes(void **) {
  auto transport = open_transport("ofi+tcp");
  auto listener = transport->listen("127.0.0.1", 0);
  auto [client, server] = connected_pair(*listener);
  std::vector<uint8_t> in(64), out(64, 5);
  auto in_mr = client->register_memory(in.data(), in.size(), false);
  auto out_mr = server->register_memory(out.data(), out.size(), false);
  for (uint64_t k = 1; k <= 4; ++k) client->post_recv(in.data() + 8 * k, 8, *in_mr, k);
  auto send = [&](uint64_t context) {
    server->post_send(out.data(), 8, *out_mr, context);
    polled(*server);  // its completion: the message is out
  };
  // The first arming after the connection may ask for one more poll (the socket is listed
  // from the CQ's next read on).
  for (Deadline d = soon(); !client->arm_wait();) {
    Completion c[4];
    assert_int_equal(client->poll(c, 4), 0);
    assert_false(d.expired());
  }
  send(11);
  assert_true(readable(client->wait_fd(), 10000));  // armed: woken
  assert_int_equal(polled(*client).context, 1);
  send(12);
  assert_true(readable(client->wait_fd(), 10000));  // a sleeper stays armed
  assert_int_equal(polled(*client).context, 2);
  Completion none[4];
  for (int i = 0; i <= naa::transport::ofi::OfiCqWait::kSpinPolls; ++i)
    assert_int_equal(client->poll(none, 4), 0);  // a spin
  send(13);
  assert_int_equal(polled(*client).context, 3);  // ends it: out of the set
  send(14);
  // Delivered over loopback long before this, and not readable: nothing woke.
  assert_false(readable(client->wait_fd(), 100));
  assert_int_equal(polled(*client).context, 4);
  assert_int_equal(in[32], 5);
}

// How long this thread has been running or waiting to run (/proc/thread-self/schedstat: time
// on a CPU, time on a run queue). A thread that polls and yields is runnable throughout, however
// little CPU a loaded host gives it (its time on a CPU may be a small share of the poll); a
// sleeping one is not.
// This thread's time on a CPU and waiting for one (/proc/thread-self/schedstat).
struct ThreadTimes {
  std::chrono::nanoseconds on_cpu, runnable;
};

ThreadTimes thread_times() {
  unsigned long long on_cpu = 0, waiting = 0;
  if (FILE *f = fopen("/proc/thread-self/schedstat", "r")) {
    if (fscanf(f, "%llu %llu", &on_cpu, &waiting) != 2) on_cpu = waiting = 0;
    fclose(f);
  }
  return {std::chrono::nanoseconds(on_cpu), std::chrono::nanoseconds(on_cpu + waiting)};
}

// A raw TCP connection to `port` that never sends its connection request, made 20 ms from
// now (the listener is asleep by then: a connection already there when it looks is accepted
// inside fi_trywait, before it sleeps).
std::future<int> silent_connection(uint16_t port) {
  return std::async(std::launch::async, [port] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    return connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) == 0 ? fd : -1;
  });
}

// How long the listener is on a CPU and runnable (on it or waiting for it) in 0.4 s of waiting
// for requests (none comes), in ms.
struct ListeningTime {
  long on_cpu, runnable;
};

ListeningTime listening_time(Listener &listener) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const ThreadTimes before = thread_times();
  for (int i = 0; i < 8; ++i)
    assert_null(listener.next_request(Deadline::after(milliseconds(50))).get());
  const ThreadTimes after = thread_times();
  return {static_cast<long>(duration_cast<milliseconds>(after.on_cpu - before.on_cpu).count()),
          static_cast<long>(duration_cast<milliseconds>(after.runnable - before.runnable).count())};
}

// libfabric's tcp accepts a connection's socket in one read of the listener's EQ and reads
// its request in a later one. After a wake-up that brought a socket and no request, the
// listener polls for the request while it is due (here the whole setup spin of 0.3 s: the
// thread is runnable throughout); after a poll that found none, the next such socket finds it
// asleep, so that a flood of connections that send nothing costs no CPU.
void test_listener_polls_for_a_request_once(void **) {
  TransportOptions options;
  options.setup_spin = std::chrono::milliseconds(300);
  auto transport = open_transport("ofi+tcp", options);
  auto listener = transport->listen("127.0.0.1", 0);
  auto first = silent_connection(listener->port());
  const auto polled = listening_time(*listener);
  auto second = silent_connection(listener->port());
  const auto slept = listening_time(*listener);
  const int first_fd = first.get(), second_fd = second.get();
  assert_true(first_fd >= 0 && second_fd >= 0);
  std::fprintf(stderr,
               "  listener in 0.4 s after a silent connection: runnable %ld ms; after a second: "
               "on a CPU %ld ms\n",
               polled.runnable, slept.on_cpu);
  // Polling: runnable throughout, on a CPU or waiting for one (a busy machine only moves time
  // from one to the other). Asleep: next to no CPU time; waiting for a CPU after each of its
  // wake-ups, which a busy machine lengthens, does not count.
  assert_true(polled.runnable >= 30);
  assert_true(slept.on_cpu < 30);
  close(first_fd);
  close(second_fd);
}

// Over tcp the begun accept sends libfabric's connection response, over shm our accept message
// (while the client polls for it, as libnaa's does while it is due: it takes the server
// endpoint's name meanwhile, without which shm cannot send it).
void begun_accept_connects_the_client(const char *transport) {
  TransportOptions polling;
  polling.setup_spin = std::chrono::seconds(1);
  auto server_transport = open_transport(transport),
       client_transport = open_transport(transport, polling);
  auto listener = server_transport->listen("127.0.0.1", 0);
  std::promise<std::string> connected;
  auto client_data = connected.get_future();
  std::unique_ptr<Endpoint> client;
  std::thread t([&] {
    try {
      client = client_transport->connect("127.0.0.1", listener->port(), "",
                                         Deadline::after(std::chrono::seconds(3)));
      connected.set_value(client->peer_data());
    } catch (const std::exception &e) {
      connected.set_value(std::string("failed: ") + e.what());
    }
  });
  auto server = request_within(*listener, soon());
  assert_non_null(server.get());
  assert_true(server->can_begin_accept());
  // Over shm one try lasts kPostSpin; a client slowed by a loaded machine may take the
  // server's name later, so it is begun again until the client is through (a no-op once begun).
  do server->begin_accept("begun");
  while (client_data.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready);
  const std::string data = client_data.get();  // the server's endpoint otherwise untouched
  t.join();
  std::fprintf(stderr, "  %s client after a begun accept: \"%s\"\n", transport, data.c_str());
  assert_string_equal(data.c_str(), "begun");
  server->accept(soon());  // connected already: returns
  // The client goes first and the server's end sees it go, as in naa-server: over shm both
  // ends in one process share the provider's map of the peers' regions.
  client.reset();
  try {
    Completion c[4];
    for (Deadline d = soon(); !d.expired();) server->wait(c, 4, d);
  } catch (const std::exception &) {  // the client's goodbye
  }
}

void test_a_begun_accept_connects_the_client(void **) {
  begun_accept_connects_the_client("ofi+tcp");
}

void test_a_begun_shm_accept_connects_the_client(void **) {
  if (!ofi_provider_available("shm")) skip();
  begun_accept_connects_the_client("ofi+shm");
}

}  // namespace

int main() {
  naa::test::use_linked_ofi();
  setenv("NAA_LOG_LEVEL", "info", 1);  // the endpoint says where it splits its writes
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_reach_another_thread),
      cmocka_unit_test(test_live_endpoints_share_registrations),
      cmocka_unit_test(test_queues_go_to_the_next_endpoint),
      cmocka_unit_test(test_only_an_armed_endpoint_wakes),
      cmocka_unit_test(test_listener_polls_for_a_request_once),
      cmocka_unit_test(test_a_begun_accept_connects_the_client),
      cmocka_unit_test(test_a_begun_shm_accept_connects_the_client),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
