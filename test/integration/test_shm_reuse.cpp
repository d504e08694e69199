// SPDX-License-Identifier: BSD-3-Clause
// ofi+shm endpoints outlive a connection (lib/transport/ofi/ofi_endpoint_reuse.cpp), over real
// libfabric shm:
// - handles created and finalized in a loop against naa-server take idle endpoints on both
//   sides instead of opening new ones (libfabric zero-fills 16 MiB per new one): the /dev/shm
//   objects either process ever had stay few, and every vecadd is right;
// - (client and listener in this process, on the transport interface) a message the old
//   client sent that no receive took (it waits in shm's queue of unexpected
//   messages) never reaches the next connection's receive on the reused server endpoint;
// - a kept endpoint keeps its bell for its next connection, a client's and naa-server's, its
//   last peer's entry, and its rope to that peer's bell while the peer's page is the same; a
//   client's its listener's entry while the object behind the listener's name is the same,
//   and its last peer's pidfd for a next peer in the same process;
// - a request naming the same client region again is believed without reading the client's
//   memory map again, while the object behind the name stays the same.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
#include "naa.h"
#include "server.h"
}

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "end_connection.hpp"
#include "linked_transports.hpp"
#include "transport/ofi/ofi.hpp"
#include "transport/ofi/shm/bell.hpp"
#include "transport/ofi/shm/request.hpp"
#include "transport/transport.hpp"

using naa::Deadline;
using namespace naa::transport;
using namespace naa::transport::ofi;
using naa::test::end_connection;

namespace {

constexpr size_t kMsg = 64;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

TransportOptions keeping(size_t idle) {
  TransportOptions o;
  o.idle_endpoints = idle;
  return o;
}

struct Side {
  std::vector<uint8_t> buf = std::vector<uint8_t>(kMsg);
  std::unique_ptr<MemoryRegion> mr;
};

// The server's end of one connection: accepted, with a receive posted when `receive`.
std::unique_ptr<Endpoint> serve(Listener &listener, Side &side, bool receive) {
  auto ep = listener.next_request(soon());
  assert_non_null(ep.get());
  side.mr = ep->register_memory(side.buf.data(), side.buf.size(), true);
  if (receive) ep->post_recv(side.buf.data(), side.buf.size(), *side.mr, 7);
  ep->accept(soon());
  return ep;
}

// Sends `text` from the client and waits for the send's completion (on a thread of its own:
// shm's first send to a peer waits until the peer, here the server's end in this process, has
// taken the sender's name).
void send_text(Endpoint &ep, Side &side, const std::string &text) {
  std::memset(side.buf.data(), 0, side.buf.size());
  std::memcpy(side.buf.data(), text.data(), text.size());
  ep.post_send(side.buf.data(), text.size() + 1, *side.mr, 1);
  for (bool sent = false; !sent;) {
    Completion c[4];
    size_t n = ep.wait(c, 4, soon());
    assert_true(n > 0);
    for (size_t i = 0; i < n; ++i) sent = sent || c[i].kind == CompletionKind::Send;
  }
}

// The client sends `text`; the server's end, progressing meanwhile, returns the text of its
// first receive (with `receive`), or nothing once the send has completed.
std::string exchange(Endpoint &client, Side &client_side, Endpoint &server, Side &server_side,
                     const std::string &text, bool receive) {
  auto sent = std::async(std::launch::async, [&] { send_text(client, client_side, text); });
  std::string got;
  for (bool done = false; !done;) {
    Completion c[4];
    size_t n = server.poll(c, 4);
    for (size_t i = 0; i < n; ++i)
      if (c[i].kind == CompletionKind::Recv) {
        got = reinterpret_cast<const char *>(server_side.buf.data());
        done = true;
      }
    if (!receive && sent.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready)
      done = true;
  }
  while (sent.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    Completion c[4];
    server.poll(c, 4);  // the send may still wait for the server to take the client's name
  }
  sent.get();
  return got;
}

// The distinct /dev/shm objects of process `pid` seen so far (its endpoints' regions).
void note_regions(pid_t pid, std::set<std::string> *seen) {
  const std::string prefix = std::to_string(pid) + "-";
  if (DIR *d = opendir("/dev/shm")) {
    while (dirent *e = readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) seen->insert(e->d_name);
    closedir(d);
  }
}

// naa_create, a vecadd checked element by element, naa_finalize, in a loop against naa-server
// at its defaults: both sides' endpoints are reused, so the regions either process ever had
// stay few (one per connection without reuse). Every handle after the first takes the client
// endpoint the last one parked, also when naa-server's goodbye overtook the client's own
// (ofi_endpoint_reuse.cpp): a slow client, as under a sanitizer, meets that in about one
// connection of four. (This process's libnaa.so has counters of its own: the test counts the
// regions. A client that did not park then made 4-8 under TSan.)
void test_loop_reuses_endpoints(void **) {
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  test_server_use(&server, 10, 2);  // naa-server's vecadd
  setenv("NAA_TRANSPORT", "ofi+shm", 1);
  constexpr int kRounds = 12;
  constexpr size_t kN = 256;
  std::vector<double> a(kN), b(kN), sum(kN);
  std::set<std::string> ours, servers;
  bool right = true;
  for (int round = 0; round < kRounds && right; ++round) {
    for (size_t i = 0; i < kN; ++i) a[i] = round + i, b[i] = 2.0 * i, sum[i] = -1;
    naa_param_t in[2] = {{a.data(), sizeof(double) * kN, false},
                         {b.data(), sizeof(double) * kN, false}};
    naa_param_t out[1] = {{sum.data(), sizeof(double) * kN, false}};
    naa_handle h = NAA_HANDLE_NULL;
    naa_status st;
    right = naa_create(10, in, 2, out, 1, &h) == NAA_SUCCESS && naa_invoke(&h) == NAA_SUCCESS &&
            naa_wait(&h, &st) == NAA_SUCCESS && st.naa_return_code == 0;
    note_regions(getpid(), &ours);
    note_regions(server.pid, &servers);
    right = naa_finalize(&h) == NAA_SUCCESS && right;
    for (size_t i = 0; i < kN && right; ++i) right = sum[i] == a[i] + b[i];
    // The kept endpoint serves the next handle once naa-server's goodbye is in; it waits 2 ms
    // for it, less than a server under a sanitizer on a loaded host may take: this counts
    // reuse, not how fast the goodbye is.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  unsetenv("NAA_TRANSPORT");
  note_regions(server.pid, &servers);
  fprintf(stderr, "  %d handles over ofi+shm: %zu regions of this process, %zu of naa-server's\n",
          kRounds, ours.size(), servers.size());
  assert_int_equal(test_server_stop(&server), 0);
  assert_true(right);
  // One endpoint each (its region and its bell page); without reuse (NAA_SHM_IDLE_ENDPOINTS=0)
  // 24 objects of each side.
  assert_true(ours.size() <= 2);
  assert_true(servers.size() <= 2);
}

void test_stale_message_not_taken_for_the_next_client(void **) {
  auto server_transport = open_transport("ofi+shm", keeping(2));
  auto client_transport = open_transport("ofi+shm", keeping(2));
  auto listener = server_transport->listen("127.0.0.1", 0);
  const OfiEndpointCounts before = ofi_endpoint_counts();
  {  // The old client: a message the server never posts a receive for, then its goodbye.
    Side server_side, client_side;
    auto connected = std::async(std::launch::async, [&] {
      return client_transport->connect("127.0.0.1", listener->port(), "", soon());
    });
    auto server = serve(*listener, server_side, false);
    auto client = connected.get();
    client_side.mr = client->register_memory(client_side.buf.data(), client_side.buf.size(), false);
    exchange(*client, client_side, *server, server_side, "STALE from the old client", false);
    end_connection(std::move(client), std::move(server));
  }
  Side server_side, client_side;
  auto connected = std::async(std::launch::async, [&] {
    return client_transport->connect("127.0.0.1", listener->port(), "", soon());
  });
  auto server = serve(*listener, server_side, true);
  assert_true(ofi_endpoint_counts().reused > before.reused);  // the old client's server end
  auto client = connected.get();
  client_side.mr = client->register_memory(client_side.buf.data(), client_side.buf.size(), false);
  assert_string_equal(exchange(*client, client_side, *server, server_side, "fresh", true).c_str(),
                      "fresh");
  end_connection(std::move(client), std::move(server));
}

// The bell pages of process `pid`'s endpoints now: each page's name and the inodes it had.
using Bells = std::map<std::string, std::set<ino_t>>;
void note_bells(pid_t pid, Bells *seen) {
  const std::string prefix = std::to_string(pid) + "-";
  if (DIR *d = opendir("/dev/shm")) {
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      struct stat st {};
      if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > 5 &&
          name.compare(name.size() - 5, 5, ".bell") == 0 &&
          stat(("/dev/shm/" + name).c_str(), &st) == 0)
        (*seen)[name].insert(st.st_ino);
    }
    closedir(d);
  }
}

// A client's kept endpoint keeps its bell (page and socket) for its next connection instead
// of making it anew: a bell page is made only for an endpoint opened fresh. Which
// connections find a kept endpoint depends on the old server endpoint's goodbye arriving in
// time (kSettleWait), so the count is against the endpoints opened, over connections one
// after another until three took a kept one.
void test_client_endpoint_keeps_its_bell(void **) {
  auto transport = open_transport("ofi+shm", keeping(2));
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  Bells before, during;
  note_bells(getpid(), &before);
  const OfiEndpointCounts start = ofi_endpoint_counts();
  bool right = true;
  for (int i = 0; i < 12 && right && ofi_endpoint_counts().reused - start.reused < 3; ++i) {
    try {
      auto ep = transport->connect("127.0.0.1", static_cast<uint16_t>(server.port), "", soon());
      note_bells(getpid(), &during);
    } catch (const std::exception &e) {
      fprintf(stderr, "  connection failed: %s\n", e.what());
      right = false;
    }
  }
  assert_int_equal(test_server_stop(&server), 0);
  const unsigned long opened = ofi_endpoint_counts().opened - start.opened;
  const unsigned long reused = ofi_endpoint_counts().reused - start.reused;
  std::set<ino_t> old;
  for (const auto &bell : before) old.insert(bell.second.begin(), bell.second.end());
  size_t fresh = 0;
  for (const auto &bell : during)
    for (ino_t i : bell.second) fresh += old.count(i) == 0;
  fprintf(stderr, "  %lu endpoints opened, %lu kept ones taken: %zu bell pages made\n", opened,
          reused, fresh);
  assert_true(right);
  assert_true(reused >= 1);
  assert_true(fresh <= opened);
}

// naa-server's kept endpoint keeps its bell too: a server endpoint taken again for a next
// connection has the page it had (one inode per endpoint), where it made it anew before (a
// page and a socket, ~30 us). Which connections find the same server endpoint depends on its
// parking before the next request: over 8 connections, some do.
void test_server_endpoint_keeps_its_bell(void **) {
  auto transport = open_transport("ofi+shm", keeping(2));
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  Bells during;
  std::map<std::string, int> looks;  // at each server endpoint (by its bell's name)
  bool right = true, again = false;
  for (int i = 0; i < 8 && right; ++i) {
    try {
      auto ep = transport->connect("127.0.0.1", static_cast<uint16_t>(server.port), "", soon());
      Bells now;
      note_bells(server.pid, &now);
      for (const auto &bell : now) {
        during[bell.first].insert(bell.second.begin(), bell.second.end());
        again = again || ++looks[bell.first] > 1;
      }
    } catch (const std::exception &e) {
      fprintf(stderr, "  connection failed: %s\n", e.what());
      right = false;
    }
  }
  assert_int_equal(test_server_stop(&server), 0);
  size_t made = 0;
  for (const auto &bell : during) made += bell.second.size();
  fprintf(stderr, "  %zu server endpoints seen, %zu bell pages made for them\n", during.size(),
          made);
  assert_true(right);
  assert_true(again);
  assert_int_equal(made, during.size());
}

// Connections of this process's transport to the naa-servers at `ports` in turn, each ended at
// once: whether all were made.
bool connect_rounds(Transport &transport, const std::vector<uint16_t> &ports, int rounds) {
  try {
    for (int i = 0; i < rounds; ++i)
      transport.connect("127.0.0.1", ports[i % ports.size()], "", soon()).reset();
  } catch (const std::exception &e) {
    fprintf(stderr, "  connection failed: %s\n", e.what());
    return false;
  }
  return true;
}

// Warm connections of this process to a fresh naa-server, after two to warm up: up to 32, until
// 4 found what they need kept (the count `kept`); how many `made` and `kept` grew meanwhile.
// Which connections find it depends on naa-server parking its endpoint before the next request
// (under load it may not yet have, and serves with another).
struct WarmRounds {
  bool right;
  unsigned long rounds, made, kept;
};
WarmRounds warm_rounds(unsigned long OfiEndpointCounts::*made,
                       unsigned long OfiEndpointCounts::*kept) {
  auto transport = open_transport("ofi+shm", keeping(2));
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  const std::vector<uint16_t> port{static_cast<uint16_t>(server.port)};
  WarmRounds w{connect_rounds(*transport, port, 2), 0, 0, 0};
  const OfiEndpointCounts before = ofi_endpoint_counts();
  for (; w.right && w.rounds < 32 && w.kept < 4; ++w.rounds) {
    w.right = connect_rounds(*transport, port, 1);
    w.kept = ofi_endpoint_counts().*kept - before.*kept;
  }
  w.made = ofi_endpoint_counts().*made - before.*made;
  assert_int_equal(test_server_stop(&server), 0);
  return w;
}

// Warm rounds in which each connection made `per_round` of `what` or found them kept, at least
// one found kept.
void expect_made_or_kept(const char *what, unsigned long OfiEndpointCounts::*made,
                         unsigned long OfiEndpointCounts::*kept, unsigned long per_round) {
  const WarmRounds w = warm_rounds(made, kept);
  fprintf(stderr, "  %lu warm connections: %lu %s made, %lu found kept\n", w.rounds, w.made, what,
          w.kept);
  assert_true(w.right);
  assert_true(w.kept >= 1);
  assert_int_equal(w.made + w.kept, per_round * w.rounds);
}

// Warm connections to the same naa-server map the server endpoint's region no more: the kept
// endpoint finds the server endpoint of its last connection in its address vector when the
// server gives it the same one, and the listener's. Each entry made maps the peer's 16 MiB
// region: the listener's and the server endpoint's per connection before, none now for a
// connection served by its endpoint's last peer. Each found entry is one the connection did
// not make.
void test_warm_connections_make_no_entries(void **) {
  expect_made_or_kept("address entries", &OfiEndpointCounts::addresses_inserted,
                      &OfiEndpointCounts::addresses_kept, 2);
}

// A kept client endpoint asks the same listener again through the entry it kept (its 16 MiB
// region not mapped anew, ~30 us), while the object behind the listener's name is the same.
void test_warm_connections_keep_the_listener_entry(void **) {
  const WarmRounds w =
      warm_rounds(&OfiEndpointCounts::listeners_dropped, &OfiEndpointCounts::listeners_kept);
  fprintf(stderr, "  %lu warm connections: listener entry dropped %lu times, found kept %lu\n",
          w.rounds, w.made, w.kept);
  assert_true(w.right);
  assert_true(w.kept >= 1);
  assert_int_equal(w.made, 0);
}

// A kept client endpoint whose next server endpoint is in the process of its last one (the
// same naa-server) watches that process with the pidfd it kept: each connection opened one or
// found one.
void test_warm_connections_keep_the_server_pidfd(void **) {
  expect_made_or_kept("pidfds", &OfiEndpointCounts::pidfds_opened, &OfiEndpointCounts::pidfds_kept,
                      1);
}

// A server killed and started anew at the same port has a new object under the listener's
// name. The kept entry reaches the dead server's region, where a request is read by nobody
// (the connection timing out): it is dropped, and the new region mapped, at the first
// connection after the restart; the next ones keep the new entry.
void test_listener_entry_follows_a_server_started_anew(void **) {
  auto transport = open_transport("ofi+shm", keeping(2));
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  const std::vector<uint16_t> port{static_cast<uint16_t>(server.port)};
  const OfiEndpointCounts before = ofi_endpoint_counts();
  bool right = connect_rounds(*transport, port, 3);
  const OfiEndpointCounts killed = ofi_endpoint_counts();
  test_server_kill(&server);  // a server that stops cleanly leaves no region behind
  const std::string number = std::to_string(server.port);
  const char *const same_port[] = {"--port", number.c_str(), nullptr};
  assert_int_equal(test_server_start(&server, same_port), 0);
  right = right && connect_rounds(*transport, port, 3);
  const OfiEndpointCounts after = ofi_endpoint_counts();
  assert_int_equal(test_server_stop(&server), 0);
  fprintf(stderr,
          "  listener entry kept %lu times before the restart; after: dropped %lu, kept %lu\n",
          killed.listeners_kept - before.listeners_kept,
          after.listeners_dropped - killed.listeners_dropped,
          after.listeners_kept - killed.listeners_kept);
  assert_true(right);
  assert_true(killed.listeners_kept > before.listeners_kept);
  assert_int_equal(killed.listeners_dropped, before.listeners_dropped);
  assert_true(after.listeners_dropped > killed.listeners_dropped);
}

// A kept endpoint that meets the same peer endpoint again rings its bell with the rope it kept
// (an shm_open, fstat, mmap and socket less, ~17 us per side): each connection made a rope or
// found one.
void test_warm_connections_keep_their_ropes(void **) {
  expect_made_or_kept("ropes", &OfiEndpointCounts::ropes_made, &OfiEndpointCounts::ropes_kept, 1);
}

// A kept rope serves only the bell page it maps: a peer endpoint that dropped its bell (short of
// descriptors) and made a new page under the same name is rung through a new rope, else it
// would sleep through our posts.
void test_rope_follows_a_bell_made_anew(void **) {
  const std::string name =
      "fi_shm://" + std::to_string(getpid()) + "-feed" + std::to_string(time(nullptr));
  const std::string object = ofi::shm::bell_object(name);
  auto bell = std::make_unique<ofi::shm::Bell>(object);
  assert_true(bell->ok());
  ofi::shm::BellRope rope(object);
  assert_true(rope.rings());
  assert_true(rope.still_for(object));
  assert_false(rope.still_for(ofi::shm::bell_object(name + "0")));
  bell.reset();  // its page unlinked; the rope still maps it, so its inode is not given again
  assert_false(rope.still_for(object));
  ofi::shm::Bell anew(object);
  assert_true(anew.ok());
  assert_false(rope.still_for(object));
  assert_true(ofi::shm::BellRope(object).still_for(object));
}

// A rope rings a bell only while it is raised (its owner about to sleep): a post to a peer that
// is awake costs no datagram. The bell of a listener's name, as naa-server's ofi+shm
// listener has.
void test_rope_rings_only_a_raised_bell(void **) {
  const std::string object =
      ofi::shm::listener_bell_object("fi_ns://naa-test-" + std::to_string(getpid()));
  assert_string_equal(object.c_str(), ("/naa-test-" + std::to_string(getpid()) + ".bell").c_str());
  assert_string_equal(ofi::shm::listener_bell_object("fi_shm://1:2:3").c_str(), "");
  ofi::shm::Bell bell(object);
  assert_true(bell.ok());
  ofi::shm::BellRope rope(object);
  assert_true(rope.rings());
  rope.pull();  // lowered: not rung
  assert_true(rope.peer_awake());
  assert_int_equal(static_cast<int>(bell.sleep(std::chrono::seconds(0), -1)),
                   static_cast<int>(ofi::shm::Bell::Woken::No));
  bell.raise();
  assert_false(rope.peer_awake());
  rope.pull();
  assert_true(rope.peer_awake());  // the pull took the raise: one ring per sleep
  rope.pull();
  assert_int_equal(static_cast<int>(bell.sleep(std::chrono::seconds(0), -1)),
                   static_cast<int>(ofi::shm::Bell::Woken::ByRing));
  assert_int_equal(static_cast<int>(bell.sleep(std::chrono::seconds(0), -1)),
                   static_cast<int>(ofi::shm::Bell::Woken::No));  // the rings were taken
}

// libfabric 1.17's shm sends to a peer put in a slot of the peer map that another peer had
// before under that peer's id (ofi_endpoint_reuse.cpp, kFreshSlots): 300 handles of one
// process, one after another, to one naa-server, all made. Before, the client's kept
// endpoint's slots came round after ~255 handles, and the next naa_create timed out.
void test_slots_never_come_round(void **) {
  test_server server;
  assert_int_equal(test_server_start(&server, nullptr), 0);
  test_server_use(&server, 10, 2);  // naa-server's vecadd
  setenv("NAA_TRANSPORT", "ofi+shm", 1);
  setenv("NAA_CONNECT_TIMEOUT", "3000", 1);
  std::vector<double> a(16), b(16), sum(16);
  naa_param_t in[2] = {{a.data(), sizeof(double) * 16, false},
                       {b.data(), sizeof(double) * 16, false}};
  naa_param_t out[1] = {{sum.data(), sizeof(double) * 16, false}};
  naa_handle held = NAA_HANDLE_NULL;  // keeps the transport open, as naa-bench's setup test does
  assert_int_equal(naa_create(10, in, 2, out, 1, &held), NAA_SUCCESS);
  int made = 0;
  for (bool right = true; made < 300 && right; made += right) {
    naa_handle h = NAA_HANDLE_NULL;
    right = naa_create(10, in, 2, out, 1, &h) == NAA_SUCCESS;
    if (right) right = naa_finalize(&h) == NAA_SUCCESS;
  }
  naa_finalize(&held);
  unsetenv("NAA_TRANSPORT");
  unsetenv("NAA_CONNECT_TIMEOUT");
  fprintf(stderr, "  %d handles of 300 made\n", made);
  assert_int_equal(test_server_stop(&server), 0);
  assert_int_equal(made, 300);
}

// A client that takes a kept endpoint names the same region in each request: naa-server's
// listener reads the process's memory map for it once, not per request, and not again once
// the object behind the name is another (made anew, and not mapped by the process).
void test_request_check_reads_maps_once_per_region(void **) {
  const std::string object =
      "/" + std::to_string(getpid()) + "-c0ffee" + std::to_string(time(nullptr));
  const std::string name = "fi_shm://" + object.substr(1);
  const uint32_t pid = static_cast<uint32_t>(getpid());
  int fd = shm_open(object.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 4096), 0);
  void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  assert_true(page != MAP_FAILED);
  std::string why;
  const unsigned long before = ofi::shm::maps_read();
  for (int i = 0; i < 3; ++i) assert_true(ofi::shm::request_plausible(name, pid, &why));
  assert_int_equal(ofi::shm::maps_read() - before, 1);
  // Made anew under the name (the old object still open, so its inode is not given again),
  // and not mapped: the process's maps are read again, and the request is not believed.
  munmap(page, 4096);
  shm_unlink(object.c_str());
  int again = shm_open(object.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  assert_true(again >= 0);
  assert_int_equal(ftruncate(again, 4096), 0);
  const bool believed = ofi::shm::request_plausible(name, pid, &why);
  shm_unlink(object.c_str());
  ::close(again);
  ::close(fd);
  assert_false(believed);
  assert_int_equal(ofi::shm::maps_read() - before, 2);
}

}  // namespace

int main() {
  naa::test::use_linked_ofi();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_reuses_endpoints),
      cmocka_unit_test(test_stale_message_not_taken_for_the_next_client),
      cmocka_unit_test(test_client_endpoint_keeps_its_bell),
      cmocka_unit_test(test_server_endpoint_keeps_its_bell),
      cmocka_unit_test(test_warm_connections_make_no_entries),
      cmocka_unit_test(test_warm_connections_keep_their_ropes),
      cmocka_unit_test(test_warm_connections_keep_the_listener_entry),
      cmocka_unit_test(test_listener_entry_follows_a_server_started_anew),
      cmocka_unit_test(test_warm_connections_keep_the_server_pidfd),
      cmocka_unit_test(test_rope_follows_a_bell_made_anew),
      cmocka_unit_test(test_rope_rings_only_a_raised_bell),
      cmocka_unit_test(test_slots_never_come_round),
      cmocka_unit_test(test_request_check_reads_maps_once_per_region),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
