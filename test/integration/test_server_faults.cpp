// SPDX-License-Identifier: BSD-3-Clause
// naa-server against misbehaving clients and kernels: a raw client built on libnaa's transport
// interface puts exactly the bytes under test on the wire, then checks that the server answers
// as the spec says (or drops the client) and keeps serving others. Prints a tally at the end.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <setjmp.h>
extern "C" {
#include <cmocka.h>
#include "server.h"
}

#include "error.hpp"
#include "protocol/immediate.hpp"
#include "protocol/mrsp.hpp"
#include "naa_kernel.h"
#include "raw_client.hpp"
#include "transport/transport.hpp"

using namespace naa;
using naa::test::RawClient;
using Clock = std::chrono::steady_clock;

namespace {

enum { kFnAdd1 = 1, kFnXor = 100, kFnCrash = 101, kFnSpin = 102 };

test_server server;  // -T 1 -K 1 with the test plugin, shared by every case
int malformed_inputs = 0, faults_injected = 0;
double longest_report = 0;  // seconds until a failure was reported, over every case

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void note_report(const char *what, double took) {
  std::fprintf(stderr, "  %s: reported after %.3f s\n", what, took);
  longest_report = std::max(longest_report, took);
}

// Sends a malformed MRSP message and checks that the answer is MRSP error `code`.
void expect_mrsp_error(RawClient &c, const std::vector<uint8_t> &bytes, uint8_t code,
                       const char *what) {
  auto t0 = Clock::now();
  c.send(bytes.data(), bytes.size());
  protocol::mrsp::Message m = c.answer();
  ++malformed_inputs;
  assert_int_equal(static_cast<int>(m.type), static_cast<int>(protocol::mrsp::Type::Error));
  assert_int_equal(m.error_code, code);
  note_report(what, seconds(t0));
}

std::vector<uint8_t> request(uint8_t count,
                             const std::vector<std::pair<uint8_t, uint32_t>> &entries,
                             size_t len = 0) {
  std::vector<uint8_t> m(std::max(
      len, protocol::mrsp::kHeaderSize + entries.size() * protocol::mrsp::kRequestEntrySize));
  m[0] = static_cast<uint8_t>(protocol::mrsp::Type::AdvertiseRequest);
  m[1] = count;
  for (size_t k = 0; k < entries.size(); ++k) {
    uint8_t *p = m.data() + protocol::mrsp::kHeaderSize + k * protocol::mrsp::kRequestEntrySize;
    p[0] = entries[k].first;
    for (int b = 0; b < 4; ++b) p[20 + b] = static_cast<uint8_t>(entries[k].second >> (24 - 8 * b));
  }
  return m;
}

// The server must still serve a well-behaved client: one add1 round trip.
void assert_still_serving(const test_server &s = server) {
  RawClient c(s.port);
  c.setup(64);
  std::fill(c.region_.begin(), c.region_.end(), 41);
  assert_int_equal(c.invoke(protocol::imm::host_request(kFnAdd1), std::chrono::seconds(10)), 0);
  for (uint8_t b : c.region_) assert_int_equal(b, 42);
}

int start(void **) {
  const char *plugin = std::getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == nullptr) {
    std::fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set (run through make check)\n");
    return -1;
  }
  static const char *args[] = {
      "--mrsp-timeout", "1",    "--kernel-timeout", "1", "--client-memory", "1M", "--kernel",
      plugin,           nullptr};
  return test_server_start(&server, args);
}

// The summary of the group, counted where each case ran (not a test of its own).
int stop(void **) {
  std::printf(
      "server faults: %d malformed inputs tried, %d faults injected, longest failure "
      "report %.3f s\n",
      malformed_inputs, faults_injected, longest_report);
  return test_server_stop(&server) == 0 ? 0 : -1;
}

void silent_client_dropped(void **) {
  RawClient c(server.port);
  auto t0 = Clock::now();
  ++malformed_inputs;
  assert_true(c.dropped_within(Deadline::after(std::chrono::seconds(10))));
  double took = seconds(t0);
  note_report("client silent during MRSP dropped (--mrsp-timeout 1)", took);
  assert_true(took >= 0.9);
  assert_still_serving();
}

void malformed_mrsp_matrix(void **) {
  constexpr uint8_t kNoMemory = 0x01, kTooMany = 0x03;
  const uint8_t io = protocol::mrsp::kInput | protocol::mrsp::kOutput;
  struct Case {
    const char *what;
    std::vector<uint8_t> bytes;
    uint8_t code;
  };
  std::vector<uint8_t> garbage(200);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(0x5a ^ (i * 37));
  std::vector<Case> cases = {
      {"garbage bytes instead of MRSP", garbage, kNoMemory},
      {"message shorter than its header", {0x01, 0x01}, kNoMemory},
      {"reserved type 0x03", {0x03, 0x01, 0, 0}, kNoMemory},
      {"an advertisement from the client",
       {0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
       kNoMemory},
      {"an error message from the client", {0x00, 0x01, 0, 0}, kNoMemory},
      {"zero regions", request(0, {}), kNoMemory},
      {"255 regions in a full buffer", request(255, {}, protocol::mrsp::kBufferSize), kTooMany},
      {"32 regions", request(32, {}, protocol::mrsp::kBufferSize), kTooMany},
      {"5 regions announced, 2 sent", request(5, {{io, 8}, {io, 8}}), kNoMemory},
      {"unknown flag bits", request(1, {{0xf0, 8}}), kNoMemory},
      {"INTERNAL with OUTPUT",
       request(1, {{protocol::mrsp::kInternal | protocol::mrsp::kOutput, 8}}), kNoMemory},
      {"only internal regions", request(1, {{protocol::mrsp::kInternal, 8}}), kNoMemory},
      {"a 4 GiB region (absurd size)", request(1, {{io, 0xffffffffu}}), kNoMemory},
      {"31 regions of 4 GiB",
       request(31, std::vector<std::pair<uint8_t, uint32_t>>(31, {io, 0xffffffffu})), kNoMemory},
      {"just above --client-memory", request(2, {{io, 1u << 19}, {io, (1u << 19) + 1}}), kNoMemory},
  };
  for (const Case &k : cases) {
    RawClient c(server.port);
    expect_mrsp_error(c, k.bytes, k.code, k.what);
  }
  assert_still_serving();
}

void invocation_matrix(void **) {
  RawClient c(server.port);
  c.setup(64);
  struct Case {
    const char *what;
    uint32_t v;
    int rc;
    bool fault;  // a misbehaving kernel rather than a malformed input
  } cases[] = {
      {"unknown function code 99", protocol::imm::host_request(99), NAA_KERNEL_RC_UNKNOWN_FUNCTION,
       false},
      {"function code 0 with the marker", 0x80, NAA_KERNEL_RC_UNKNOWN_FUNCTION, false},
      {"no start marker", 0x01, NAA_KERNEL_RC_UNKNOWN_FUNCTION, false},
      {"a crashing plugin kernel", protocol::imm::host_request(kFnCrash), NAA_KERNEL_RC_CRASHED,
       true},
      {"a plugin kernel looping past --kernel-timeout 1", protocol::imm::host_request(kFnSpin),
       NAA_KERNEL_RC_TIMEOUT, true},
  };
  for (const Case &k : cases) {
    auto t0 = Clock::now();
    int rc = c.invoke(k.v, std::chrono::seconds(10));
    ++(k.fault ? faults_injected : malformed_inputs);
    std::fprintf(stderr, "  %s: answered 0x%02x\n", k.what, rc);
    assert_int_equal(rc, k.rc);
    note_report(k.what, seconds(t0));
    // The connection survives each: the plugin's worker is replaced, the kernel runs again.
    std::fill(c.region_.begin(), c.region_.end(), 0x0f);
    assert_int_equal(c.invoke(protocol::imm::host_request(kFnXor), std::chrono::seconds(10)), 0);
    for (uint8_t b : c.region_) assert_int_equal(b, 0xf0);
  }
  // V = 0: the host could not prepare an invocation. No kernel runs and nothing is answered.
  std::fill(c.region_.begin(), c.region_.end(), 7);
  ++malformed_inputs;
  assert_int_equal(c.invoke(0, std::chrono::milliseconds(1000)), -1);
  assert_int_equal(c.invoke(protocol::imm::host_request(kFnAdd1), std::chrono::seconds(10)), 0);
  for (uint8_t b : c.region_) assert_int_equal(b, 8);  // exactly one add1: V = 0 ran nothing
}

// A client killed in the middle of sending its inputs must not disturb the server.
// The doomed client: connects, invokes once, reports on fd `ready` that its invocations are
// under way, then invokes until killed: a kill at any moment after the report lands while one
// of its invocations (1 MiB each way) is in flight or about to be, with no sleep to aim it.
// A fresh process (exec'd, not just forked), because a verbs context belongs to the process
// that opened it: librdmacm's devices, inherited across fork, do not work in the child.
[[noreturn]] void doomed_client(int port, int ready) {
  try {
    RawClient c(port);
    c.setup(1 << 20);  // the whole --client-memory: big enough to be cut mid-transfer
    c.invoke(protocol::imm::host_request(kFnAdd1), std::chrono::seconds(10));
    if (write(ready, "x", 1) != 1) _exit(1);
    for (;;) c.invoke(protocol::imm::host_request(kFnAdd1), std::chrono::seconds(10));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "doomed client: %s\n", e.what());
  }
  _exit(1);
}

void client_killed_mid_transfer(void **) {
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(ready[0]);
    std::string port = std::to_string(server.port), fd = std::to_string(ready[1]);
    execl("/proc/self/exe", "test_server_faults", "--doomed-client", port.c_str(), fd.c_str(),
          static_cast<char *>(nullptr));
    _exit(127);
  }
  close(ready[1]);
  char x;
  assert_int_equal(read(ready[0], &x, 1), 1);
  close(ready[0]);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ++faults_injected;
  auto t0 = Clock::now();
  assert_still_serving();  // also proves its 1 MiB budget came back (the limit is 1M)
  std::fprintf(stderr, "  client killed mid-transfer: next client served after %.3f s\n",
               seconds(t0));
}

// The reply to a client without outputs is a zero-length write to its first parameter region,
// which is not region 0 when an internal region comes first.
void internal_first_without_outputs(void **) {
  RawClient c(server.port);
  c.setup(64, protocol::mrsp::kInput, true);
  assert_int_equal(c.invoke(protocol::imm::host_request(3), std::chrono::seconds(10)), 0);  // noop
  assert_int_equal(c.invoke(protocol::imm::host_request(3), std::chrono::seconds(10)), 0);
}

// SIGTERM while an isolated kernel spins: the server abandons it and stops cleanly at once
// instead of waiting out --kernel-timeout.
void stop_during_endless_kernel(void **) {
  test_server s;
  const char *args[] = {"--kernel", std::getenv("NAA_TEST_KERNEL_PLUGIN"), "--kernel-timeout", "60",
                        nullptr};
  assert_int_equal(test_server_start(&s, args), 0);
  RawClient c(s.port);
  c.setup(64);
  assert_int_equal(c.invoke(protocol::imm::host_request(kFnSpin), std::chrono::milliseconds(300)),
                   -1);
  auto t0 = Clock::now();
  ++faults_injected;
  assert_int_equal(test_server_stop(&s), 0);  // a clean exit, not the fixture's SIGKILL after 10 s
  double took = seconds(t0);
  std::fprintf(stderr, "  SIGTERM during an endless kernel: server stopped after %.3f s\n", took);
  assert_true(took < 5);
}

// --isolate=all: built-in kernels run in the worker too, on the same shared regions.
void builtin_kernels_isolated(void **) {
  test_server isolated;
  const char *args[] = {"--isolate", "all", nullptr};
  assert_int_equal(test_server_start(&isolated, args), 0);
  RawClient c(isolated.port);
  c.setup(4096);
  for (int round = 1; round <= 3; ++round) {
    assert_int_equal(c.invoke(protocol::imm::host_request(kFnAdd1), std::chrono::seconds(10)), 0);
    for (uint8_t b : c.region_) assert_int_equal(b, round);
  }
  assert_int_equal(c.invoke(protocol::imm::host_request(99), std::chrono::seconds(10)),
                   NAA_KERNEL_RC_UNKNOWN_FUNCTION);
  assert_int_equal(test_server_stop(&isolated), 0);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::strcmp(argv[1], "--doomed-client") == 0)
    doomed_client(std::atoi(argv[2]), std::atoi(argv[3]));
  const CMUnitTest tests[] = {
      cmocka_unit_test(silent_client_dropped),
      cmocka_unit_test(malformed_mrsp_matrix),
      cmocka_unit_test(invocation_matrix),
      cmocka_unit_test(client_killed_mid_transfer),
      cmocka_unit_test(builtin_kernels_isolated),
      cmocka_unit_test(internal_first_without_outputs),
      cmocka_unit_test(stop_during_endless_kernel),
  };
  return cmocka_run_group_tests(tests, start, stop);
}
