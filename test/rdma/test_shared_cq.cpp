// SPDX-License-Identifier: BSD-3-Clause
// The verbs Context's shared completion queues (lib/transport/verbs/verbs_shared_cq.hpp), over
// real Soft-RoCE in rdma-vm (test/rdma/suite.sh): clients on host A's device connect to a
// listener on host B's, in this one process.
// - many queue pairs, one CQ: 40 connections leave this process with at most two CQs per device
//   (iproute2's `rdma resource show cq`), and every immediate reaches its own endpoint;
// - an endpoint asleep in wait() is woken when another thread, polling its own endpoint, takes
//   the sleeper's completion off the shared CQ;
// - an endpoint asleep in wait() is woken when nobody else polls: the Context's thread watches
//   the completion channel;
// - while another endpoint is busy and polled, an armed one's completions come through those
//   polls, and the Context's thread does not wake for every completion; once the polls stop, the
//   armed endpoint's completion still makes its descriptor readable.
// Skipped (77) outside rdma-vm.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <dirent.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../integration/linked_transports.hpp"
#include "../integration/request_within.hpp"
#include "transport/transport.hpp"

using naa::Deadline;
using namespace naa::transport;

namespace {

constexpr size_t kConnections = 40;  // more than one CQ of Soft-RoCE's 32767 entries holds

std::string host_a, host_b;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(60));
}

// A connection from host A to host B, and what each side registered: the server's endpoint has
// a receive posted for the client's write-with-immediate into `target`.
struct Link {
  std::unique_ptr<Endpoint> client, server;
  std::vector<uint8_t> data = std::vector<uint8_t>(8, 7), target = std::vector<uint8_t>(8, 0);
  std::unique_ptr<MemoryRegion> data_mr, target_mr, slot_mr;
  std::unique_ptr<WriteChain> chain;

  void write(uint32_t imm) { client->post_writes(*chain, imm); }
};

std::unique_ptr<Link> link(Listener &listener) {
  auto l = std::make_unique<Link>();
  std::thread t([&] {
    l->client = open_transport("verbs")->connect(host_b, listener.port(), host_a, soon());
  });
  l->server = request_within(listener, soon());
  assert_non_null(l->server.get());
  l->target_mr = l->server->register_memory(l->target.data(), l->target.size(), true);
  l->slot_mr = l->server->register_memory(nullptr, 0, true);
  l->server->post_recv(nullptr, 0, *l->slot_mr, 1);
  l->server->accept(soon());
  t.join();
  assert_non_null(l->client.get());
  l->data_mr = l->client->register_memory(l->data.data(), l->data.size(), false);
  l->chain = l->client->prepare_writes(
      {{l->data_mr.get(), 0, l->data.size(), l->target_mr->remote_addr, l->target_mr->rkey}}, 2);
  return l;
}

// The RemoteImm of a server endpoint, waited for in wait(); 0 when none came by `deadline`.
uint32_t immediate_of(Endpoint &ep, Deadline deadline) {
  for (;;) {
    Completion c[4];
    size_t n = ep.wait(c, 4, deadline);
    if (n == 0) return 0;
    for (size_t i = 0; i < n; ++i)
      if (c[i].kind == CompletionKind::RemoteImm) return c[i].imm;
  }
}

// How many CQs of user contexts (`ctxn`: not the kernel's own) the devices have: this process
// is the only user of RDMA in the guest. (The listing names the process of only some of them.)
int user_cqs() {
  FILE *p = popen("rdma resource show cq", "r");
  assert_non_null(p);
  int count = 0;
  char line[512];
  while (fgets(line, sizeof line, p) != nullptr) {
    fputs(line, stderr);
    if (std::string(line).find(" ctxn ") != std::string::npos) ++count;
  }
  pclose(p);
  return count;
}

void test_queue_pairs_share_a_cq(void **) {
  auto listener = open_transport("verbs")->listen(host_b, 0);
  std::vector<std::unique_ptr<Link>> links;
  for (size_t i = 0; i < kConnections; ++i) links.push_back(link(*listener));
  const int cqs = user_cqs();
  fprintf(stderr, "%zu connections, both sides in this process: %d CQs\n", kConnections, cqs);
  assert_true(cqs >= 2);  // the count sees ours: one device each side at least
  assert_true(cqs <= 4);  // a CQ per queue pair would be 80
  for (size_t i = 0; i < kConnections; ++i) links[i]->write(100 + static_cast<uint32_t>(i));
  // Polled in reverse order: the completions of the others are taken off the CQ on the way.
  for (size_t i = kConnections; i-- > 0;) {
    assert_int_equal(immediate_of(*links[i]->server, soon()), 100 + i);
    assert_int_equal(links[i]->target[7], 7);
  }
}

// The sleeper's wait ends at its deadline at the latest, and then finds the completion with a
// last poll: a sleeper nobody woke takes the whole of it.
constexpr auto kSleeperDeadline = std::chrono::seconds(20);

// Writes to `sleeper` while a thread sleeps in its server's wait(); how long that took to end.
std::chrono::milliseconds wake_after_write(Link &sleeper, uint32_t imm) {
  std::atomic<uint32_t> got{0};
  std::thread sleep(
      [&] { got = immediate_of(*sleeper.server, Deadline::after(kSleeperDeadline)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // asleep by now, even under TCG
  const auto t0 = std::chrono::steady_clock::now();
  sleeper.write(imm);
  sleep.join();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  fprintf(stderr, "woken %lld ms after the write\n", static_cast<long long>(took.count()));
  assert_int_equal(got.load(), imm);
  return took;
}

void test_a_sleeper_is_woken_by_another_poller(void **) {
  auto listener = open_transport("verbs")->listen(host_b, 0);
  auto sleeper = link(*listener);
  auto spinner = link(*listener);
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    Completion c[4];
    while (!stop.load()) spinner->server->poll(c, 4);  // takes the sleeper's off the CQ too
  });
  const auto took = wake_after_write(*sleeper, 7);
  stop = true;
  spin.join();
  assert_true(took < kSleeperDeadline / 2);
}

void test_a_sleeper_is_woken_with_nobody_polling(void **) {
  auto listener = open_transport("verbs")->listen(host_b, 0);
  auto sleeper = link(*listener);
  assert_true(wake_after_write(*sleeper, 9) < kSleeperDeadline / 2);
}

std::string first_line(const std::string &path) {
  char line[64] = "";
  if (FILE *f = fopen(path.c_str(), "r")) {
    if (fgets(line, sizeof line, f) == nullptr) line[0] = '\0';
    fclose(f);
  }
  return line;
}

// How often this process's naa-verbs-cq threads have slept so far (voluntary context switches).
long cq_thread_switches() {
  long total = 0;
  DIR *tasks = opendir("/proc/self/task");
  assert_non_null(tasks);
  while (dirent *t = readdir(tasks)) {
    const std::string dir = std::string("/proc/self/task/") + t->d_name;
    if (first_line(dir + "/comm") != "naa-verbs-cq\n") continue;
    FILE *status = fopen((dir + "/status").c_str(), "r");
    if (status == nullptr) continue;
    char line[256];
    while (fgets(line, sizeof line, status) != nullptr)
      if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0) total += atol(line + 24);
    fclose(status);
  }
  closedir(tasks);
  return total;
}

// One invocation's worth on `l`: the client's write-with-immediate, the server's endpoint
// polled (not waited for) until it is there, its receive posted again.
void polled_round(Link &l, uint32_t imm) {
  l.write(imm);
  for (bool seen = false; !seen;) {
    Completion c[4];
    const size_t n = l.server->poll(c, 4);
    for (size_t i = 0; i < n; ++i) seen = seen || c[i].kind == CompletionKind::RemoteImm;
  }
  l.server->post_recv(nullptr, 0, *l.slot_mr, 1);
  for (bool done = false; !done;) {
    Completion c[4];
    const size_t n = l.client->poll(c, 4);
    for (size_t i = 0; i < n; ++i) done = done || c[i].kind == CompletionKind::Writes;
  }
}

// While one endpoint stays armed, another is busy and polled: its completions do not each wake
// the Context's thread (its polls hand the armed one its completions), and once nobody polls any
// more, the armed one's completion still makes its descriptor readable.
void test_a_polled_endpoint_spares_the_thread(void **) {
  constexpr int kRounds = 1000;
  auto listener = open_transport("verbs")->listen(host_b, 0);
  auto armed = link(*listener);
  auto busy = link(*listener);
  assert_true(armed->server->arm_wait());
  polled_round(*busy, 1);  // the thread runs by now; the first event may have woken it
  const long before = cq_thread_switches();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) polled_round(*busy, 2 + static_cast<uint32_t>(i));
  const long switches = cq_thread_switches() - before;
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  fprintf(stderr, "%d polled round trips in %lld ms: the Context's thread slept %ld times\n",
          kRounds, static_cast<long long>(took.count()), switches);
  // Once per completion would be kRounds; the recheck sleeps 1 ms at least. (Where a round
  // takes more than 1 ms, as on a loaded host, this cannot tell the two apart.)
  assert_true(switches <= took.count() + 20);
  // Nobody polls now. The armed endpoint was not armed again: its descriptor must still tell.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  armed->write(5);
  pollfd p = {armed->server->wait_fd(), POLLIN, 0};
  assert_int_equal(::poll(&p, 1, 10000), 1);
  assert_int_equal(immediate_of(*armed->server, soon()), 5);
}

}  // namespace

int main() {
  naa::test::use_linked_verbs();
  const char *a = getenv("RDMA_VM_IP_A");
  const char *b = getenv("RDMA_VM_IP_B");
  if (getenv("RDMA_VM") == nullptr || a == nullptr || b == nullptr) {
    fprintf(stderr, "SKIP: needs two Soft-RoCE hosts of rdma-vm (test/rdma/suite.sh)\n");
    return 77;
  }
  host_a = a;
  host_b = b;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queue_pairs_share_a_cq),
      cmocka_unit_test(test_a_sleeper_is_woken_by_another_poller),
      cmocka_unit_test(test_a_sleeper_is_woken_with_nobody_polling),
      cmocka_unit_test(test_a_polled_endpoint_spares_the_thread),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
